#!/usr/bin/env bash
# W6 (PERF.md): cold GET and prefetch from an S3 backend. moto_server (python moto: the
# S3 backend) holds COUNT objects in bucket `origin`; a 1 proxy + 1 target cluster has a
# remote bucket `cache` in front of it. Each pass below reads every object once, with the
# same number of connections, and is set against the reference: silo-bench GETting the
# same objects straight from moto (unsigned, --path url; $duration s of random GETs, as a
# pass of moto takes well under a second). Rows:
#   cold GET, direct and gateway: the cache empty (evicted before), every byte fetched
#     from moto by the owning target while streamed to the client;
#   warm GET, direct and gateway: served from the cache ($duration s of random GETs);
#   prefetch job of the same set (after an evict), `workers` = the connections: MB/s from
#     the job's bytes_done over its finished - started; server CPU from /proc.
# Peak RSS of the target: after the cold direct pass, and over the whole run (prefetch row).
# The target's cache counters (silo_target_cache_misses_total, backend bytes received)
# are checked after every pass: a cold pass must fetch each object once, a warm pass none.
# moto is one Python process, but it answers a GET with one write of the whole body, so
# for large objects it serves about as fast as nginx here (~2 GB/s, ~0.4 CPU s/GB). A
# cold GET can not beat the backend it reads from (cold ratio 1 is the ceiling); the warm
# rows show what the cache buys. Defaults: 64 x 16 MiB, 8 connections, the cluster's
# default cache config (range_get_size 16 MiB: these objects take one backend GET each).
# Override with W6_OBJECTS, W6_SIZE_MIB, W6_CONNECTIONS, W6_DURABILITY (the remote bucket's
# durability: fsync | page_cache; default: the cluster's) and SILO_CACHE_JSON (e.g.
# '{"range_get_size": 8388608}' to fetch them by parallel range GETs).
# Options: bench/lib.sh (--duration applies to the reference and the warm passes).
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then objects=8 size_mib=1 conns=4; else objects=64 size_mib=16 conns=8; fi
objects=${W6_OBJECTS:-$objects} size_mib=${W6_SIZE_MIB:-$size_mib} conns=${W6_CONNECTIONS:-$conns}
durability=${W6_DURABILITY:-}  # the remote bucket's: fsync | page_cache (default: the cluster's)
command -v moto_server >/dev/null || bench_die "moto_server not found (python moto; see shared/ENV.md)"
python3 -c 'import boto3' 2>/dev/null || bench_die "python3 has no boto3 (it comes with moto)"

# The backend: moto on base_port+91 (nginx's would be +90), a free port with --base-port 0.
moto_port=$((base_port + 91))
if [ "$base_port" = 0 ]; then
  moto_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
moto_url="http://127.0.0.1:$moto_port"
# Never talk to somebody else's server on that port.
python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()' "$moto_port" 2>/dev/null ||
  bench_die "port $moto_port (moto_server's) is in use; pick another --base-port"
moto_server -H 127.0.0.1 -p "$moto_port" >"$work/moto.log" 2>&1 &
moto_pid=$!
# Stopped with everything else on exit (unless --keep).
trap 'rc=$?; if [ $keep = 1 ]; then echo "kept: moto_server pid $moto_pid on $moto_url" >&2; else kill $moto_pid 2>/dev/null || true; fi
  bench_cleanup; exit $rc' EXIT
for _ in $(seq 150); do curl -s -o /dev/null "$moto_url/" && break; sleep 0.2; done
kill -0 $moto_pid 2>/dev/null && curl -s -o /dev/null "$moto_url/" ||
  { tail -20 "$work/moto.log" >&2; bench_die "moto_server did not start on $moto_port"; }
curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user test-key:test-secret "$moto_url/origin" >/dev/null ||
  bench_die "could not create bucket origin at moto"

