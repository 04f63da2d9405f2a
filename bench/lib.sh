# Shared by the workload scripts (bench/w*.sh): arguments, tools, a local cluster, an
# nginx over the same disk, silo-bench runs and the result table (../shared/PERF.md).
# Sourced, not run. Every script takes:
#   --smoke         a few seconds on tiny data (CI runs this so the scripts cannot rot)
#   --dir DIR       working directory (default: a new one under $TMPDIR; removed after)
#   --base-port P   first port of the cluster; nginx gets P+90 (default 9700; 0: any free)
#   --duration S    seconds per measured run (default 15; smoke 2)
#   --keep          leave the cluster, nginx and the data in place
# Environment: SILO_BUILD_DIR (default build/release, built if missing; CI passes its
# own), SILO_BENCH_RESULTS (default bench/results; smoke runs write to the work dir).
set -euo pipefail

bench_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
smoke=0 keep=0 work="" base_port=9700 duration=""
bench_args=("$@")

bench_die() { echo "$(basename "$0"): $*" >&2; exit 2; }

bench_parse() {
  while [ $# -gt 0 ]; do
    case $1 in
      --smoke) smoke=1; shift;;
      --keep) keep=1; shift;;
      --dir) work=$2; shift 2;;
      --base-port) base_port=$2; shift 2;;
      --duration) duration=$2; shift 2;;
      -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0;;
      *) bench_die "unknown option $1 (see --help)";;
    esac
  done
  [[ $base_port =~ ^[0-9]+$ ]] || bench_die "--base-port must be a number, not '$base_port'"
  if [ -z "$duration" ]; then duration=$([ $smoke = 1 ] && echo 2 || echo 15); fi
  [[ $duration =~ ^[0-9]+$ ]] || bench_die "--duration must be whole seconds, not '$duration'"
  if [ -z "$work" ]; then work=$(mktemp -d "${TMPDIR:-/tmp}/silo-bench.XXXXXX"); fi
  mkdir -p "$work"
  rows="$work/rows.tsv"
  : >"$rows"
  trap bench_cleanup EXIT
}

# bench_start "$@": arguments, tools and binaries: the first step of every script.
bench_start() {
  bench_parse "$@"
  bench_tools
  bench_binaries
}

bench_cleanup() {
  local rc=$?
  if [ $keep = 1 ]; then
    echo "kept: $work (stop: deploy/local/cluster.sh down --dir $work/cluster; kill \$(cat $work/nginx/nginx.pid))" >&2
    return $rc
  fi
  if [ -d "$work/cluster" ]; then "$bench_repo/deploy/local/cluster.sh" down --dir "$work/cluster" >/dev/null 2>&1 || true; fi
  if [ -s "$work/nginx/nginx.pid" ]; then kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null || true; fi
  rm -rf "$work"
  return $rc
}

# Installs what is missing (nginx and wrk among the rest) with the project's own script.
bench_tools() { "$bench_repo/tools/setup.sh"; }

# Binaries: SILO_BUILD_DIR's, else the release preset's (built when missing).
bench_binaries() {
  local build=${SILO_BUILD_DIR:-$bench_repo/build/release}
  if [ -z "${SILO_BUILD_DIR:-}" ] && { [ ! -x "$build/cmd/silod/silod" ] || [ ! -x "$build/cmd/silo-bench/silo-bench" ]; }; then
    (cd "$bench_repo" && cmake --preset release >/dev/null && cmake --build --preset release --target silod silo-bench) >&2
  fi
  silod_dir="$build/cmd/silod"
  silo_bench="$build/cmd/silo-bench/silo-bench"
  [ -x "$silod_dir/silod" ] || bench_die "no silod in $silod_dir"
  [ -x "$silo_bench" ] || bench_die "no silo-bench at $silo_bench"
}

