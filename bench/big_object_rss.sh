#!/usr/bin/env bash
# Peak memory of every node while one big object streams through the proxy.
#
#   bench/big_object_rss.sh [--size BYTES] [--limit-mb MB]
#
# Starts a 1 proxy + 3 target cluster with deploy/local/cluster.sh (--base-port 0, a fresh
# temp dir), PUTs a SIZE-byte object (default 4 GiB) through the proxy with curl from a
# generated stream (never a file, never in memory), GETs it back comparing sha256, samples
# VmRSS/VmHWM of every node from /proc/PID/status during the run, and prints peak RSS per
# node and the throughput. Exits 1 if any node's peak RSS exceeds the limit (150 MB).
# The result goes to bench/results/big_object_rss-<date>-<commit>.txt.
# Env: SILO_BIN_DIR (dir holding silod; cluster.sh builds one when unset), SILO_COMMIT.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
size=$((4 * 1024 * 1024 * 1024))
limit_mb=150
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=$2; shift 2;;
    --limit-mb) limit_mb=$2; shift 2;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "big_object_rss.sh: unknown argument $1" >&2; exit 2;;
  esac
done
for tool in curl sha256sum openssl; do
  command -v "$tool" >/dev/null || { echo "big_object_rss.sh: needs $tool" >&2; exit 2; }
done

dir=$(mktemp -d /tmp/silo-bench-rss-XXXXXX)
# The bench's own cluster and its own keys, whatever the caller's shell exported.
export SILO_ACCESS_KEY=silo-admin SILO_SECRET_KEY=silo-secret-key
cluster() { "$repo/deploy/local/cluster.sh" "$@" --dir "$dir"; }
sampler_pid=""
cleanup() {
  [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null || true
  cluster down >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

cluster up --proxies 1 --targets 3 --base-port 0 >"$dir/up.log" 2>&1 || { cat "$dir/up.log" >&2; exit 1; }
endpoint=$(cat "$dir/primary_url")
nodes=$(ls "$dir/nodes" | sort -V)

# Samples every node's VmRSS and VmHWM (kB) every 100 ms into $dir/rss.<id>.
sample() {
  while :; do
    for id in $nodes; do
      pid=$(cat "$dir/nodes/$id/pid")
      awk '/^VmRSS|^VmHWM/ {printf "%s %s ", $1, $2} END {print ""}' "/proc/$pid/status" \
        >>"$dir/rss.$id" 2>/dev/null || true
    done
    sleep 0.1
  done
}
sample &
sampler_pid=$!

# A reproducible stream: AES-CTR of zeros is fast and incompressible.
stream() { openssl enc -aes-128-ctr -nosalt -pass pass:silo-bench -pbkdf2 </dev/zero 2>/dev/null | head -c "$size" || true; }

# Every request is signed with the cluster's admin keys (UNSIGNED-PAYLOAD: the body streams).
auth=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$SILO_ACCESS_KEY:$SILO_SECRET_KEY"
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
curl -fsS "${auth[@]}" -X PUT "$endpoint/v1/buckets/bench" -o /dev/null
url="$endpoint/v1/objects/bench/big-object"
now() { date +%s.%N; }
t0=$(now)
put_code=$(stream | tee >(sha256sum | cut -d' ' -f1 >"$dir/put.sha") |
  curl -fsS "${auth[@]}" -T - -H "Content-Length: $size" -H "Transfer-Encoding:" -H "Expect:" "$url" -o "$dir/put.out" \
    -w '%{http_code}') || { echo "PUT failed: $(cat "$dir/put.out" 2>/dev/null)" >&2; exit 1; }
t1=$(now)
get_sha=$(curl -fsS "${auth[@]}" "$url" | sha256sum | cut -d' ' -f1)
t2=$(now)
for _ in $(seq 1 50); do [ -s "$dir/put.sha" ] && break; sleep 0.1; done
put_sha=$(cat "$dir/put.sha")
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=""

commit=${SILO_COMMIT:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)}
date_tag=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$repo/bench/results"
out="$repo/bench/results/big_object_rss-$date_tag-$commit.txt"
{
  echo "big_object_rss: $size bytes through the proxy (1 proxy + 3 targets, fsync durability)"
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit:  $commit"
  echo "nproc:   $(nproc)"
  echo "ram:     $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "put:     $(awk -v s="$size" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f s, %.1f MiB/s", b - a, s / 1048576 / (b - a)}')"
  echo "get:     $(awk -v s="$size" -v a="$t1" -v b="$t2" 'BEGIN {printf "%.1f s, %.1f MiB/s", b - a, s / 1048576 / (b - a)}')"
  echo "sha256:  put $put_sha"
  echo "         get $get_sha"
  printf '%-6s %-7s %14s %14s\n' NODE ROLE PEAK_RSS_MB VMHWM_MB
  for id in $nodes; do
    peak_rss=$(awk '{for (i = 1; i < NF; i++) if ($i == "VmRSS:" && $(i+1) > m) m = $(i+1)} END {printf "%.1f", m / 1024}' "$dir/rss.$id")
    hwm=$(awk '{for (i = 1; i < NF; i++) if ($i == "VmHWM:" && $(i+1) > m) m = $(i+1)} END {printf "%.1f", m / 1024}' "$dir/rss.$id")
    printf '%-6s %-7s %14s %14s\n' "$id" "$(cat "$dir/nodes/$id/role")" "$peak_rss" "$hwm"
    if awk -v h="$hwm" -v r="$peak_rss" -v l="$limit_mb" 'BEGIN {exit !(h > l || r > l)}'; then
      echo "FAIL: node $id peaked at ${hwm} MB (VmHWM), over the ${limit_mb} MB limit"
    fi
  done
  if [ "$put_code" != 200 ] || [ "$put_sha" != "$get_sha" ] || [ -z "$get_sha" ]; then
    echo "FAIL: the object did not round-trip (PUT HTTP $put_code, sha256 put $put_sha, get $get_sha)"
  fi
} >"$out"
grep -q '^FAIL' "$out" || echo "PASS: every node stayed under ${limit_mb} MB and the bytes came back identical" >>"$out"
cat "$out"
echo "result written to $out"
! grep -q '^FAIL' "$out"
