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
                meta.get("size") == [width, height] and meta.get("shard_mb") == shard_mb:
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
    limit = int(shard_mb * (1 << 20))
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
    meta = {"images": images, "image_kb": image_kb, "size": [width, height], "shard_mb": shard_mb, "shards": names,
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

def crop_params(h, w, rnd):
    """RandomResizedCrop(scale=(0.08, 1), ratio=(3/4, 4/3)) box (y0, x0, ch, cw) for an h x w
    image, drawn from `rnd` (random.Random); the GPU path draws the same distribution."""
    import math

    area = h * w * rnd.uniform(0.08, 1.0)
    ratio = math.exp(rnd.uniform(math.log(3 / 4), math.log(4 / 3)))
    cw = max(1, min(w, int(round(math.sqrt(area * ratio)))))
    ch = max(1, min(h, int(round(math.sqrt(area / ratio)))))
    return rnd.randint(0, h - ch), rnd.randint(0, w - cw), ch, cw


class Pack:
    """DataLoader collate (runs in the workers). The first round(cpu_fraction * n) images
    of a batch are decoded, cropped and flipped here, on the worker's CPU (PIL), into one
    uint8 [k, 3, size, size] tensor (channels_last); the rest
    go out as one uint8 tensor of their JPEG bytes and its offsets, for the GPU's decoder.
    So the main process handles four tensors a batch, never single samples, and the CPU
    and the GPU's JPEG engine decode side by side."""

    def __init__(self, cpu_fraction, size):
        self.cpu_fraction = cpu_fraction
        self.size = size
        self._rnd = None

    def __call__(self, samples):
        import numpy as np
        import torch
        from PIL import Image

        if self._rnd is None:  # one stream of crops per worker
            self._rnd = random.Random(torch.initial_seed())
        k = int(round(len(samples) * self.cpu_fraction))
        cpu = np.empty((k, self.size, self.size, 3), dtype=np.uint8)
        for i, s in enumerate(samples[:k]):
            # PIL (libjpeg-turbo) decodes in about half the time of torchvision's CPU
            # decode_jpeg, and resizes the crop box straight from the decoded image.
            img = Image.open(io.BytesIO(s["jpg"])).convert("RGB")
            y0, x0, ch, cw = crop_params(img.height, img.width, self._rnd)
            img = img.resize((self.size, self.size), Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))
            if self._rnd.random() < 0.5:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
            cpu[i] = np.asarray(img)
        cpu = torch.from_numpy(cpu).permute(0, 3, 1, 2)  # NCHW view of NHWC memory: channels_last
        rest = samples[k:]
        sizes = [len(s["jpg"]) for s in rest]
        data = torch.empty(sum(sizes), dtype=torch.uint8)
        view = memoryview(data.numpy())
        pos = 0
        for s, n in zip(rest, sizes):
            view[pos:pos + n] = s["jpg"]
            pos += n
        offsets = torch.tensor([0] + sizes, dtype=torch.int64).cumsum(0)
        labels = torch.tensor([int(s["cls"]) for s in samples], dtype=torch.int64)
        return cpu, data, offsets, labels


def random_resized_crop_flip(images, size, device, gen, dtype):
    """RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3)) + horizontal flip, on
    `device`, batched (torchvision.ops.roi_align) when the images share a shape; pixel
    values 0..255 in `dtype`."""
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
    boxes = torch.stack([torch.arange(n, device=device, dtype=torch.float32), x0, y0, x0 + cw, y0 + ch], 1)
    if all(im.shape == images[0].shape for im in images):
        x = torch.stack(images).to(dtype)
        out = roi_align(x, boxes.to(dtype), output_size=(size, size), spatial_scale=1.0, sampling_ratio=2,
                        aligned=True)
    else:
        zero = torch.zeros(1, device=device)
        out = torch.cat([roi_align(im[None].to(dtype), torch.cat([zero, boxes[i, 1:]])[None].to(dtype),
                                   output_size=(size, size), spatial_scale=1.0, sampling_ratio=2, aligned=True)
                         for i, im in enumerate(images)])
    flip = torch.rand(n, device=device, generator=gen) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def normalize(x):
    """ImageNet mean/std on a batch of 0..255 pixels, channels_last."""
    import torch

    mean = torch.tensor([0.485, 0.456, 0.406], device=x.device, dtype=x.dtype).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=x.device, dtype=x.dtype).view(1, 3, 1, 1) * 255
    return ((x - mean) / std).contiguous(memory_format=torch.channels_last)


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


