#!/usr/bin/env bash
# F6 of issue #23: the memory slow writers hold. N clients (default 2,000) each open a PUT
# of 4 MiB through the proxy (S3, presigned) and trickle its body, one 1 KiB piece every
# second; after a while they all close. Every node's RSS is sampled before, at the peak
# while they trickle, and 10 s after they closed; then 64 fast 4 MiB PUTs check the
# buffers still grow for bodies that arrive quickly.
#
#   bench/slow_writers.sh [--writers N] [--seconds S] [lib.sh options: --smoke --keep ...]
#
# Rows: KiB of RSS per slow writer on the target (absolute target <= 128), MiB
# the process keeps 10 s after they closed, over its RSS before (<= 64), and MB/s of the
# fast PUTs afterwards (reference: the same PUTs before the slow writers came).
writers=2000 seconds=20 rest=()
while [ $# -gt 0 ]; do
  case $1 in
    --writers) writers=$2; shift 2;;
    --seconds) seconds=$2; shift 2;;
    *) rest+=("$1"); shift;;
  esac
done
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_start "${rest[@]}"
if [ $smoke = 1 ]; then writers=50 seconds=3; fi
ulimit -n $((writers * 2 + 1024)) 2>/dev/null || bench_die "cannot raise the open-file limit to $((writers * 2 + 1024))"

bench_cluster 1 1
bench_bucket slow fsync
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
target_rss() { rss_mb "$target_pids"; }

fast_puts() {  # MB/s of 64 x 4 MiB PUTs through the proxy, 8 connections
  bench_run "$work/fast-$1.json" put --bucket slow --objects 64 --size 4MiB -c 8 --prefix "fast-$1/" --path gateway
  json "$work/fast-$1.json" 'round(r["mb_per_s"], 1)'
}
fast_before=$(fast_puts before)
sleep 2
before=$(target_rss)

python3 - "$SILO_ENDPOINT" "$writers" "$seconds" "$work/peak" "$target_pids" <<'PY' || bench_die "the slow writers failed"
import os, socket, sys, time, threading, urllib.parse
import boto3, botocore.config
endpoint, writers, seconds, peak_file, pids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=os.environ["SILO_ACCESS_KEY"], aws_secret_access_key=os.environ["SILO_SECRET_KEY"],
                  config=botocore.config.Config(s3={"addressing_style": "path"}))
u = urllib.parse.urlsplit(endpoint)
size = 4 << 20
socks = []
for i in range(writers):
    url = urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={"Bucket": "slow", "Key": f"slow-{i:05}"}, ExpiresIn=3600))
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"PUT {url.path}?{url.query} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Length: {size}\r\n\r\n".encode())
    socks.append(s)
def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) / 1024
peak = 0.0
piece = b"x" * 1024
for _ in range(seconds):
    for s in socks:
        try: s.send(piece)
        except OSError: pass
    peak = max(peak, max(rss(p) for p in pids))
    time.sleep(1)
for s in socks: s.close()
open(peak_file, "w").write(f"{peak:.1f}\n")
PY
sleep 10
after=$(target_rss)
peak=$(cat "$work/peak")
fast_after=$(fast_puts after)
per_writer=$(python3 -c "print(round(($peak - $before) * 1024 / $writers, 1))")
kept=$(python3 -c "print(round($after - $before, 1))")
echo "target RSS: before $before MiB, peak $peak MiB with $writers slow writers, 10 s after they closed $after MiB" >&2
row "slow writers: target RSS per writer ($writers, ${seconds} s)" KiB "$per_writer" - "abs<=128" - - "$peak"
row "slow writers: target RSS kept 10 s after they closed" MiB "$kept" - "abs<=64" - - "$after"
row "64 x 4 MiB PUT after them vs before" MB/s "$fast_after" "$fast_before" ">=0.8" - - -
bench_report slow_writers
