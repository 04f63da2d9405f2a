#!/usr/bin/env bash
# W9 (issue #21): a resharding job (dsort) on 1 proxy + 3 targets (one mountpath each).
# 1,000 input tar shards of ~2 MiB (WebDataset samples KEY.jpg of 10-200 KiB random bytes,
# KEY.cls, KEY.json: ~2 GiB, ~19,000 samples), generated once as local files and loaded
# into a page_cache bucket (the upload is timed apart), are reshuffled (order random, a
# seed) into 256 MiB output shards in a durability fsync bucket, through the CLI
# (silo dsort --spec FILE --wait). Reported: GB/s of the whole job (input bytes / the
# job's started..finished) and of each phase (the job's extraction_ms, creation_ms),
# CPU seconds per GB of every silod (/proc/PID/stat before and after), the peak RSS of
# each node while the job runs (VmRSS sampled, and VmHWM after a reset), spilled bytes.
# References, same run, same disk (the work dir):
#   dd if=/dev/zero bs=1M conv=fdatasync of the input's bytes: target >= 0.5x;
#   one Python process with tarfile resharding the same local shards (read every sample,
#   group members by key, shuffle with a seed, write 256 MiB tars, fsync each): target >= 1x.
# The job must finish with every generated sample (checked; --smoke too).
# Sizes: W9_SHARDS (1000), W9_SHARD_KIB (2048), W9_OUT_MIB (256). Options: bench/lib.sh.
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then
  shards=20 shard_kib=64 out_bytes=$((256 << 10)) jpg_min=$((1 << 10)) jpg_max=$((8 << 10))
else
  shards=${W9_SHARDS:-1000} shard_kib=${W9_SHARD_KIB:-2048} out_bytes=$((${W9_OUT_MIB:-256} << 20))
  jpg_min=$((10 << 10)) jpg_max=$((200 << 10))
fi
seed=7
silo_cli="${SILO_BUILD_DIR:-$bench_repo/build/release}/cmd/silo/silo"
if [ -z "${SILO_BUILD_DIR:-}" ] && [ ! -x "$silo_cli" ]; then
  (cd "$bench_repo" && cmake --build --preset release --target silo) >&2
fi
[ -x "$silo_cli" ] || bench_die "no silo CLI at $silo_cli"

bench_cluster 3 1
bench_bucket w9-in page_cache
bench_bucket w9-out fsync
all_pids="$proxy_pids $target_pids"

