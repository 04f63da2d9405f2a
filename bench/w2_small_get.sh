#!/usr/bin/env bash
# W2 (PERF.md): random GET of 100 KiB objects (10,000 of them), 16 connections, for
# 1 proxy + 1 target, side by side with nginx serving the same files from the same disk:
# requests/s, p99 latency, server CPU per GB; plus the gateway path and wrk on nginx.
# Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then objects=200; else objects=10000; fi
bench_cluster 1 2
bench_dataset small $objects $((100 << 10)) obj- ""
bench_nginx "$work/www"

common=(--objects $objects --prefix obj- --name-format '{:06}' -c 16 -d "$duration")
bench_run "$work/nginx.json" get --path url --url "$nginx_url" "${common[@]}" --watch-pid $nginx_pids
bench_run "$work/direct.json" get --bucket small "${common[@]}" --watch-pid $target_pids
bench_run "$work/gateway.json" get --bucket small --path gateway "${common[@]}" --watch-pid $target_pids $proxy_pids

read -r _ wrk_rps < <(wrk_random "$nginx_url" /obj-%06d $objects)

g() { json "$1" "$2"; }
nrps=$(g "$work/nginx.json" 'r["ops_per_s"]')
np99=$(g "$work/nginx.json" 'r["latency_ms"]["p99"]')
ncpu=$(g "$work/nginx.json" 'r["server"]["cpu_seconds_per_gb"]')
row "W2 GET 100KiB random direct, 16 conn" req/s "$(g "$work/direct.json" 'r["ops_per_s"]')" "$nrps" ">=0.8" \
  "$(g "$work/direct.json" 'r["server"]["cpu_seconds_per_gb"]')" "$ncpu" "$(peak_rss_mb $target_pids)"
row "W2 p99 latency direct" ms "$(g "$work/direct.json" 'r["latency_ms"]["p99"]')" "$np99" "<=2"
row "W2 p50 latency direct" ms "$(g "$work/direct.json" 'r["latency_ms"]["p50"]')" \
  "$(g "$work/nginx.json" 'r["latency_ms"]["p50"]')" -
row "W2 GET 100KiB random gateway, 16 conn" req/s "$(g "$work/gateway.json" 'r["ops_per_s"]')" "$nrps" - \
  "$(g "$work/gateway.json" 'r["server"]["cpu_seconds_per_gb"]')" "$ncpu" -
row "W2 p99 latency gateway" ms "$(g "$work/gateway.json" 'r["latency_ms"]["p99"]')" "$np99" -
row "W2 nginx: silo-bench vs wrk" req/s "$nrps" "$wrk_rps" -
errors=$(g "$work/direct.json" 'r["errors"]+0')
bench_report w2_small_get
[ "$errors" = 0 ] || bench_die "$errors GETs failed"