class Decode:
    """How a batch is decoded (--decode): `gpu` (nvJPEG, the crop in half precision on a
    high-priority stream), `gpu:normal` (the first pipeline: normal priority, float32),
    `cpu` (everything in the DataLoader workers) or `mixed:F` (a fraction F of each batch
    in the workers, the rest on the GPU)."""

    def __init__(self, spec):
        self.spec = spec
        kind, _, arg = spec.partition(":")
        self.priority, self.half, self.cpu_fraction = -1, True, 0.0
        if kind == "gpu" and arg in ("", "normal"):
            if arg == "normal":
                self.priority, self.half = 0, False
        elif kind == "cpu" and not arg:
            self.cpu_fraction = 1.0
        elif kind == "mixed" and arg:
            self.cpu_fraction = float(arg)
            if not 0 < self.cpu_fraction < 1:
                raise ValueError("--decode %s: the fraction must lie between 0 and 1" % spec)
        else:
            raise ValueError("--decode %s: expected gpu, gpu:normal, cpu or mixed:FRACTION" % spec)


class Feeder:
    """Batches from `batches` (an iterator of Pack's batches) finished (the GPU's share
    decoded and cropped, the CPU's share copied up, all normalized) on `threads` threads,
    each with a CUDA stream of its own, `depth` batches ahead."""

    def __init__(self, batches, device, size, decode, threads=1, depth=4):
        import torch

        self.device = device
        self.size = size
        self.decode = decode
        self.dtype = torch.float16 if decode.half and device.type == "cuda" else torch.float32
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

    def _finish(self, cpu, data, offsets, gen):
        torch = self.torch
        parts = []
        if len(cpu):
            parts.append(cpu.to(self.device, non_blocking=True).to(self.dtype))
        if len(offsets) > 1:
            images = decode_batch(data, offsets, self.device)
            parts.append(random_resized_crop_flip(images, self.size, self.device, gen, self.dtype))
        return normalize(parts[0] if len(parts) == 1 else torch.cat(parts))

    def _run(self, i):
        torch = self.torch
        stream = None
        if self.device.type == "cuda":
            stream = torch.cuda.Stream(self.device, priority=self.decode.priority)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(1234 + i)
        try:
            while not self._stop.is_set():
                with self._src_lock:
                    item = next(self._src, None)
                if item is None:
                    break
                cpu, data, offsets, labels = item
                if stream is not None:
                    with torch.cuda.stream(stream):
                        x = self._finish(cpu, data, offsets, gen)
                        y = labels.to(self.device, non_blocking=True)
                        ev = torch.cuda.Event()
                        ev.record(stream)
                else:
                    x, y, ev = self._finish(cpu, data, offsets, gen), labels, None
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
        """Stops the threads, then the batches' source (its DataLoader workers go with it)."""
        self._stop.set()
        for t in self._threads:
            while t.is_alive():
                try:
                    self._q.get(timeout=0.1)
                except queue.Empty:
                    pass
        with self._src_lock:
            self._src.close()


