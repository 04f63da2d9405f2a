#!/usr/bin/env bash
# W1 (PERF.md): GET of large shards (64 MiB), 16 connections, for 1 proxy + 1 target, side
# by side with nginx (sendfile on) serving the same files from the same disk. Rows: direct
# (silo-bench to the target) and gateway (S3 through the proxy) against nginx, server CPU
# seconds per GB, the target's peak RSS under 64 connections, and silo-bench against wrk
# on nginx (the load generator is not the bottleneck). Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then shards=4 size=$((4 << 20)); else shards=16 size=$((64 << 20)); fi
bench_cluster 1 2
bench_dataset shards $shards $size shard- .tar
bench_nginx "$work/www"

common=(--objects $shards --prefix shard- --name-format '{:06}.tar' -d "$duration")
bench_run "$work/nginx.json" get --path url --url "$nginx_url" "${common[@]}" -c 16 --watch-pid $nginx_pids
bench_run "$work/direct.json" get --bucket shards "${common[@]}" -c 16 --watch-pid $target_pids
bench_run "$work/gateway.json" get --bucket shards --path gateway "${common[@]}" -c 16 --watch-pid $target_pids $proxy_pids
bench_run "$work/direct64.json" get --bucket shards "${common[@]}" -c 64 --watch-pid $target_pids
rss=$(peak_rss_mb $target_pids)

read -r wrk_gbs _ < <(wrk_random "$nginx_url" /shard-%06d.tar $shards)

g() { json "$1" "$2"; }
ng=$(g "$work/nginx.json" 'r["gb_per_s"]')
ncpu=$(g "$work/nginx.json" 'r["server"]["cpu_seconds_per_gb"]')
row "W1 GET 64MiB direct, 16 conn" GB/s "$(g "$work/direct.json" 'r["gb_per_s"]')" "$ng" ">=0.9" \
  "$(g "$work/direct.json" 'r["server"]["cpu_seconds_per_gb"]')" "$ncpu" -
row "W1 GET 64MiB gateway, 16 conn" GB/s "$(g "$work/gateway.json" 'r["gb_per_s"]')" "$ng" ">=0.6" \
  "$(g "$work/gateway.json" 'r["server"]["cpu_seconds_per_gb"]')" "$ncpu" -
row "W1 CPU s/GB direct (lower is better)" s/GB "$(g "$work/direct.json" 'r["server"]["cpu_seconds_per_gb"]')" "$ncpu" "<=1.3"
row "W1 p99 latency direct, 16 conn" ms "$(g "$work/direct.json" 'r["latency_ms"]["p99"]')" \
  "$(g "$work/nginx.json" 'r["latency_ms"]["p99"]')" -
row "W1 GET direct, 64 conn" GB/s "$(g "$work/direct64.json" 'r["gb_per_s"]')" "$ng" - - - "$rss"
row "W1 target peak RSS, 64 conn" MB "$rss" - "abs<=150"
row "W1 nginx: silo-bench vs wrk" GB/s "$ng" "$wrk_gbs" -
errors=$(g "$work/direct.json" 'r["errors"]+0')
bench_report w1_large_get
[ "$errors" = 0 ] || bench_die "$errors GETs failed"
