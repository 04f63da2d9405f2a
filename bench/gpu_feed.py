#!/usr/bin/env python3
"""GPU feed benchmark (issue 20 item 4, "gpu_feed"): a real training loop — torchvision
ResNet-50 (or --model resnet18; several: --model resnet50,resnet18), bf16 autocast,
channels_last, batch 256 — fed by silo.torch.ShardDataset from a local Silo (one
`silod --role all` started here), JPEGs decoded on the GPU (torchvision.io.decode_jpeg,
device="cuda", a batched list decode where torchvision has it) with random-resized-crop
and flip on the GPU, on decode threads with CUDA streams of their own, fed by DataLoader
workers that pack each batch into one pinned tensor. Compared with the same loop on
synthetic GPU tensors and with the same pipeline reading the same shards from local
files. Reports images/s, the ratios and GPU utilisation (pynvml, else nvidia-smi).

Makes its own dataset (PIL-encoded JPEGs of ~--image-kb KB in --shard-mb tar shards,
reused when --data holds one) and starts/stops silod itself (--silod PATH; its shared
libraries from --lib-dir or beside it), so one command runs it all on a machine with
PyTorch 2.x and torchvision and no network:

  bench/gpu_feed.py --silod bundle/silod [--model resnet50,resnet18] [--images 30000]

--smoke: CPU only, a tiny model, small images, a few steps (CI; seconds).
Results: a table, and JSON in bench/results/ (or --out).
"""

import argparse
import datetime
import io
import json
import os
import platform
import queue
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

import silo  # noqa: E402

STALL_S = 120  # --stall-s
ACCESS_KEY = "gpu-feed-admin"
SECRET_KEY = "gpu-feed-secret-key-0123456789"