# COUNT objects o-000000.. of random bytes, PUT with boto3 (single PUTs: plain ETags;
# public-read, since moto refuses the reference's unsigned GETs of private objects).
python3 - "$moto_url" "$objects" $((size_mib << 20)) <<'PY' || bench_die "upload to moto failed"
import os, sys
from concurrent.futures import ThreadPoolExecutor
import boto3
from botocore.config import Config
url, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="test-key",
                  aws_secret_access_key="test-secret", config=Config(max_pool_connections=4))
def put(i):
    s3.put_object(Bucket="origin", Key=f"o-{i:06}", Body=os.urandom(size), ACL="public-read")
with ThreadPoolExecutor(4) as pool:
    list(pool.map(put, range(count)))
PY

bench_cluster 1 1
api() {  # api METHOD PATH [BODY]: the native API, signed.
  curl -sf -X "$1" --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SILO_ACCESS_KEY:$SILO_SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" ${3:+-d "$3"} "$SILO_ENDPOINT$2"
}
api PUT /v1/buckets/cache "{${durability:+\"durability\": \"$durability\", }\"backend\": {\"url\": \"s3://origin\", \"endpoint\": \"$moto_url\",
  \"access_key\": \"test-key\", \"secret_key\": \"test-secret\"}}" >/dev/null || bench_die "could not create remote bucket cache"
evict() { api POST /v1/buckets/cache/evict '{}' >/dev/null || bench_die "evict failed"; }

target_url=$("$bench_repo/deploy/local/cluster.sh" status --dir "$work/cluster" --json |
  python3 -c 'import json,sys; print([n["url"] for n in json.load(sys.stdin)["nodes"] if n["role"]!="proxy"][0])')
# metric NAME: the target's counter (summed over labels).
metric() {
  curl -sf "$target_url/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $NF} END {printf "%.0f\n", s}'
}
# cpu_s PIDS...: CPU seconds (user + system) the processes used so far.
cpu_s() {
  local t=0 pid
  for pid in "$@"; do t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat"))); done
  python3 -c "print($t / $(getconf CLK_TCK))"
}
# check_fetched WHAT MISSES_BEFORE BYTES_BEFORE WANT_OBJECTS: the pass fetched WANT_OBJECTS
# objects (and their bytes) from the backend, no more.
bad_counters=0
check_fetched() {
  local misses bytes want_bytes=$(($4 * (size_mib << 20)))
  misses=$(($(metric silo_target_cache_misses_total) - $2))
  bytes=$(($(metric silo_target_backend_bytes_received_total) - $3))
  if [ "$misses" != "$4" ] || [ "$bytes" != "$want_bytes" ]; then
    echo "w6: $1: $misses cache misses and $bytes backend bytes, expected $4 and $want_bytes" >&2
    bad_counters=$((bad_counters + 1))
  fi
}
counters() { echo "$(metric silo_target_cache_misses_total) $(metric silo_target_backend_bytes_received_total)"; }

silo_pids="$target_pids $proxy_pids"
once=(--objects $objects --prefix o- --name-format '{:06}' -c $conns --epochs 1)
warm=(--objects $objects --prefix o- --name-format '{:06}' -c $conns -d "$duration")