# bench_cluster TARGETS MOUNTPATHS [up options...]: a 1-proxy cluster in $work/cluster.
# With --tls every later request trusts its CA (SILO_CA_BUNDLE, CURL_CA_BUNDLE).
bench_cluster() {
  local up_log="$work/cluster-up.log" targets=$1 mountpaths=$2
  shift 2
  # The bench's own cluster and its own keys, whatever the caller's shell exported.
  export SILO_ACCESS_KEY=silo-admin SILO_SECRET_KEY=silo-secret-key
  SILO_BIN_DIR=$silod_dir "$bench_repo/deploy/local/cluster.sh" up --dir "$work/cluster" --base-port "$base_port" \
    --targets "$targets" --mountpaths "$mountpaths" "$@" >"$up_log" 2>&1 ||
    { cat "$up_log" >&2; bench_die "the cluster did not start"; }
  if [ -f "$work/cluster/tls/ca.pem" ]; then
    export SILO_CA_BUNDLE="$work/cluster/tls/ca.pem" CURL_CA_BUNDLE="$work/cluster/tls/ca.pem"
  fi
  local status; status=$("$bench_repo/deploy/local/cluster.sh" status --dir "$work/cluster" --json)
  SILO_ENDPOINT=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["endpoint"])' <<<"$status")
  export SILO_ENDPOINT
  proxy_pids=$(python3 -c 'import json,sys; print(" ".join(str(n["pid"]) for n in json.load(sys.stdin)["nodes"] if n["role"]=="proxy"))' <<<"$status")
  target_pids=$(python3 -c 'import json,sys; print(" ".join(str(n["pid"]) for n in json.load(sys.stdin)["nodes"] if n["role"]!="proxy"))' <<<"$status")
}

# bench_bucket NAME DURABILITY: creates a bucket (durability fsync | page_cache).
bench_bucket() {
  curl -sf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SILO_ACCESS_KEY:$SILO_SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -d "{\"durability\":\"$2\"}" "$SILO_ENDPOINT/v1/buckets/$1" >/dev/null ||
    bench_die "could not create bucket $1"
}

# bench_nginx ROOT [CERT KEY]: nginx (sendfile on, 2 workers, as PERF.md's reference)
# serving ROOT on port base_port+90; sets nginx_url and nginx_pids. With CERT and KEY it
# also serves HTTPS on base_port+91 (nginx_tls_url).
bench_nginx() {
  local port=$((base_port + 90)) tls_port=$((base_port + 91)) dir="$work/nginx"
  if [ "$base_port" = 0 ]; then
    local free='import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    port=$(python3 -c "$free")
    tls_port=$(python3 -c "$free")
  fi
  local tls_server=""
  if [ $# -ge 3 ]; then
    tls_server="server { listen 127.0.0.1:$tls_port ssl; ssl_certificate $2; ssl_certificate_key $3; root $1; }"
    nginx_tls_url="https://127.0.0.1:$tls_port"
  fi
  mkdir -p "$dir"
  # Run as root, nginx's workers would drop to www-data, which cannot read a 0700 work dir.
  local user=""; [ "$(id -u)" -eq 0 ] && user="user root;"
  cat >"$dir/nginx.conf" <<CONF
$user
worker_processes $(nproc);
pid $dir/nginx.pid;
error_log $dir/error.log;
daemon on;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  types { application/octet-stream tar; }
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$port;
    root $1;
  }
  $tls_server
}
CONF
  nginx -c "$dir/nginx.conf" -p "$dir" 2>>"$dir/error.log" || { cat "$dir/error.log" >&2; bench_die "nginx did not start"; }
  for _ in $(seq 50); do [ -s "$dir/nginx.pid" ] && break; sleep 0.1; done
  local master; master=$(cat "$dir/nginx.pid")
  # The workers come a moment after the pid file; on a busy machine pgrep could run first
  # (and, finding none, fail the script silently under pipefail).
  local workers=""
  for _ in $(seq 100); do
    workers=$(pgrep -P "$master" | tr '\n' ' ' || true)
    [ -n "$workers" ] && break
    sleep 0.05
  done
  [ -n "$workers" ] || bench_die "nginx started no workers"
  nginx_pids="$master $workers"
  nginx_url="http://127.0.0.1:$port"
}

# bench_files DIR COUNT SIZE_BYTES PREFIX SUFFIX: COUNT files of random bytes.
bench_files() {
  python3 - "$@" <<'PY'
import os, sys
d, count, size, prefix, suffix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
os.makedirs(d, exist_ok=True)
block = os.urandom(min(size, 8 << 20) or 1)
for i in range(count):
    with open(os.path.join(d, f"{prefix}{i:06}{suffix}"), "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n] if i % 2 == 0 else block[len(block) - n:])
            left -= n
PY
}

# bench_dataset BUCKET COUNT SIZE PREFIX SUFFIX: COUNT random files in $work/www, the
# same files PUT into a new page_cache bucket (so Silo and the reference serve equal bytes).
bench_dataset() {
  bench_files "$work/www" "$2" "$3" "$4" "$5"
  bench_bucket "$1" page_cache
  "$silo_bench" put --bucket "$1" --dir "$work/www" -c 4 --no-progress >"$work/put-$1.log" 2>&1 ||
    { cat "$work/put-$1.log" >&2; bench_die "loading bucket $1 failed"; }
}

# wrk_random URL PATH_FORMAT COUNT: wrk (2 threads, 16 connections, $duration) GETting
# random paths printf(PATH_FORMAT, 0..COUNT-1), as PERF.md's references are taken. Prints
# "GB/s req/s".
wrk_random() {
  cat >"$work/pick.lua" <<LUA
math.randomseed(os.time())
request = function()
  return wrk.format("GET", string.format("$2", math.random(0, $3 - 1)))
end
LUA
  wrk -t2 -c16 -d"${duration}s" --timeout 20s -s "$work/pick.lua" "$1" |
    awk '/Transfer\/sec/ {v=$2; u=substr(v, length(v)-1); v=substr(v, 1, length(v)-2);
         m=(u=="GB")?1.073741824:(u=="MB")?0.001048576:(u=="KB")?0.000001024:1e-9; gbs=v*m}
         /Requests\/sec/ {rps=$2}
         END {printf "%.3f %s\n", gbs, rps}'
}

