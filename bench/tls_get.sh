#!/usr/bin/env bash
# W1 and W2 (PERF.md) over TLS (docs/security.md "TLS"): GET of 64 MiB shards and random
# GET of 100 KiB objects, direct to the target, 16 connections, from a 1 proxy + 1 target
# cluster started plain and then with `cluster.sh up --tls` (same data, same run), side by
# side with one nginx serving the same files over HTTP and over HTTPS with the same
# certificate. Rows: Silo over TLS against Silo plain (what TLS costs Silo), against nginx
# over HTTPS (the same work done by the reference), and nginx HTTPS against nginx HTTP
# (what TLS costs the reference). Options: see bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then shards=2 shard_size=$((4 << 20)) objects=100; else shards=8 shard_size=$((64 << 20)) objects=10000; fi
bench_files "$work/www/big" $shards $shard_size shard- .tar
bench_files "$work/www/small" $objects $((100 << 10)) obj- ""
"$bench_repo/deploy/local/tls-certs.sh" "$work/nginx-tls"
bench_nginx "$work/www" "$work/nginx-tls/node.pem" "$work/nginx-tls/node-key.pem"

w1=(--objects $shards --prefix shard- --name-format '{:06}.tar' -c 16 -d "$duration")
w2=(--objects $objects --prefix obj- --name-format '{:06}' -c 16 -d "$duration")
bench_run "$work/nginx-w1.json" get --path url --url "$nginx_url/big" "${w1[@]}" --watch-pid $nginx_pids
bench_run "$work/nginx-w2.json" get --path url --url "$nginx_url/small" "${w2[@]}" --watch-pid $nginx_pids
SILO_CA_BUNDLE="$work/nginx-tls/ca.pem" bench_run "$work/nginx-tls-w1.json" get --path url --url "$nginx_tls_url/big" \
  "${w1[@]}" --watch-pid $nginx_pids
SILO_CA_BUNDLE="$work/nginx-tls/ca.pem" bench_run "$work/nginx-tls-w2.json" get --path url --url "$nginx_tls_url/small" \
  "${w2[@]}" --watch-pid $nginx_pids

# One cluster plain, then one over TLS, each loaded with the same files.
for mode in plain tls; do
  if [ $mode = tls ]; then bench_cluster 1 2 --tls; else bench_cluster 1 2; fi
  for set in big small; do
    bench_bucket $set page_cache
    "$silo_bench" put --bucket $set --dir "$work/www/$set" -c 4 --no-progress >"$work/put-$set-$mode.log" 2>&1 ||
      { cat "$work/put-$set-$mode.log" >&2; bench_die "loading bucket $set ($mode) failed"; }
  done
  bench_run "$work/silo-$mode-w1.json" get --bucket big "${w1[@]}" --watch-pid $target_pids
  bench_run "$work/silo-$mode-w2.json" get --bucket small "${w2[@]}" --watch-pid $target_pids
  "$bench_repo/deploy/local/cluster.sh" down --dir "$work/cluster" >/dev/null
  rm -rf "$work/cluster"
  unset SILO_CA_BUNDLE CURL_CA_BUNDLE
done

g() { json "$1" "$2"; }
gbs='r["gb_per_s"]' rps='r["ops_per_s"]' cpu='r["server"]["cpu_seconds_per_gb"]' p99='r["latency_ms"]["p99"]'
row "W1 64MiB direct: Silo TLS vs Silo plain" GB/s "$(g "$work/silo-tls-w1.json" "$gbs")" \
  "$(g "$work/silo-plain-w1.json" "$gbs")" - "$(g "$work/silo-tls-w1.json" "$cpu")" "$(g "$work/silo-plain-w1.json" "$cpu")"
row "W1 64MiB direct: Silo TLS vs nginx HTTPS" GB/s "$(g "$work/silo-tls-w1.json" "$gbs")" \
  "$(g "$work/nginx-tls-w1.json" "$gbs")" ">=0.9" "$(g "$work/silo-tls-w1.json" "$cpu")" "$(g "$work/nginx-tls-w1.json" "$cpu")"
row "W1 64MiB: nginx HTTPS vs nginx HTTP" GB/s "$(g "$work/nginx-tls-w1.json" "$gbs")" \
  "$(g "$work/nginx-w1.json" "$gbs")" - "$(g "$work/nginx-tls-w1.json" "$cpu")" "$(g "$work/nginx-w1.json" "$cpu")"
row "W2 100KiB direct: Silo TLS vs Silo plain" req/s "$(g "$work/silo-tls-w2.json" "$rps")" \
  "$(g "$work/silo-plain-w2.json" "$rps")" - "$(g "$work/silo-tls-w2.json" "$cpu")" "$(g "$work/silo-plain-w2.json" "$cpu")"
row "W2 100KiB direct: Silo TLS vs nginx HTTPS" req/s "$(g "$work/silo-tls-w2.json" "$rps")" \
  "$(g "$work/nginx-tls-w2.json" "$rps")" ">=0.8" "$(g "$work/silo-tls-w2.json" "$cpu")" "$(g "$work/nginx-tls-w2.json" "$cpu")"
row "W2 p99 latency: Silo TLS vs nginx HTTPS" ms "$(g "$work/silo-tls-w2.json" "$p99")" "$(g "$work/nginx-tls-w2.json" "$p99")" "<=2"
row "W2 100KiB: nginx HTTPS vs nginx HTTP" req/s "$(g "$work/nginx-tls-w2.json" "$rps")" \
  "$(g "$work/nginx-w2.json" "$rps")" - "$(g "$work/nginx-tls-w2.json" "$cpu")" "$(g "$work/nginx-w2.json" "$cpu")"
errors=0
for f in "$work"/silo-*-w*.json; do errors=$((errors + $(g "$f" 'r["errors"]+0'))); done
bench_report tls_get
[ "$errors" = 0 ] || bench_die "$errors GETs failed"