# The input: SHARDS tar shards shard-NNNNNN.tar of WebDataset samples, each ~SHARD_KIB.
# Prints "samples bytes".
python3 - "$work/shards" $shards $((shard_kib << 10)) $jpg_min $jpg_max $seed >"$work/gen.txt" <<'PY'
import io, json, os, random, sys, tarfile
d, count, shard_bytes, lo, hi, seed = sys.argv[1], *map(int, sys.argv[2:])
os.makedirs(d, exist_ok=True)
rng = random.Random(seed)
pool = os.urandom(16 << 20)  # samples are slices of random bytes at random offsets
samples = total = 0
def add(t, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
for s in range(count):
    path = os.path.join(d, f"shard-{s:06}.tar")
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        size, i = 0, 0
        while size < shard_bytes:
            key = f"s{s:06}_{i:04}"
            n = rng.randint(lo, hi)
            off = rng.randrange(0, len(pool) - n)
            cls = rng.randrange(1000)
            add(t, key + ".jpg", pool[off:off + n])
            add(t, key + ".cls", str(cls).encode())
            add(t, key + ".json", json.dumps({"key": key, "cls": cls, "shard": s}).encode())
            size += n + 3 * 512 + 200
            i += 1
        samples += i
    total += os.path.getsize(path)
print(samples, total)
PY
read -r samples in_bytes <"$work/gen.txt"
in_gb=$(python3 -c "print($in_bytes / 1e9)")

# The upload (not part of the job's figures).
bench_run "$work/put.json" put --bucket w9-in --dir "$work/shards" -c 4 --watch-pid $target_pids $proxy_pids
[ "$(json "$work/put.json" 'r["errors"]')" = 0 ] || bench_die "loading the input failed: $(cat "$work/put.json")"

# Reference 1: dd of the same bytes to the same disk, fdatasync.
dd_mib=$(((in_bytes + (1 << 20) - 1) >> 20))
t0=$(date +%s%N)
dd if=/dev/zero of="$work/dd.bin" bs=1M count=$dd_mib conv=fdatasync 2>/dev/null
t1=$(date +%s%N)
rm -f "$work/dd.bin"
dd_gbs=$(python3 -c "print(round($dd_mib * 1048576 / (($t1 - $t0) / 1e9) / 1e9, 3))")

# CPU ticks (utime + stime) of each silod, proxy first: "ticks ticks ...".
cpu_ticks() { local pid; for pid in $all_pids; do awk '{printf "%d ", $14 + $15}' "/proc/$pid/stat"; done; }

# The job: the CLI starts it and waits; a sampler keeps each node's largest VmRSS (and
# reads VmHWM, reset just before the job, at the end).
cat >"$work/spec.json" <<JSON
{"kind": "dsort",
 "input": {"bucket": "w9-in", "prefix": "shard-"},
 "output": {"bucket": "w9-out", "template": "out-{00000..99999}.tar", "shard_size": $out_bytes},
 "order": {"by": "random", "seed": $seed}}
JSON
python3 - "$work/rss.json" "$work/rss.stop" $all_pids <<'PY' &
import json, os, sys, time
out, stop, pids = sys.argv[1], sys.argv[2], sys.argv[3:]
def field(pid, name):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"): return int(line.split()[1])
    except OSError: pass
    return 0
reset = {}
for pid in pids:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f: f.write("5")  # resets VmHWM
        reset[pid] = True
    except OSError: reset[pid] = False
peak = {pid: 0 for pid in pids}
open(stop + ".ready", "w").close()
while not os.path.exists(stop):
    for pid in pids: peak[pid] = max(peak[pid], field(pid, "VmRSS"))
    time.sleep(0.05)
json.dump({pid: {"sampled_kb": peak[pid], "hwm_kb": field(pid, "VmHWM") if reset[pid] else None} for pid in pids},
          open(out, "w"))
PY
sampler=$!
for _ in $(seq 100); do [ -e "$work/rss.stop.ready" ] && break; sleep 0.05; done
cpu0=$(cpu_ticks)
cli_rc=0
"$silo_cli" --json dsort --spec "$work/spec.json" --wait >"$work/cli.json" 2>"$work/cli.err" || cli_rc=$?
cpu1=$(cpu_ticks)
touch "$work/rss.stop"
wait $sampler
job_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/cli.json" 2>/dev/null) ||
  bench_die "silo dsort gave no job (exit $cli_rc): $(cat "$work/cli.json" "$work/cli.err")"
curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$SILO_ACCESS_KEY:$SILO_SECRET_KEY" \
  "$SILO_ENDPOINT/v1/jobs/$job_id" >"$work/job.json" || bench_die "GET /v1/jobs/$job_id failed"
read -r cpu_s cpu_nodes <<<"$(python3 -c "
import sys
d = [(b - a) / $(getconf CLK_TCK) for a, b in zip(map(int, '$cpu0'.split()), map(int, '$cpu1'.split()))]
print(sum(d), '/'.join(f'{x:.1f}' for x in d))")"

# Reference 2: the same reshard by one Python process over the local shards.
python3 - "$work/shards" "$work/pyout" $out_bytes $seed >"$work/py.json" <<'PY'
import io, json, os, random, resource, sys, tarfile, time
src, dst, shard_size, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t0 = time.monotonic()
samples = {}  # key -> [(name, bytes)], members in the input's order
read = 0
for name in sorted(os.listdir(src)):
    with tarfile.open(os.path.join(src, name), "r:") as t:
        for m in t:
            if not m.isfile(): continue
            data = t.extractfile(m).read()
            read += len(data)
            base = os.path.basename(m.name)
            key = os.path.join(os.path.dirname(m.name), base.split(".", 1)[0])
            samples.setdefault(key, []).append((m.name, data))
order = list(samples)
random.Random(seed).shuffle(order)
os.makedirs(dst, exist_ok=True)
def tar_bytes(members): return sum(512 + (len(d) + 511) // 512 * 512 for _, d in members)
shards, written, cur, f, t = 0, 0, 0, None, None
def close():
    global f, t
    t.close(); f.flush(); os.fsync(f.fileno()); f.close()
    f = t = None
for key in order:
    members = samples[key]
    size = tar_bytes(members)
    if t is not None and cur + size + 1024 > shard_size: close()
    if t is None:
        f = open(os.path.join(dst, f"out-{shards:05}.tar"), "wb")
        t = tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT)
        shards, cur = shards + 1, 0
    for name, data in members:
        info = tarfile.TarInfo(name); info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    cur += size
if t is not None: close()
dfd = os.open(dst, os.O_RDONLY); os.fsync(dfd); os.close(dfd)
seconds = time.monotonic() - t0
for n in os.listdir(dst): written += os.path.getsize(os.path.join(dst, n))
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "samples": len(order), "shards": shards, "bytes": written,
                  "cpu_s": ru.ru_utime + ru.ru_stime, "max_rss_mb": ru.ru_maxrss / 1024}))
PY
rm -rf "$work/pyout"

# The figures.
python3 - "$work/job.json" "$work/py.json" "$work/rss.json" "$in_bytes" "$cpu_s" "$proxy_pids" "$target_pids" \
  >"$work/figures.txt" <<'PY'
