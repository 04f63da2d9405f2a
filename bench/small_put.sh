#!/usr/bin/env bash
# Small PUT (issue #24): 4 KiB objects into a bucket with durability fsync (each object
# durable before it is acknowledged), 16 connections, 1 proxy + 1 target with one
# mountpath, against fio doing the durable part of the same work on the same disk: 16 jobs,
# each creating 4 KiB files, each written and fsynced before the next (`--fsync=1`). A
# Silo PUT does more (a work file renamed into place and a RocksDB record with its WAL
# synced), so the reference is the floor a file-per-object store pays. Rows: direct and
# gateway objects/s, p99 latency. Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then files_per_job=20; else files_per_job=$((duration * 600)); fi
jobs=16 size=4KiB
bench_cluster 1 1
bench_bucket durable fsync

mkdir -p "$work/fio"
fio --name=small --directory="$work/fio" --numjobs=$jobs --nrfiles=$files_per_job --filesize=4k --bs=4k \
  --rw=write --fsync=1 --create_on_open=1 --file_service_type=sequential --group_reporting \
  --output-format=json >"$work/fio.json" 2>"$work/fio.err" || { cat "$work/fio.err" >&2; bench_die "fio failed"; }
rm -rf "$work/fio"
fio_ops=$(json "$work/fio.json" 'round(r["jobs"][0]["write"]["iops"], 1)')
fio_p99=$(json "$work/fio.json" 'round(r["jobs"][0]["sync"]["lat_ns"]["percentile"]["99.000000"] / 1e6 + r["jobs"][0]["write"]["clat_ns"]["percentile"]["99.000000"] / 1e6, 3)')

objects=$((jobs * files_per_job))
common=(--bucket durable --objects $objects --size $size --name-format 'o-{:07}' -c $jobs -d "$duration")
bench_run "$work/direct.json" put "${common[@]}" --prefix d- --watch-pid $target_pids
bench_run "$work/gateway.json" put "${common[@]}" --prefix g- --path gateway --watch-pid $target_pids $proxy_pids

g() { json "$1" "$2"; }
row "PUT 4KiB fsync direct, 16 conn" obj/s "$(g "$work/direct.json" 'round(r["ops_per_s"],1)')" "$fio_ops" ">=0.7" \
  "$(g "$work/direct.json" 'r["server"]["cpu_seconds_per_gb"]')" - "$(peak_rss_mb $target_pids)"
row "PUT 4KiB p99 latency direct" ms "$(g "$work/direct.json" 'r["latency_ms"]["p99"]')" "$fio_p99" -
row "PUT 4KiB fsync gateway, 16 conn" obj/s "$(g "$work/gateway.json" 'round(r["ops_per_s"],1)')" "$fio_ops" - \
  "$(g "$work/gateway.json" 'r["server"]["cpu_seconds_per_gb"]')" -
errors=$(g "$work/direct.json" 'r["errors"]+0')
bench_report small_put
[ "$errors" = 0 ] || bench_die "$errors PUTs failed"