def log(*a):
    print("[gpu_feed %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


# -- the dataset ------------------------------------------------------------------------

def _jpeg(args):
    index, width, height, noise, quality = args
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(index)
    small = rng.integers(0, 256, (height // 16 + 1, width // 16 + 1, 3), dtype=np.uint8)
    base = np.asarray(Image.fromarray(small).resize((width, height), Image.BICUBIC), dtype=np.int16)
    pixels = np.clip(base + rng.integers(-noise, noise + 1, base.shape), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=quality)
    return out.getvalue()


def make_dataset(directory, images, image_kb, shard_mb, width, height, classes=1000):
    """JPEG shards train-NNNNNN.tar (KEY.jpg, KEY.cls) of about image_kb KB per image."""
    done = os.path.join(directory, "done.json")
    if os.path.exists(done):
        meta = json.load(open(done))
        if meta.get("images") == images and meta.get("image_kb") == image_kb and \
                meta.get("size") == [width, height]:
            log("reusing the dataset in %s" % directory)
            return meta
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    # Calibrate the noise so that an image is about image_kb KB.
    lo, hi = 0, 128
    for _ in range(8):
        mid = (lo + hi) // 2
        size = sum(len(_jpeg((i, width, height, mid, 90))) for i in range(3)) / 3
        if size < image_kb * 1000:
            lo = mid
        else:
            hi = mid
    noise = max(1, lo)
    log("making %d JPEGs of %dx%d (noise %d) in %s" % (images, width, height, noise, directory))
    import multiprocessing

    names, shard, written, total = [], None, 0, 0
    limit = shard_mb << 20
    with multiprocessing.Pool(max(1, (os.cpu_count() or 2) - 1)) as pool:
        work = ((i, width, height, noise, 90) for i in range(images))
        for i, jpg in enumerate(pool.imap(_jpeg, work, chunksize=64)):
            if shard is None or written + len(jpg) > limit:
                if shard is not None:
                    shard.close()
                names.append("train-%06d.tar" % len(names))
                shard = tarfile.open(os.path.join(directory, names[-1]), "w", format=tarfile.USTAR_FORMAT)
                written = 0
            for ext, data in (("jpg", jpg), ("cls", str(i % classes).encode())):
                info = tarfile.TarInfo("%08d.%s" % (i, ext))
                info.size = len(data)
                shard.addfile(info, io.BytesIO(data))
                written += len(data) + 1024
            total += len(jpg)
    shard.close()
    meta = {"images": images, "image_kb": image_kb, "size": [width, height], "shards": names,
            "mean_jpeg_bytes": total / images}
    json.dump(meta, open(done, "w"))
    return meta


# -- silod ------------------------------------------------------------------------------

class Silod:
    """One `silod --role all` on 127.0.0.1 (a free port), data under `directory`."""

    def __init__(self, binary, directory, lib_dir=None):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        ready = os.path.join(directory, "ready.json")
        if os.path.exists(ready):
            os.remove(ready)
        env = dict(os.environ, SILO_ACCESS_KEY=ACCESS_KEY, SILO_SECRET_KEY=SECRET_KEY)
        libs = lib_dir or os.path.dirname(os.path.abspath(binary))
        env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        self.log_path = os.path.join(directory, "silod.log")
        self.proc = subprocess.Popen(
            [binary, "--role", "all", "--id", "node1", "--port", "0", "--host", "127.0.0.1",
             "--data-dir", os.path.join(directory, "state"), "--ready-file", ready],
            env=env, stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.time() + 60
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if self.proc.poll() is not None or time.time() > deadline:
                tail = open(self.log_path, errors="replace").read()[-2000:]
                self.stop()
                raise RuntimeError("silod did not start (log %s):\n%s" % (self.log_path, tail))
            time.sleep(0.1)
        time.sleep(0.2)
        port = json.load(open(ready))["port"]
        self.url = "http://127.0.0.1:%d" % port
        client = silo.Client(self.url, ACCESS_KEY, SECRET_KEY, config=None)
        while not client.health():
            if time.time() > deadline:
                raise RuntimeError("silod at %s not healthy" % self.url)
            time.sleep(0.1)
        self.pid = self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def cpu_seconds(self):
        try:
            f = open("/proc/%d/stat" % self.pid).read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0


# -- the pipeline ---------------------------------------------------------------------------

def pack(samples):
    """DataLoader collate (runs in the workers): a batch as one uint8 tensor of the JPEG
    bytes, their offsets and the labels, so the main process handles three tensors, not
    256 samples."""
    import torch

    sizes = [len(s["jpg"]) for s in samples]
    data = torch.empty(sum(sizes), dtype=torch.uint8)
    view = memoryview(data.numpy())
    pos = 0
    for s, n in zip(samples, sizes):
        view[pos:pos + n] = s["jpg"]
        pos += n
    offsets = torch.tensor([0] + sizes, dtype=torch.int64).cumsum(0)
    labels = torch.tensor([int(s["cls"]) for s in samples], dtype=torch.int64)
    return data, offsets, labels


def random_resized_crop_flip(images, size, device, gen):
    """RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)) + horizontal flip, on
    `device`, batched (torchvision.ops.roi_align) when the images share a shape."""
    import math

    import torch
    from torchvision.ops import roi_align

    n = len(images)
    hs = torch.tensor([im.shape[-2] for im in images], dtype=torch.float32, device=device)
    ws = torch.tensor([im.shape[-1] for im in images], dtype=torch.float32, device=device)
    area = hs * ws * torch.empty(n, device=device).uniform_(0.08, 1.0, generator=gen)
    log_ratio = torch.empty(n, device=device).uniform_(math.log(3 / 4), math.log(4 / 3), generator=gen)
    ratio = torch.exp(log_ratio)
    cw = torch.sqrt(area * ratio).clamp(max=ws).clamp(min=1)
    ch = torch.sqrt(area / ratio).clamp(max=hs).clamp(min=1)
    x0 = torch.rand(n, device=device, generator=gen) * (ws - cw)
    y0 = torch.rand(n, device=device, generator=gen) * (hs - ch)
    if all(im.shape == images[0].shape for im in images):
        x = torch.stack(images).float()
        boxes = torch.stack([torch.arange(n, device=device, dtype=torch.float32), x0, y0, x0 + cw, y0 + ch], 1)
        out = roi_align(x, boxes, output_size=(size, size), spatial_scale=1.0, sampling_ratio=2, aligned=True)
    else:
        outs = []
        for i, im in enumerate(images):
            box = torch.stack([torch.zeros((), device=device), x0[i], y0[i], x0[i] + cw[i], y0[i] + ch[i]])[None]
            outs.append(roi_align(im[None].float(), box, output_size=(size, size), spatial_scale=1.0,
                                  sampling_ratio=2, aligned=True))
        out = torch.cat(outs)
    flip = torch.rand(n, device=device, generator=gen) < 0.5
    out = torch.where(flip[:, None, None, None], out.flip(3), out)
    mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1) * 255
    return ((out - mean) / std).contiguous(memory_format=torch.channels_last)


def decode_batch(data, offsets, device):
    import torch
    import torchvision
    from torchvision.io import decode_jpeg

    parts = [data[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    if device.type == "cuda":
        try:
            return decode_jpeg(parts, device=device)  # torchvision >= 0.19: one batched call
        except (TypeError, RuntimeError):
            return [decode_jpeg(p, device=device) for p in parts]
    del torchvision
    return [decode_jpeg(p) for p in parts]


class Feeder:
    """Batches from `batches` (an iterator of packed batches) decoded and augmented on
    `threads` threads, each with a CUDA stream of its own, `depth` batches ahead."""

    def __init__(self, batches, device, size, threads=2, depth=4):
        import torch

        self.device = device
        self.size = size
        self._src = batches
        self._src_lock = threading.Lock()
        self._q = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]
        self._live = threads
        self._live_lock = threading.Lock()
        self.torch = torch
        for t in self._threads:
            t.start()

    def _run(self, i):
        torch = self.torch
        stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        gen = torch.Generator(device=self.device)
        gen.manual_seed(1234 + i)
        try:
            while not self._stop.is_set():
                with self._src_lock:
                    item = next(self._src, None)
                if item is None:
                    break
                data, offsets, labels = item
                if stream is not None:
                    with torch.cuda.stream(stream):
                        images = decode_batch(data, offsets, self.device)
                        x = random_resized_crop_flip(images, self.size, self.device, gen)
                        y = labels.to(self.device, non_blocking=True)
                        ev = torch.cuda.Event()
                        ev.record(stream)
                else:
                    images = decode_batch(data, offsets, self.device)
                    x = random_resized_crop_flip(images, self.size, self.device, gen)
                    y, ev = labels, None
                self._q.put((x, y, ev))
        except BaseException as e:  # noqa: BLE001 - handed to the training loop
            self._q.put(e)
        finally:
            with self._live_lock:
                self._live -= 1
                if self._live == 0:
                    self._q.put(None)

    def __iter__(self):
        torch = self.torch
        while True:
            item = self._q.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            x, y, ev = item
            if ev is not None:
                cur = torch.cuda.current_stream(self.device)
                cur.wait_event(ev)
                x.record_stream(cur)
                y.record_stream(cur)
            yield x, y

    def close(self):
        self._stop.set()
        while True:
            try:
                self._q.get_nowait()
            except queue.Empty:
                break


def loader_batches(make_ds, batch, workers, pin):
    """Packed batches over as many epochs as it takes."""
    import torch

    epoch = 0
    while True:
        ds = make_ds()
        ds.set_epoch(epoch)
        loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=pack,
                                             pin_memory=pin, drop_last=True, prefetch_factor=4 if workers else 2)
        for b in loader:
            yield b
        epoch += 1


class Utilisation:
    """GPU utilisation sampled every 100 ms (pynvml, else nvidia-smi) while running."""

    def __init__(self, index=0):
        self.samples = []
        self._stop = threading.Event()
        self._proc = None
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)

            def sample():
                while not self._stop.wait(0.1):
                    self.samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            self.source = "pynvml"
            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()
        except Exception:  # noqa: BLE001
            self._thread = None
            smi = shutil.which("nvidia-smi")
            self.source = "nvidia-smi" if smi else "none"
            if smi:
                self._proc = subprocess.Popen([smi, "-i", str(index), "--query-gpu=utilization.gpu",
                                               "--format=csv,noheader,nounits", "-lms", "100"],
                                              stdout=subprocess.PIPE, text=True)

                def read():
                    for line in self._proc.stdout:
                        if self._stop.is_set():
                            break
                        try:
                            self.samples.append(float(line.strip()))
                        except ValueError:
                            pass
                self._thread = threading.Thread(target=read, daemon=True)
                self._thread.start()

    def stop(self):
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
        return sum(self.samples) / len(self.samples) if self.samples else None


def tiny_model(classes):
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))


