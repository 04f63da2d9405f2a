#!/usr/bin/env bash
# W5 (PERF.md, the MLPerf Storage rule): simulated accelerators read samples from shards
# (each shard read whole and in order), then compute for a fixed time per batch. For the
# ResNet-50 profile (114,660 B samples, batch 400, 224 ms) and the U-Net3D one (146.6 MB
# samples, batch 7, 323 ms; MLPerf Storage H100 workloads), the most accelerators kept
# >= 90 % busy: Silo direct and gateway (1 proxy + 1 target) against the same shards read
# from local files in the same run. Options: see bench/lib.sh (--duration: per trial).
source "$(dirname "$0")/lib.sh"
bench_start "$@"

if [ $smoke = 1 ]; then shards=2 size=$((8 << 20)); else shards=8 size=$((143 << 20)); fi
bench_cluster 1 2
bench_dataset train $shards $size shard- .tar

common=(--objects $shards --prefix shard- --name-format '{:06}.tar' -d "$duration")
if [ $smoke = 1 ]; then common+=(--accelerators 1 --batch-size 8); fi
g() { json "$1" "$2"; }
for profile in resnet50 unet3d; do
  bench_run "$work/$profile-file.json" accel --profile $profile --path file --dir "$work/www" "${common[@]}"
  bench_run "$work/$profile-direct.json" accel --profile $profile --bucket train "${common[@]}" --watch-pid $target_pids
  bench_run "$work/$profile-gateway.json" accel --profile $profile --bucket train --path gateway "${common[@]}" \
    --watch-pid $target_pids $proxy_pids
  ref=$(g "$work/$profile-file.json" 'r["max_accelerators"]')
  for path in direct gateway; do
    f="$work/$profile-$path.json"
    row "W5 $profile accelerators >= 90% busy, $path" accelerators "$(g "$f" 'r["max_accelerators"]')" "$ref" - \
      "$(g "$f" 'r["server"]["cpu_seconds_per_gb"]')" - -
  done
  row "W5 $profile utilization, 1 accelerator, direct" % "$(g "$work/$profile-direct.json" 'round(100*r["trials"][0]["utilization"],1)')" \
    "$(g "$work/$profile-file.json" 'round(100*r["trials"][0]["utilization"],1)')" -
  row "W5 $profile best read rate, direct" MB/s "$(g "$work/$profile-direct.json" 'round(max(t["mb_per_s"] for t in r["trials"]),1)')" \
    "$(g "$work/$profile-file.json" 'round(max(t["mb_per_s"] for t in r["trials"]),1)')" -
done
bench_report w5_accelerators
