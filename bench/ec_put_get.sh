#!/usr/bin/env bash
# Erasure coding (issue #6, PERF.md W1/W3): PUT and GET of 64 MiB objects into a bucket
# coded 2+1 against the same into a plain bucket (one copy), on 1 proxy + 3 targets with
# one mountpath each, durability fsync, direct path, 4 connections; beside them the
# ISA-L 2+1 and 4+2 encode rate per core (silo_ec_bench) and dd's fdatasync rate.
# A coded PUT writes 1.5x the bytes (over three disks that share one here) and moves 2/3
# of them over loopback before the ack; a coded GET reads k slices, k-1 of them over
# loopback, and sends the cells by sendfile and splice (docs/adr/0024). Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then size_mib=4 objects=4 dd_mib=16; else size_mib=64 objects=24 dd_mib=2048; fi
bench_cluster 3 1
bench_bucket plain fsync
curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SILO_ACCESS_KEY:$SILO_SECRET_KEY" \
  -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -d '{"durability":"fsync","ec":{"data":2,"parity":1}}' \
  "$SILO_ENDPOINT/v1/buckets/coded" >/dev/null || bench_die "could not create bucket coded"

dd_mbs=$(dd if=/dev/urandom of="$work/dd.src" bs=1M count=$dd_mib 2>/dev/null &&
  dd if="$work/dd.src" of="$work/dd.bin" bs=1M conv=fdatasync 2>&1 |
  awk '/copied/ {for (i=1;i<=NF;i++) if ($i ~ /^[0-9.]+$/ && $(i+1) ~ /B\/s/) {v=$i; u=$(i+1)}}
       END {m=(u=="GB/s")?1000:(u=="MB/s")?1:(u=="kB/s")?0.001:1; printf "%.1f", v*m}')
rm -f "$work/dd.src" "$work/dd.bin"

put=(--objects $objects --size "${size_mib}MiB" --name-format 'o-{:04}' --prefix p- -c 4)
get=(--objects $objects --name-format 'o-{:04}' --prefix p- -c 4 -d "$duration")
for b in plain coded; do
  bench_run "$work/put-$b.json" put --bucket $b "${put[@]}" --watch-pid $target_pids
  bench_run "$work/get-$b.json" get --bucket $b "${get[@]}" --watch-pid $target_pids
done

# ISA-L: bytes of data encoded per second on one core, 1 MiB cells (the data path's).
ec_json="$work/ec.json"
"${SILO_BUILD_DIR:-$bench_repo/build/release}/bench/silo_ec_bench" --benchmark_filter='BM_Encode/(2/1|4/2)/1048576' \
  --benchmark_min_time=$([ $smoke = 1 ] && echo 0.05 || echo 1) --benchmark_format=json >"$ec_json" 2>/dev/null ||
  bench_die "silo_ec_bench failed"
enc() { python3 -c "import json,sys; b=[x for x in json.load(open(sys.argv[1]))['benchmarks'] if x['name'].startswith(sys.argv[2])][0]; print(round(b['bytes_per_second']/1e9,1))" "$ec_json" "$1"; }

g() { json "$1" "$2"; }
mbs() { g "$1" 'round(r["mb_per_s"],1)'; }
row "EC PUT ${size_mib}MiB fsync 2+1 vs plain, 4 conn" MB/s "$(mbs "$work/put-coded.json")" "$(mbs "$work/put-plain.json")" - \
  "$(g "$work/put-coded.json" 'r["server"]["cpu_seconds_per_gb"]')" - "$(peak_rss_mb $target_pids)"
row "plain PUT ${size_mib}MiB fsync vs dd fdatasync" MB/s "$(mbs "$work/put-plain.json")" "$dd_mbs" - \
  "$(g "$work/put-plain.json" 'r["server"]["cpu_seconds_per_gb"]')" -
row "EC GET ${size_mib}MiB 2+1 vs plain, 4 conn" MB/s "$(mbs "$work/get-coded.json")" "$(mbs "$work/get-plain.json")" - \
  "$(g "$work/get-coded.json" 'r["server"]["cpu_seconds_per_gb"]')" -
row "ISA-L encode 2+1, 1 MiB cells, 1 core" GB/s "$(enc BM_Encode/2/1/1048576)" - -
row "ISA-L encode 4+2, 1 MiB cells, 1 core" GB/s "$(enc BM_Encode/4/2/1048576)" 28 - 
errors=$(g "$work/get-coded.json" 'r["errors"]+0')
bench_report ec_put_get
[ "$errors" = 0 ] || bench_die "$errors coded GETs failed"
