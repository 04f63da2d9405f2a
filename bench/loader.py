#!/usr/bin/python3
"""Python loader benchmark (issue 20 item 4, "loader"): samples/s and MB/s of
silo.torch.ShardDataset with 1, 4 and 8 DataLoader workers, direct (to the owning
targets) and through the proxy, against the same code reading the same shards from local
files, and against a plain boto3 loop (S3 API of the same proxy; run in the python3 that
has boto3); then SampleDataset random batches (one batch GET each) against one GET per
sample. Prints a table and writes JSON to bench/results/ (smoke runs: to the work dir).

Starts its own cluster with deploy/local/cluster.sh (SILO_BIN_DIR, else build/ci or
build/release), or uses --endpoint. Run with Debian's /usr/bin/python3 (torch 1.13) or any
python with torch, after `pip install ./python` or from the tree (it adds python/ to the
path).

  bench/loader.py [--smoke] [--targets N] [--shards N] [--samples N] [--sample-kb K]
                  [--workers 1,4,8] [--dir DIR] [--keep] [--endpoint URL]
"""

import argparse
import datetime
import io
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

import silo  # noqa: E402

ACCESS_KEY = "bench-admin"
SECRET_KEY = "bench-secret-key-0123456789"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def make_shards(directory, count, samples, size, seed, prefix):
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(seed)
    names = []
    n = 0
    for s in range(count):
        name = "%s%06d.tar" % (prefix, s)
        names.append(name)
        with tarfile.open(os.path.join(directory, name), "w", format=tarfile.USTAR_FORMAT) as t:
            for _ in range(samples):
                for ext, data in (("bin", rng.randbytes(size)), ("cls", str(n % 1000).encode())):
                    info = tarfile.TarInfo("%08d.%s" % (n, ext))
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
                n += 1
    return names


def commit():
    try:
        c = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return c + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def run_shards(make_ds, workers, warm=True):
    import torch

    ds = make_ds()
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                         persistent_workers=False)
    n = nbytes = 0
    t0 = time.perf_counter()
    for s in loader:
        n += 1
        nbytes += len(s["bin"]) + len(s["cls"])
    dt = time.perf_counter() - t0
    return {"samples": n, "bytes": nbytes, "seconds": dt, "samples_per_s": n / dt,
            "mb_per_s": nbytes / dt / 1e6}


BOTO3_LOOP = r'''
import json, os, sys, time, multiprocessing
sys.path.insert(0, sys.argv[1])
import boto3, botocore.config
from silo.tar import TarReader, group_samples
endpoint, bucket, names, workers = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
def s3():
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=os.environ["AK"],
                        aws_secret_access_key=os.environ["SK"], region_name="us-east-1",
                        config=botocore.config.Config(s3={"addressing_style": "path"},
                                                      response_checksum_validation="when_required"))
def read(chunk):
    c = s3(); n = b = 0
    for name in chunk:
        body = c.get_object(Bucket=bucket, Key=name)["Body"]
        for smp in group_samples(((m.name, m.data) for m in TarReader(body.read, name)), name):
            n += 1; b += len(smp["bin"]) + len(smp["cls"])
    return n, b
chunks = [names[i::workers] for i in range(workers)]
t0 = time.perf_counter()
with multiprocessing.Pool(workers) as p:
    res = p.map(read, chunks)
dt = time.perf_counter() - t0
n = sum(r[0] for r in res); b = sum(r[1] for r in res)
print(json.dumps({"samples": n, "bytes": b, "seconds": dt, "samples_per_s": n / dt, "mb_per_s": b / dt / 1e6}))
'''