def train(model_name, feed, device, batch, size, warmup, steps, classes):
    """Runs warmup + steps training steps on `feed` (an iterator of (x, y)); images/s of
    the measured steps and the GPU utilisation meanwhile."""
    import torch
    import torchvision

    if model_name == "tiny":
        model = tiny_model(classes)
    else:
        model = getattr(torchvision.models, model_name)(num_classes=classes)
    model = model.to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    it = iter(feed)
    util = None
    t0 = None
    import faulthandler

    for step in range(warmup + steps):
        # A step that waits longer than this prints every thread's stack and exits.
        faulthandler.dump_traceback_later(STALL_S, exit=True)
        if step == warmup:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            util = Utilisation(device.index or 0) if device.type == "cuda" else None
            t0 = time.perf_counter()
        x, y = next(it)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    faulthandler.cancel_dump_traceback_later()
    dt = time.perf_counter() - t0
    gpu = util.stop() if util is not None else None
    return {"images_per_s": steps * batch / dt, "seconds": dt, "steps": steps,
            "gpu_util_pct": gpu, "gpu_util_source": util.source if util else None, "loss": float(loss.detach())}


def synthetic(device, batch, size, classes):
    import torch

    x = torch.randn(batch, 3, size, size, device=device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, classes, (batch,), device=device)
    while True:
        yield x, y