def loader_batches(make_ds, batch, workers, pin, collate):
    """Packed batches over as many epochs as it takes."""
    import torch

    epoch = 0
    while True:
        ds = make_ds()
        ds.set_epoch(epoch)
        loader = torch.utils.data.DataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=collate,
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
    the measured steps and the GPU utilisation meanwhile. Model "none" only takes the
    batches: what the feed can deliver with the GPU to itself."""
    import torch
    import torchvision

    model = loss = None
    if model_name == "tiny":
        model = tiny_model(classes)
    elif model_name != "none":
        model = getattr(torchvision.models, model_name)(num_classes=classes)
    if model is not None:
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
        if model is None:
            continue
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
            "gpu_util_pct": gpu, "gpu_util_source": util.source if util else None, "loss": float(loss.detach()) if loss is not None else None}


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
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
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
    ap.add_argument("--shard-mb", type=float, default=64)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=12, help="DataLoader workers")
    ap.add_argument("--decode", default="gpu,mixed:0.5,cpu", help="decode variants to run, comma-separated: "
                    "gpu, gpu:normal (the first pipeline), cpu, mixed:FRACTION (see Decode)")
    ap.add_argument("--feed-only", action="store_true", help="also measure each decode variant's feed "
                    "from local files with no training (model 'none')")
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
        args.shard_mb, args.batch, args.size, args.workers = 0.1, 16, 32, 2
        args.warmup, args.steps, args.decode_threads = 1, 3, 1
        args.decode = ",".join(d for d in args.decode.split(",") if d != "gpu:normal") or "gpu"
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
    # Every worker needs shards of its own, and the measured steps must not cross an epoch
    # (a new epoch starts new DataLoader workers: a stall that is not the loader's pace).
    if len(meta["shards"]) < args.workers:
        sys.exit("gpu_feed: %d shards for %d workers: use a smaller --shard-mb or more --images"
                 % (len(meta["shards"]), args.workers))
    if args.warmup + args.steps > args.images // args.batch - args.workers:
        sys.exit("gpu_feed: %d steps cross an epoch of %d images: use more --images"
                 % (args.warmup + args.steps, args.images))
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
        decodes = [Decode(d) for d in args.decode.split(",")]
        plan = []
        for model_name in args.model.split(","):
            plan += [(model_name, mode, None if mode == "synthetic" else d)
                     for mode in modes for d in ([None] if mode == "synthetic" else decodes)]
            if args.feed_only and model_name == args.model.split(",")[0]:
                plan += [("none", "files", d) for d in decodes]
        out = args.out or os.path.join(work if args.smoke else os.path.join(REPO, "bench", "results"),
                                       "gpu_feed-%s-%s.json" % (datetime.datetime.now().strftime("%Y%m%d-%H%M%S"),
                                                                results["commit"]))
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        for model_name, mode, dec in plan:
            log("%s: %s%s" % (model_name, mode, " (%s)" % dec.spec if dec else ""))
            feeder = None
            cpu0 = server.cpu_seconds() if server else 0.0
            r = {"model": model_name, "mode": mode, "decode": dec.spec if dec else None}
            try:
                if mode == "synthetic":
                    feed = synthetic(device, args.batch, args.size, classes)
                else:
                    if mode == "silo":
                        make = lambda: st.ShardDataset(client, "gpu-feed", prefix="train-", seed=0,  # noqa: E731
                                                       shuffle_buffer=256)
                    else:
                        make = lambda: st.ShardDataset(None, data_dir, prefix="train-", seed=0,  # noqa: E731
                                                       shuffle_buffer=256)
                    batches = loader_batches(make, args.batch, args.workers, pin, Pack(dec.cpu_fraction, args.size))
                    feeder = Feeder(batches, device, args.size, dec, args.decode_threads)
                    feed = feeder
                try:
                    r.update(train(model_name, feed, device, args.batch, args.size, args.warmup, args.steps,
                                   classes))
                finally:
                    if feeder is not None:
                        feeder.close()
            except Exception as e:  # noqa: BLE001 - one variant failing leaves the others' figures
                if args.smoke:
                    raise
                r["error"] = "%s: %s" % (type(e).__name__, e)
            if server and mode == "silo":
                r["silod_cpu_s"] = server.cpu_seconds() - cpu0
            results["runs"].append(r)
            log(json.dumps(r))
            with open(out + ".part", "w") as f:  # what a run cut short still leaves
                json.dump(results, f, indent=1)
        print("\n%-10s %-10s %-11s %10s %8s %9s %9s" % ("model", "feed", "decode", "images/s", "GPU %",
                                                        "vs synth", "vs files"))
        for r in results["runs"]:
            if "images_per_s" not in r:
                print("%-10s %-10s %-11s %s" % (r["model"], r["mode"], r["decode"] or "-", r.get("error")))
                continue
            same = [x for x in results["runs"] if x["model"] == r["model"] and "images_per_s" in x]
            syn = next((x for x in same if x["mode"] == "synthetic"), None)
            fil = next((x for x in same if x["mode"] == "files" and x["decode"] == r["decode"]), None)
            r["ratio_to_synthetic"] = r["images_per_s"] / syn["images_per_s"] if syn else None
            r["ratio_to_files"] = r["images_per_s"] / fil["images_per_s"] if fil else None
            print("%-10s %-10s %-11s %10.0f %8s %9s %9s" % (
                r["model"], r["mode"], r["decode"] or "-", r["images_per_s"],
                "%.0f" % r["gpu_util_pct"] if r.get("gpu_util_pct") is not None else "-",
                "%.2f" % r["ratio_to_synthetic"] if r["ratio_to_synthetic"] else "-",
                "%.2f" % r["ratio_to_files"] if r["ratio_to_files"] else "-"))
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
        os.remove(out + ".part")
        print("results: %s" % out)
    finally:
        if server is not None:
            server.stop()
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
