#!/usr/bin/env bash
# W7 (PERF.md): rebalance after adding a target. 1 proxy + 3 targets (one mountpath each)
# hold COUNT objects; a fourth target joins; the rebalance moves about a quarter of the
# bytes to it (each copy fsynced before its source is removed). Reports the bytes moved
# per second against `dd bs=1M conv=fdatasync` on the same disk, and a reader that GETs
# random objects through the whole rebalance (its errors must be 0; its p99 beside the
# same reader's with nothing moving). Options: bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then size_mib=1 objects=48 dd_mib=16; else size_mib=16 objects=256 dd_mib=2048; fi
bench_cluster 3 1
bench_bucket shards page_cache
"$silo_bench" put --bucket shards --objects $objects --size "${size_mib}MiB" --prefix s- --name-format '{:06}' \
  -c 4 --no-progress >/dev/null

dd_mbs=$(dd if=/dev/urandom of="$work/dd.src" bs=1M count=$dd_mib 2>/dev/null &&
  dd if="$work/dd.src" of="$work/dd.bin" bs=1M conv=fdatasync 2>&1 |
  awk '/copied/ {for (i=1;i<=NF;i++) if ($i ~ /^[0-9.]+$/ && $(i+1) ~ /B\/s/) {v=$i; u=$(i+1)}}
       END {m=(u=="GB/s")?1000:(u=="MB/s")?1:(u=="kB/s")?0.001:1; printf "%.1f", v*m}')
rm -f "$work/dd.src" "$work/dd.bin"

api() { curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SILO_ACCESS_KEY:$SILO_SECRET_KEY" "$SILO_ENDPOINT$1"; }

# The reader's latency with nothing moving, for the row below.
bench_run "$work/idle.json" get --bucket shards --path gateway --objects $objects --prefix s- --name-format '{:06}' \
  -c 4 -d "$duration"
# A reader through the gateway for the whole rebalance (stopped once the job ends).
"$silo_bench" get --bucket shards --path gateway --objects $objects --prefix s- --name-format '{:06}' -c 4 \
  -d 600 --json --no-progress >"$work/reader.json" &
reader=$!
sleep 1
SILO_BIN_DIR=$silod_dir "$bench_repo/deploy/local/cluster.sh" add --role target --mountpaths 1 --dir "$work/cluster" >/dev/null
job=rebalance-$(api /v1/cluster/map | python3 -c 'import json,sys; print(json.load(sys.stdin)["rebalance"]["id"])')
api "/v1/jobs/$job/wait?timeout_s=300" >"$work/job.json"
kill -INT $reader 2>/dev/null || true
wait $reader || true

read -r state seconds moved_mb objects_moved <<<"$(python3 - "$work/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
p = j["progress"]
print(j["state"], (j["finished"] - j["started"]) / 1e9, p["bytes_done"] / 1e6, p["objects_done"])
PY
)"
[ "$state" = finished ] || bench_die "$job did not finish: $(cat "$work/job.json")"
rate=$(python3 -c "print(round($moved_mb / max($seconds, 1e-3), 1))")
reader_errors=$(json "$work/reader.json" 'r["errors"]+0' 2>/dev/null || echo "?")
row "W7 rebalance, 4th target joins: MB moved/s (${moved_mb%.*} MB, $objects_moved objects, ${seconds%.*} s)" MB/s \
  "$rate" "$dd_mbs" - - - "$(peak_rss_mb $target_pids)"
row "W7 reader GET p99 during the rebalance vs idle (${size_mib} MiB, 4 conn)" ms \
  "$(json "$work/reader.json" 'r["latency_ms"]["p99"]' 2>/dev/null || echo -)" "$(json "$work/idle.json" 'r["latency_ms"]["p99"]')" -
row "W7 reader GETs that failed" count "$reader_errors" - "abs<=0"
bench_report w7_rebalance
[ "$reader_errors" = 0 ] || bench_die "$reader_errors GETs failed during the rebalance"
