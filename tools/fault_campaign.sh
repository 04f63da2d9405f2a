#!/usr/bin/env bash
# Runs the kill -9 fault tests (issue #23 item 4) for many cycles and sums their ledgers:
# each cycle starts a cluster, kills a target under writers (plain, copies=2 and EC 2+1
# PUTs; plain and EC 2+1 multipart completions), restarts it and reads every attempt back.
#
#   tools/fault_campaign.sh [--cycles N] [--build-dir DIR]
#
# Prints cycles, attempts, acknowledged, failed around the kill, and the failures of the
# tests themselves (a lost or changed acknowledged write fails its test). Exit 1 on any.
set -euo pipefail
cycles=10 build=build/ci
while [ $# -gt 0 ]; do
  case $1 in
    --cycles) cycles=$2; shift 2;;
    --build-dir) build=$2; shift 2;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "fault_campaign.sh: unknown option $1" >&2; exit 2;;
  esac
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tests="$repo/$build/test/integration/silo_integration_tests"
[ -x "$tests" ] || { echo "fault_campaign.sh: no $tests (build first)" >&2; exit 2; }
log=$(mktemp /tmp/silo-faults.XXXXXX)
rc=0
"$tests" --gtest_filter='Layouts/CrashTest.*:Layouts/MultipartCrashTest.*' --gtest_repeat="$cycles" >"$log" 2>&1 || rc=$?
python3 - "$log" "$cycles" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
attempts = acknowledged = failed = kills = 0
for m in re.finditer(r"^\[faults\] .*?: (\d+) (?:PUTs|uploads), (\d+) acknowledged, (\d+) failed", text, re.M):
    kills += 1
    attempts += int(m[1]); acknowledged += int(m[2]); failed += int(m[3])
broken = len(re.findall(r"^\[  FAILED  \] Layouts", text, re.M))
print(f"cycles {sys.argv[2]} x 5 layouts: {kills} kills, {attempts} writes attempted, {acknowledged} acknowledged, "
      f"{failed} failed around the kills; tests failed: {broken} (a lost or changed acknowledged write fails its test)")
PY
[ $rc = 0 ] || { echo "failures: see $log" >&2; exit 1; }
rm -f "$log"
