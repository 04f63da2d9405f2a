#!/usr/bin/env bash
# W4 (PERF.md): list a bucket of 1,000,000 objects, full pagination with 1,000 keys per
# page through S3 ListObjectsV2 (gateway), and 10,000 per page (its maximum) through the
# native listing, on 1 proxy + 3 targets.
# Absolute keys/s against the issue's targets (peers take minutes for this). Options:
# see bench/lib.sh; --objects N changes the bucket size.
objects_arg=""
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --objects ]; then objects_arg=$2; shift 2; else args+=("$1"); shift; fi
done
set -- "${args[@]+"${args[@]}"}"
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then objects=3000; else objects=1000000; fi
[ -n "$objects_arg" ] && objects=$objects_arg
bench_cluster 3 1
bench_bucket many page_cache
start=$(date +%s.%N)
"$silo_bench" put --bucket many --objects "$objects" --size 0 --order sequential --name-format 'k-{:08}' -c 32 --no-progress >/dev/null
fill_s=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")

bench_run "$work/s3.json" list --bucket many --path gateway --page-size 1000 --count 1 -c 1 --watch-pid $proxy_pids $target_pids
bench_run "$work/native.json" list --bucket many --path direct --page-size 10000 --count 1 -c 1 --watch-pid $proxy_pids $target_pids

g() { json "$1" "$2"; }
for f in s3 native; do
  keys=$(g "$work/$f.json" 'r["keys"]')
  [ "$keys" = "$objects" ] || bench_die "$f listing returned $keys keys, not $objects"
done
row "W4 list $objects objects, S3 ListObjectsV2" keys/s "$(g "$work/s3.json" 'round(r["keys_per_s"])')" - "abs>=100000" - - "$(peak_rss_mb $proxy_pids)"
row "W4 list $objects objects, native (10k/page)" keys/s "$(g "$work/native.json" 'round(r["keys_per_s"])')" - "abs>=500000"
row "W4 S3 page p99 (1000 keys)" ms "$(g "$work/s3.json" 'r["latency_ms"]["p99"]')" - -
row "W4 filling the bucket (PUT 0 B, 32 conn)" objects/s "$(python3 -c "print(round($objects / $fill_s))")" - -
bench_report w4_list