def run_boto3(endpoint, bucket, names, workers):
    py = shutil.which("python3")
    env = dict(os.environ, AK=ACCESS_KEY, SK=SECRET_KEY)
    out = subprocess.run([py, "-c", BOTO3_LOOP, os.path.join(REPO, "python"), endpoint, bucket,
                          json.dumps(names), str(workers)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_samples(client, bucket, prefix, batch, batches, workers, mode):
    import torch
    import silo.torch as st

    sd = st.SampleDataset(client, bucket, prefix=prefix, cache_dir=None)
    rng = random.Random(1)
    picks = [[rng.randrange(len(sd)) for _ in range(batch)] for _ in range(batches)]

    class Batches(torch.utils.data.Dataset):
        def __len__(self):
            return len(picks)

        def __getitem__(self, i):
            if mode == "batch":
                got = sd.fetch(picks[i])
            else:
                got = [sd[j] for j in picks[i]]
            return sum(len(s["bin"]) for s in got), len(got)

    loader = torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=workers)
    n = nbytes = 0
    t0 = time.perf_counter()
    for b, k in loader:
        n += k
        nbytes += b
    dt = time.perf_counter() - t0
    return {"samples": n, "bytes": nbytes, "seconds": dt, "samples_per_s": n / dt,
            "mb_per_s": nbytes / dt / 1e6, "batch": batch, "workers": workers}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="a few seconds on tiny data (CI)")
    ap.add_argument("--targets", type=int, default=1)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--samples", type=int, default=256, help="samples per shard")
    ap.add_argument("--sample-kb", type=int, default=100)
    ap.add_argument("--small-shards", type=int, default=16, help="shards of the SampleDataset part")
    ap.add_argument("--small-samples", type=int, default=1000)
    ap.add_argument("--small-kb", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--workers", default="1,4,8")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--endpoint", default=None, help="use this cluster instead of starting one "
                    "(keys from SILO_ACCESS_KEY/SILO_SECRET_KEY)")
    args = ap.parse_args()
    if args.smoke:
        args.shards, args.samples, args.sample_kb = 4, 20, 8
        args.small_shards, args.small_samples, args.batch, args.batches = 2, 50, 16, 4
        args.workers = "1,2"
    workers = [int(w) for w in args.workers.split(",")]
    work = args.dir or tempfile.mkdtemp(prefix="silo-loader-bench-")
    os.makedirs(work, exist_ok=True)
    cluster_dir = os.path.join(work, "cluster")
    env = dict(os.environ, SILO_ACCESS_KEY=ACCESS_KEY, SILO_SECRET_KEY=SECRET_KEY,
               SILO_DURABILITY="page_cache")
    started = False
    try:
        if args.endpoint:
            endpoint = args.endpoint
            client = silo.Client(endpoint)
        else:
            if "SILO_BIN_DIR" not in env:
                for preset in ("ci", "release"):
                    d = os.path.join(REPO, "build", preset, "cmd", "silod")
                    if os.access(os.path.join(d, "silod"), os.X_OK):
                        env["SILO_BIN_DIR"] = d
                        break
            log("starting 1 proxy + %d target(s) in %s" % (args.targets, cluster_dir))
            subprocess.run([os.path.join(REPO, "deploy/local/cluster.sh"), "up", "--proxies", "1",
                            "--targets", str(args.targets), "--base-port", "0", "--dir", cluster_dir],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            started = True
            status = json.loads(subprocess.run(
                [os.path.join(REPO, "deploy/local/cluster.sh"), "status", "--json", "--dir", cluster_dir],
                env=env, check=True, capture_output=True, text=True).stdout)
            endpoint = status["endpoint"]
            client = silo.Client(endpoint, ACCESS_KEY, SECRET_KEY, config=None)
        shard_dir = os.path.join(work, "shards")
        small_dir = os.path.join(work, "small")
        log("writing %d shards of %d x %d KiB samples, %d of %d x %d KiB" % (
            args.shards, args.samples, args.sample_kb, args.small_shards, args.small_samples, args.small_kb))
        names = make_shards(shard_dir, args.shards, args.samples, args.sample_kb << 10, 1, "big-")
        small = make_shards(small_dir, args.small_shards, args.small_samples, args.small_kb << 10, 2, "small-")
        for b in ("bench-big", "bench-small"):
            try:
                client.create_bucket(b)
            except silo.AlreadyExists:
                pass
        for d, b, ns in ((shard_dir, "bench-big", names), (small_dir, "bench-small", small)):
            for n in ns:
                with open(os.path.join(d, n), "rb") as f:
                    client.put(b, n, f.read())
        for n in names:  # local files: page cache warm, as Silo's are
            with open(os.path.join(shard_dir, n), "rb") as f:
                while f.read(1 << 22):
                    pass

        import silo.torch as st
        proxy = silo.Client(endpoint, client.access_key, client._secret_key, config=None, direct=False)
        rows = []

        def row(name, w, r, ref=None):
            r = dict(r, config=name, workers=w)
            if ref and "samples_per_s" in r:
                r["ratio_to_local_files"] = r["samples_per_s"] / ref["samples_per_s"]
            rows.append(r)
            log("%-34s w=%d %s" % (name, w, json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                                        for k, v in r.items() if k not in ("config", "workers")})))
            return r

        run_shards(lambda: st.ShardDataset(client, "bench-big", prefix="big-"), workers[0])  # warm
        for w in workers:
            ref = row("ShardDataset local files", w,
                      run_shards(lambda: st.ShardDataset(None, shard_dir, prefix="big-"), w))
            row("ShardDataset direct", w,
                run_shards(lambda: st.ShardDataset(client, "bench-big", prefix="big-"), w), ref)
            row("ShardDataset via proxy", w,
                run_shards(lambda: st.ShardDataset(proxy, "bench-big", prefix="big-"), w), ref)
            row("boto3 loop via proxy (S3 API)", w, run_boto3(endpoint, "bench-big", names, w), ref)
        sw = max(workers)
        per = row("SampleDataset one GET per sample", sw,
                  run_samples(client, "bench-small", "small-", args.batch, args.batches, sw, "single"))
        bat = row("SampleDataset batch GET", sw,
                  run_samples(client, "bench-small", "small-", args.batch, args.batches, sw, "batch"))
        bat["ratio_to_get_per_sample"] = bat["samples_per_s"] / per["samples_per_s"]

        print("\n%-34s %7s %12s %9s %9s" % ("loader", "workers", "samples/s", "MB/s", "ratio"))
        for r in rows:
            ratio = r.get("ratio_to_local_files", r.get("ratio_to_get_per_sample"))
            if "error" in r:
                print("%-34s %7d %s" % (r["config"], r["workers"], r["error"]))
                continue
            print("%-34s %7d %12.0f %9.1f %9s" % (r["config"], r["workers"], r["samples_per_s"],
                                                 r["mb_per_s"], "%.2fx" % ratio if ratio else "ref"))
        print("(ratio: ShardDataset rows and boto3 against local files at the same workers; "
              "batch GET against one GET per sample)")
        result = {"bench": "loader", "commit": commit(), "date": datetime.datetime.now().isoformat(),
                  "machine": {"nproc": os.cpu_count(), "platform": platform.platform(),
                              "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1)},
                  "args": vars(args), "rows": rows}
        out_dir = work if args.smoke else os.path.join(REPO, "bench", "results")
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "loader-%s-%s.json" % (
            datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), result["commit"]))
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print("results: %s" % path)
    finally:
        if started and not args.keep:
            subprocess.run([os.path.join(REPO, "deploy/local/cluster.sh"), "down", "--dir", cluster_dir],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