def find_silod():
    for d in (os.environ.get("SILO_BIN_DIR"), os.path.join(REPO, "build/ci/cmd/silod"),
              os.path.join(REPO, "build/release/cmd/silod")):
        if d and os.access(os.path.join(d, "silod"), os.X_OK):
            return os.path.join(d, "silod")
    return None


def commit():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--silod", default=None, help="silod binary (default: SILO_BIN_DIR, build/ci, build/release)")
    ap.add_argument("--lib-dir", default=None, help="silod's shared libraries (default: beside the binary)")
    ap.add_argument("--work", default=None, help="working directory (dataset, silod data); default a temp dir")
    ap.add_argument("--model", default="resnet50", help="resnet50, resnet18, ... comma-separated")
    ap.add_argument("--modes", default="synthetic,silo,files")
    ap.add_argument("--images", type=int, default=30000)
    ap.add_argument("--image-kb", type=int, default=110)
    ap.add_argument("--width", type=int, default=500)
    ap.add_argument("--height", type=int, default=375)
    ap.add_argument("--shard-mb", type=int, default=256)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=12, help="DataLoader workers")
    ap.add_argument("--decode-threads", type=int, default=1, help="more than 1 hung on an H200 (torch 2.11, torchvision 0.26); cause not found")
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--stall-s", type=float, default=120, help="a step slower than this dumps the "
                    "threads' stacks and exits")
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny model and images, seconds (CI)")
    ap.add_argument("--out", default=None, help="JSON results file")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    import torch

    global STALL_S
    STALL_S = args.stall_s
    classes = 1000
    if args.smoke:
        args.model, args.images, args.image_kb, args.width, args.height = "tiny", 96, 4, 96, 72
        args.shard_mb, args.batch, args.size, args.workers = 1, 16, 32, 2
        args.warmup, args.steps, args.decode_threads = 1, 3, 1
        classes = 10
        device = torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            sys.exit("gpu_feed: no CUDA device (use --smoke for the CPU smoke test)")
        device = torch.device("cuda", 0)
        torch.backends.cudnn.benchmark = True
    work = args.work or tempfile.mkdtemp(prefix="silo-gpu-feed-")
    data_dir = os.path.join(work, "shards")
    meta = make_dataset(data_dir, args.images, args.image_kb, args.shard_mb, args.width, args.height, classes)
    modes = args.modes.split(",")
    server = None
    results = {"bench": "gpu_feed", "commit": commit(), "date": datetime.datetime.now().isoformat(),
               "machine": {"nproc": os.cpu_count(), "platform": platform.platform(),
                           "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
                           "torch": torch.__version__},
               "args": vars(args), "dataset": {k: v for k, v in meta.items() if k != "shards"}, "runs": []}
    try:
        import torchvision

        results["machine"]["torchvision"] = torchvision.__version__
        if "silo" in modes:
            binary = args.silod or find_silod()
            if binary is None:
                sys.exit("gpu_feed: no silod binary (--silod PATH)")
            server = Silod(binary, os.path.join(work, "silod"), args.lib_dir)
            client = silo.Client(server.url, ACCESS_KEY, SECRET_KEY, config=None)
            try:
                client.create_bucket("gpu-feed", {"durability": "page_cache"})
            except silo.AlreadyExists:
                pass
            log("uploading %d shards to %s" % (len(meta["shards"]), server.url))
            for n in meta["shards"]:
                with open(os.path.join(data_dir, n), "rb") as f:
                    client.put("gpu-feed", n, f.read())
        for n in meta["shards"]:  # page cache warm for both
            with open(os.path.join(data_dir, n), "rb") as f:
                while f.read(1 << 24):
                    pass
        import silo.torch as st

        pin = device.type == "cuda"
        for model_name in args.model.split(","):
            for mode in modes:
                log("%s: %s" % (model_name, mode))
                feeder = None
                cpu0 = server.cpu_seconds() if server else 0.0
                if mode == "synthetic":
                    feed = synthetic(device, args.batch, args.size, classes)
                else:
                    if mode == "silo":
                        make = lambda: st.ShardDataset(client, "gpu-feed", prefix="train-", seed=0,  # noqa: E731
                                                       shuffle_buffer=256)
                    else:
                        make = lambda: st.ShardDataset(None, data_dir, prefix="train-", seed=0,  # noqa: E731
                                                       shuffle_buffer=256)
                    feeder = Feeder(loader_batches(make, args.batch, args.workers, pin), device, args.size,
                                    args.decode_threads)
                    feed = feeder
                try:
                    r = train(model_name, feed, device, args.batch, args.size, args.warmup, args.steps, classes)
                finally:
                    if feeder is not None:
                        feeder.close()
                r.update(model=model_name, mode=mode)
                if server and mode == "silo":
                    r["silod_cpu_s"] = server.cpu_seconds() - cpu0
                results["runs"].append(r)
                log(json.dumps(r))
        print("\n%-10s %-10s %10s %8s %9s %9s" % ("model", "feed", "images/s", "GPU %", "vs synth", "vs files"))
        for r in results["runs"]:
            same = {x["mode"]: x for x in results["runs"] if x["model"] == r["model"]}
            syn = same.get("synthetic")
            fil = same.get("files")
            r["ratio_to_synthetic"] = r["images_per_s"] / syn["images_per_s"] if syn else None
            r["ratio_to_files"] = r["images_per_s"] / fil["images_per_s"] if fil else None
            print("%-10s %-10s %10.0f %8s %9s %9s" % (
                r["model"], r["mode"], r["images_per_s"],
                "%.0f" % r["gpu_util_pct"] if r.get("gpu_util_pct") is not None else "-",
                "%.2f" % r["ratio_to_synthetic"] if r["ratio_to_synthetic"] else "-",
                "%.2f" % r["ratio_to_files"] if r["ratio_to_files"] else "-"))
        out = args.out
        if out is None:
            d = work if args.smoke else os.path.join(REPO, "bench", "results")
            os.makedirs(d, exist_ok=True)
            out = os.path.join(d, "gpu_feed-%s-%s.json" % (datetime.datetime.now().strftime("%Y%m%d-%H%M%S"),
                                                           results["commit"]))
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
        print("results: %s" % out)
    finally:
        if server is not None:
            server.stop()
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
