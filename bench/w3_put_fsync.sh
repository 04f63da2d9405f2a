#!/usr/bin/env bash
# W3 (PERF.md): PUT of 64 MiB objects into a bucket with durability fsync (each object
# fsynced before it is acknowledged), 1 proxy + 1 target with one mountpath, against
# `dd bs=1M conv=fdatasync` to the same disk. Rows: direct with 1 and 4 connections,
# gateway with 4. Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then size_mib=4 objects=4 dd_mib=16; else size_mib=64 objects=32 dd_mib=2048; fi
bench_cluster 1 1
bench_bucket durable fsync

# The reference: one sequential stream with one fdatasync at the end, on the same disk.
dd_mbs=$(dd if=/dev/urandom of="$work/dd.src" bs=1M count=$dd_mib 2>/dev/null &&
  dd if="$work/dd.src" of="$work/dd.bin" bs=1M conv=fdatasync 2>&1 |
  awk '/copied/ {for (i=1;i<=NF;i++) if ($i ~ /^[0-9.]+$/ && $(i+1) ~ /B\/s/) {v=$i; u=$(i+1)}}
       END {m=(u=="GB/s")?1000:(u=="MB/s")?1:(u=="kB/s")?0.001:1; printf "%.1f", v*m}')
rm -f "$work/dd.src" "$work/dd.bin"

common=(--bucket durable --objects $objects --size "${size_mib}MiB" --name-format 'o-{:04}')
bench_run "$work/direct1.json" put "${common[@]}" --prefix d1- -c 1 --watch-pid $target_pids
bench_run "$work/direct4.json" put "${common[@]}" --prefix d4- -c 4 --watch-pid $target_pids
bench_run "$work/gateway4.json" put "${common[@]}" --prefix g4- -c 4 --path gateway --watch-pid $target_pids $proxy_pids

g() { json "$1" "$2"; }
row "W3 PUT ${size_mib}MiB fsync direct, 1 conn" MB/s "$(g "$work/direct1.json" 'round(r["mb_per_s"],1)')" "$dd_mbs" ">=0.8" \
  "$(g "$work/direct1.json" 'r["server"]["cpu_seconds_per_gb"]')" - "$(peak_rss_mb $target_pids)"
row "W3 PUT ${size_mib}MiB fsync direct, 4 conn" MB/s "$(g "$work/direct4.json" 'round(r["mb_per_s"],1)')" "$dd_mbs" ">=0.8" \
  "$(g "$work/direct4.json" 'r["server"]["cpu_seconds_per_gb"]')" -
row "W3 PUT ${size_mib}MiB fsync gateway, 4 conn" MB/s "$(g "$work/gateway4.json" 'round(r["mb_per_s"],1)')" "$dd_mbs" - \
  "$(g "$work/gateway4.json" 'r["server"]["cpu_seconds_per_gb"]')" -
row "W3 p99 PUT latency direct, 4 conn" ms "$(g "$work/direct4.json" 'r["latency_ms"]["p99"]')" - -
errors=$(g "$work/direct4.json" 'r["errors"]+0')
bench_report w3_put_fsync
[ "$errors" = 0 ] || bench_die "$errors PUTs failed"