import json, sys
j, py, rss = (json.load(open(f)) for f in sys.argv[1:4])
in_bytes, cpu_s = int(sys.argv[4]), float(sys.argv[5])
proxy, targets = sys.argv[6].split(), sys.argv[7].split()
d = j.get("dsort", {})
wall = max((j["finished"] - j["started"]) / 1e9, 1e-9) if j.get("finished") else 0
ext, cre = d.get("extraction_ms", 0) / 1e3, d.get("creation_ms", 0) / 1e3
gb = in_bytes / 1e9
def rate(b, s): return f"{b / s / 1e9:.3f}" if s > 0 else "-"
def mb(kb): return round((kb or 0) / 1024)
nodes = [("proxy", p) for p in proxy] + [(f"t{i + 1}", p) for i, p in enumerate(targets)]
print("state", j["state"])
print("detail", json.dumps(j.get("detail", "")))
print("samples", d.get("samples", 0))
print("input_objects", d.get("input_objects", 0))
print("output_shards", d.get("output_shards", 0))
print("largest_shard", d.get("largest_shard", 0))
print("out_bytes", d.get("bytes", 0))
print("wall", f"{wall:.1f}")
print("ext_s", f"{ext:.1f}")
print("cre_s", f"{cre:.1f}")
print("gbs", rate(in_bytes, wall))
print("ext_gbs", rate(in_bytes, ext))
print("cre_gbs", rate(d.get("bytes", 0), cre))
print("cpu_per_gb", f"{cpu_s / gb:.2f}")
print("spilled_mb", f"{d.get('spilled_bytes', 0) / 1e6:.1f}")
print("py_gbs", rate(in_bytes, py["seconds"]))
print("py_s", f"{py['seconds']:.1f}")
print("py_cpu_per_gb", f"{py['cpu_s'] / gb:.2f}")
print("py_rss_mb", round(py["max_rss_mb"]))
print("py_samples", py["samples"])
print("rss_sampled", "/".join(str(mb(rss[p]["sampled_kb"])) for _, p in nodes))
print("rss_hwm", "/".join(str(mb(rss[p]["hwm_kb"])) if rss[p]["hwm_kb"] is not None else "-" for _, p in nodes))
print("rss_targets_max", max(max(mb(rss[p]["sampled_kb"]), mb(rss[p]["hwm_kb"])) for p in targets))
print("rss_proxy", max(max(mb(rss[p]["sampled_kb"]), mb(rss[p]["hwm_kb"])) for p in proxy))
PY
f() { awk -v k="$1" '$1 == k {sub(/^[^ ]+ /, ""); print}' "$work/figures.txt"; }

gib=$(python3 -c "print(f'{$in_bytes / 2**30:.2f}')")
out_mib=$((out_bytes >> 20)); [ $out_mib -gt 0 ] && out_size="${out_mib} MiB" || out_size="$((out_bytes >> 10)) KiB"
what="$shards x ${shard_kib} KiB shards, $samples samples, $gib GiB -> $(f output_shards) x $out_size"
row "W9 dsort random reshard ($what), whole job ($(f wall) s) vs dd fdatasync" GB/s \
  "$(f gbs)" "$dd_gbs" ">=0.5" "$(f cpu_per_gb)" - "$(f rss_targets_max)"
row "W9 dsort whole job vs 1 Python tarfile process, local files, fsync ($(f py_s) s, RSS $(f py_rss_mb) MB)" GB/s \
  "$(f gbs)" "$(f py_gbs)" ">=1" "$(f cpu_per_gb)" "$(f py_cpu_per_gb)" "$(f rss_targets_max)"
row "W9 extraction phase ($(f ext_s) s; reads member lists only: input bytes / s) vs dd" GB/s "$(f ext_gbs)" "$dd_gbs" -
row "W9 ordering and creation phase ($(f cre_s) s; output bytes / s) vs dd" GB/s "$(f cre_gbs)" "$dd_gbs" -
row "W9 upload of the input, silo-bench put -c 4, page_cache (not in the job) vs dd" GB/s \
  "$(json "$work/put.json" 'round(r["gb_per_s"], 3)')" "$dd_gbs" - "$(json "$work/put.json" 'round(r["server"]["cpu_seconds_per_gb"], 2)')"
row "W9 peak RSS during the job, proxy/t1/t2/t3, VmRSS sampled (VmHWM: $(f rss_hwm))" MB "$(f rss_sampled)" - - - - \
  "$(f rss_targets_max)"
row "W9 silod CPU seconds during the job, proxy/t1/t2/t3 (all: $(fmt2 "$cpu_s") s)" s "$cpu_nodes" - -
row "W9 spilled bytes" MB "$(f spilled_mb)" - -
row "W9 samples in the output vs generated" count "$(f samples)" "$samples" ">=1"
bench_report w9_dsort

[ "$cli_rc" = 0 ] && [ "$(f state)" = finished ] || bench_die "job $job_id ended $(f state) (CLI exit $cli_rc): $(f detail)"
[ "$(f samples)" = "$samples" ] || bench_die "job $job_id wrote $(f samples) samples of $samples"
[ "$(f input_objects)" = "$shards" ] || bench_die "job $job_id read $(f input_objects) input shards of $shards"
[ "$(f largest_shard)" -le "$out_bytes" ] || bench_die "job $job_id made a shard of $(f largest_shard) bytes (limit $out_bytes)"
[ "$(f py_samples)" = "$samples" ] || bench_die "the Python reference found $(f py_samples) samples of $samples"
listed=$("$silo_cli" --json ls w9-out 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["objects"])' ||
  echo "?")
[ "$listed" = "$(f output_shards)" ] || bench_die "bucket w9-out holds $listed objects; the job reports $(f output_shards) shards"