# 1. The reference: the same objects straight from moto.
bench_run "$work/ref.json" get --path url --url "$moto_url/origin" "${warm[@]}" --watch-pid $moto_pid
# 2. Cold GET, direct (the cache is empty), then 3. warm GETs from the cache.
evict
read -r m0 b0 <<<"$(counters)"
bench_run "$work/cold-direct.json" get --bucket cache "${once[@]}" --watch-pid $silo_pids
check_fetched "cold GET direct" "$m0" "$b0" "$objects"
rss_cold=$(peak_rss_mb $target_pids)
read -r m0 b0 <<<"$(counters)"
bench_run "$work/warm-direct.json" get --bucket cache "${warm[@]}" --watch-pid $silo_pids
bench_run "$work/warm-gateway.json" get --bucket cache --path gateway "${warm[@]}" --watch-pid $silo_pids
check_fetched "warm GETs" "$m0" "$b0" 0
# Cold GET through the proxy.
evict
read -r m0 b0 <<<"$(counters)"
bench_run "$work/cold-gateway.json" get --bucket cache --path gateway "${once[@]}" --watch-pid $silo_pids
check_fetched "cold GET gateway" "$m0" "$b0" "$objects"
# 4. Prefetch of the same set into an empty cache.
evict
read -r m0 b0 <<<"$(counters)"
cpu0=$(cpu_s $silo_pids)
template="o-{000000..$(printf '%06d' $((objects - 1)))}"
job=$(api POST /v1/jobs "{\"kind\":\"prefetch\",\"bucket\":\"cache\",\"template\":\"$template\",\"workers\":$conns}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || bench_die "could not start the prefetch job"
api GET "/v1/jobs/$job/wait?timeout_s=300" >"$work/job.json" || bench_die "waiting for $job failed"
cpu1=$(cpu_s $silo_pids)
check_fetched "prefetch" "$m0" "$b0" "$objects"
read -r state pf_mbs pf_gb pf_done <<<"$(python3 - "$work/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
p = j["progress"]
seconds = (j["finished"] - j["started"]) / 1e9 if j["finished"] else 0
print(j["state"], round(p["bytes_done"] / seconds / 1e6, 1) if seconds > 0 else "-", p["bytes_done"] / 1e9, p["objects_done"])
PY
)"
[ "$state" = finished ] || bench_die "prefetch $job did not finish: $(cat "$work/job.json")"
[ "$pf_done" = "$objects" ] || bench_die "prefetch $job fetched $pf_done objects, not $objects: $(cat "$work/job.json")"
pf_cpu=$(python3 -c "print(round(($cpu1 - $cpu0) / $pf_gb, 4) if $pf_gb > 0 else '-')")

g() { json "$1" "$2"; }
mbs() { g "$1" 'round(r["mb_per_s"], 1)'; }
cpu() { g "$1" 'r["server"]["cpu_seconds_per_gb"]'; }
ref=$(mbs "$work/ref.json")
set_="${objects} x ${size_mib}MiB, $conns conn"
row "W6 moto direct GET (the reference), ${duration}s" MB/s - "$ref" - - "$(cpu "$work/ref.json")"
row "W6 cold GET direct vs moto, $set_" MB/s "$(mbs "$work/cold-direct.json")" "$ref" "reference only" \
  "$(cpu "$work/cold-direct.json")" - "$rss_cold"
row "W6 cold GET gateway vs moto, $set_" MB/s "$(mbs "$work/cold-gateway.json")" "$ref" "reference only" \
  "$(cpu "$work/cold-gateway.json")" -
row "W6 warm GET direct vs moto, ${duration}s" MB/s "$(mbs "$work/warm-direct.json")" "$ref" "reference only" \
  "$(cpu "$work/warm-direct.json")" -
row "W6 warm GET gateway vs moto, ${duration}s" MB/s "$(mbs "$work/warm-gateway.json")" "$ref" "reference only" \
  "$(cpu "$work/warm-gateway.json")" -
row "W6 prefetch job vs moto, $set_ ($conns workers)" MB/s "$pf_mbs" "$ref" "reference only" "$pf_cpu" - \
  "$(peak_rss_mb $target_pids)"
errors=0
for f in ref cold-direct cold-gateway warm-direct warm-gateway; do
  n=$(g "$work/$f.json" 'r["errors"]+0')
  [ "$n" = 0 ] || { echo "w6: $f: $n GETs failed, first: $(g "$work/$f.json" 'r["first_error"]')" >&2; errors=$((errors + n)); }
done
bench_report w6_remote
[ "$errors" = 0 ] || bench_die "$errors GETs failed"
[ "$bad_counters" = 0 ] || bench_die "$bad_counters passes fetched other than expected from the backend"
