#!/usr/bin/env bash
# W8 (issue #19, docs/shards.md): reads of tar shards, 1 proxy + 1 target.
#  (a) member GET of 100 KiB members from plain tar shards vs whole GET of 100 KiB objects
#      (the same bytes as separate objects), direct, 16 connections: target >= 0.9.
#  (b) random 10 KiB samples through the proxy: batch GET (POST /v1/batch of 1,000 members)
#      vs one GET per sample (S3 GET ?archpath=, 16 connections): target >= 10x samples/s.
# Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then shards=4; big=8; small=20; else shards=40; big=64; small=100; fi
bench_cluster 1 2

# tar_shards DIR COUNT MEMBERS SIZE: COUNT shards shard-NNNNNN.tar of MEMBERS random members
# NNNNNN.bin of SIZE bytes; and, under DIR/flat, every member as its own file.
tar_shards() {
  python3 - "$@" <<'PY'
import io, os, sys, tarfile
d, count, members, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(d, exist_ok=True)
flat = os.path.join(d + "-flat")
os.makedirs(flat, exist_ok=True)
for s in range(count):
    with tarfile.open(os.path.join(d, f"shard-{s:06}.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
        for m in range(members):
            data = os.urandom(size)
            info = tarfile.TarInfo(f"{m:06}.bin")
            info.size = size
            t.addfile(info, io.BytesIO(data))
            with open(os.path.join(flat, f"obj-{s * members + m:06}"), "wb") as f:
                f.write(data)
PY
}
load() {  # BUCKET DIR
  bench_bucket "$1" page_cache
  "$silo_bench" put --bucket "$1" --dir "$2" -c 4 --no-progress >"$work/put-$1.log" 2>&1 ||
    { cat "$work/put-$1.log" >&2; bench_die "loading bucket $1 failed"; }
}
tar_shards "$work/big" $shards $big $((100 << 10))
tar_shards "$work/small" $shards $small $((10 << 10))
load big "$work/big"
load flat "$work/big-flat"
load small "$work/small"

d=(-d "$duration")
bench_run "$work/whole.json" get --bucket flat --objects $((shards * big)) --prefix obj- --name-format '{:06}' \
  -c 16 "${d[@]}" --watch-pid $target_pids
bench_run "$work/member.json" get --bucket big --objects $shards --prefix shard- --name-format '{:06}.tar' \
  --members $big --member-format '{:06}.bin' -c 16 "${d[@]}" --watch-pid $target_pids
bench_run "$work/per_sample.json" get --bucket small --path gateway --objects $shards --prefix shard- \
  --name-format '{:06}.tar' --members $small --member-format '{:06}.bin' -c 16 "${d[@]}" \
  --watch-pid $target_pids $proxy_pids
bench_run "$work/batch.json" batch --bucket small --path gateway --objects $shards --prefix shard- \
  --name-format '{:06}.tar' --members $small --member-format '{:06}.bin' --batch-entries 1000 -c 4 "${d[@]}" \
  --watch-pid $target_pids $proxy_pids

g() { json "$1" "$2"; }
row "W8a member GET 100KiB of tar shards vs whole GET, direct, 16 conn" req/s \
  "$(g "$work/member.json" 'r["ops_per_s"]')" "$(g "$work/whole.json" 'r["ops_per_s"]')" ">=0.9" \
  "$(g "$work/member.json" 'r["server"]["cpu_seconds_per_gb"]')" "$(g "$work/whole.json" 'r["server"]["cpu_seconds_per_gb"]')" \
  "$(peak_rss_mb $target_pids)"
row "W8a p99 latency, member vs whole" ms "$(g "$work/member.json" 'r["latency_ms"]["p99"]')" \
  "$(g "$work/whole.json" 'r["latency_ms"]["p99"]')" -
row "W8b 10KiB samples: batch GET (1,000/batch, 4 conn) vs GET per sample (16 conn), via proxy" samples/s \
  "$(g "$work/batch.json" 'r["keys_per_s"]')" "$(g "$work/per_sample.json" 'r["ops_per_s"]')" ">=10" \
  "$(g "$work/batch.json" 'r["server"]["cpu_seconds_per_gb"]')" "$(g "$work/per_sample.json" 'r["server"]["cpu_seconds_per_gb"]')" \
  "$(peak_rss_mb $proxy_pids)"
row "W8b batch latency (1,000 samples)" ms "$(g "$work/batch.json" 'r["latency_ms"]["p50"]')" - -
errors=$(python3 -c 'import json,sys; print(sum(json.load(open(f))["errors"] for f in sys.argv[1:]))' \
  "$work/whole.json" "$work/member.json" "$work/per_sample.json" "$work/batch.json")
bench_report w8_shards
[ "$errors" = 0 ] || bench_die "$errors requests failed"
