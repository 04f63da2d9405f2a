#!/usr/bin/env bash
# W1 (PERF.md): GET of large shards (64 MiB), 16 connections, for 1 proxy + 1 target, side
# by side with nginx (sendfile on) serving the same files from the same disk. Rows: direct
# (silo-bench to the target) and gateway (S3 through the proxy) against nginx, server CPU
# seconds per GB, the target's peak RSS under 64 connections, and silo-bench against wrk
# on nginx (the load generator is not the bottleneck). Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_parse "$@"
bench_tools
bench_binaries

if [ $smoke = 1 ]; then shards=4 size=$((4 << 20)); else shards=16 size=$((64 << 20)); fi
bench_files "$work/www" $shards $size shard- .tar
bench_cluster 1 2
bench_bucket shards page_cache
"$silo_bench" put --bucket shards --dir "$work/www" -c 4 --no-progress >/dev/null
bench_nginx "$work/www"

common=(--objects $shards --prefix shard- --name-format '{:06}.tar' -d "$duration")
bench_run "$work/nginx.json" get --path url --url "$nginx_url" "${common[@]}" -c 16 --watch-pid $nginx_pids
bench_run "$work/direct.json" get --bucket shards "${common[@]}" -c 16 --watch-pid $target_pids
bench_run "$work/gateway.json" get --bucket shards --path gateway "${common[@]}" -c 16 --watch-pid $target_pids $proxy_pids
bench_run "$work/direct64.json" get --bucket shards "${common[@]}" -c 64 --watch-pid $target_pids
rss=$(peak_rss_mb $target_pids)

# wrk on nginx, random shards (Lua picks the path), as PERF.md's reference is taken.
cat >"$work/pick.lua" <<LUA
math.randomseed(os.time())
request = function()
  return wrk.format("GET", string.format("/shard-%06d.tar", math.random(0, $shards - 1)))
end
LUA
wrk_gbs=$(wrk -t2 -c16 -d"${duration}s" --timeout 20s -s "$work/pick.lua" "$nginx_url" |
  awk '/Transfer\/sec/ {v=$2; u=substr(v, length(v)-1); v=substr(v, 1, length(v)-2);
       m=(u=="GB")?1.073741824:(u=="MB")?0.001048576:(u=="KB")?0.000001024:1e-9; printf "%.3f", v*m}')

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