# bench_run OUT_JSON silo-bench-args...: runs silo-bench --json, keeps its JSON.
bench_run() {
  local out=$1; shift
  "$silo_bench" "$@" --json --no-progress >"$out" || {
    local rc=$?
    # exit 1 = some requests failed: keep the figures, the table shows the errors.
    [ $rc = 1 ] || { cat "$out" >&2; bench_die "silo-bench $* failed (exit $rc)"; }
  }
}

# json FILE EXPR: a value from a silo-bench JSON (EXPR in Python, the object is `r`).
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

# peak_rss_mb PIDS...: the largest VmHWM (peak RSS over the process's life) among PIDS.
peak_rss_mb() {
  local max=0 kb
  for pid in "$@"; do
    kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${kb:-0}" -gt "$max" ] && max=$kb
  done
  echo $((max / 1024))
}

# row WORKLOAD UNIT SILO REF TARGET_RATIO SILO_CPU_PER_GB REF_CPU_PER_GB SILO_PEAK_RSS_MB
# (use - where a column does not apply). TARGET_RATIO: ">=0.9", "<=2", ...
row() { printf '%s\t' "$@" | sed 's/\t$//' >>"$rows"; echo >>"$rows"; }

# Prints the table and writes it (with machine, commit, date, command) to
# bench/results/<name>-<date>-<commit>.txt (smoke runs: only printed).
bench_report() {
  local name=$1 commit machine file
  commit=$(git -C "$bench_repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
  git -C "$bench_repo" diff --quiet HEAD 2>/dev/null || commit="$commit-dirty"
  machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1e6}' /proc/meminfo), $(uname -r)"
  local table
  table=$(python3 - "$rows" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
head = ["workload", "unit", "silo", "reference", "ratio", "target", "met", "silo cpu s/GB", "ref cpu s/GB", "silo peak RSS MB"]
out = []
for r in rows:
    r += ["-"] * (8 - len(r))
    w, unit, silo, ref, target, cs, cr, rss = r[:8]
    ratio, met = "-", "-"
    try:
        ratio_v = float(silo) / float(ref)
        ratio = f"{ratio_v:.2f}"
        if target.startswith(">="): met = "yes" if ratio_v >= float(target[2:]) else "NO"
        elif target.startswith("<="): met = "yes" if ratio_v <= float(target[2:]) else "NO"
    except (ValueError, ZeroDivisionError):
        try:
            if target.startswith("abs>="): met = "yes" if float(silo) >= float(target[5:]) else "NO"
            elif target.startswith("abs<="): met = "yes" if float(silo) <= float(target[5:]) else "NO"
        except ValueError: pass
    out.append([w, unit, silo, ref, ratio, target, met, cs, cr, rss])
widths = [max(len(str(x)) for x in col) for col in zip(head, *out)]
fmt = "  ".join("{:<%d}" % w for w in widths)
print(fmt.format(*head))
for r in out: print(fmt.format(*r))
PY
)
  local header="# $name  $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit $commit  machine: $machine
# command: bench/$(basename "$0") ${bench_args[*]}"
  printf '%s\n%s\n' "$header" "$table"
  if [ $smoke = 0 ]; then
    local dir=${SILO_BENCH_RESULTS:-$bench_repo/bench/results}
    mkdir -p "$dir"
    file="$dir/$name-$(date -u +%Y%m%d-%H%M%S)-$commit.txt"
    printf '%s\n%s\n' "$header" "$table" >"$file"
    echo "written: ${file#"$bench_repo"/}" >&2
  fi
}

# fmt2 NUMBER: two decimals.
fmt2() { python3 -c "print(f'{float(\"$1\"):.2f}')"; }
