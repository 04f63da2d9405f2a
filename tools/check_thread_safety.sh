#!/usr/bin/env bash
# Runs clang's thread-safety analysis (-Wthread-safety, as errors) over every Silo
# translation unit of the ci build, with each file's own flags from
# build/ci/compile_commands.json. Exits non-zero on the first file with a violation of a
# GUARDED_BY / REQUIRES / EXCLUDES annotation (src/base/thread_annotations.h, base/mutex.h).
# Syntax only: nothing is built, no other warning is reported.
#   SILO_CHECK_JOBS  parallel clang processes (default: number of cores)
#   SILO_CLANG       the clang++ to use (default: /usr/bin/clang++, Debian's clang 14)
#
# Clang 14 + libstdc++ 12 + Boost 1.74 Asio: Asio enables co_await under clang only for
# the Coroutines TS (<experimental/coroutine>, which libstdc++ lacks), so the C++20
# coroutine support is switched on by hand with -DBOOST_ASIO_HAS_CO_AWAIT=1.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
clang=${SILO_CLANG:-/usr/bin/clang++}
jobs=${SILO_CHECK_JOBS:-$(nproc)}
build=build/ci
if ! command -v "$clang" >/dev/null; then
  echo "check_thread_safety: $clang not found (tools/setup.sh installs clang)" >&2
  exit 2
fi
if [ ! -f $build/compile_commands.json ]; then
  cmake --preset ci >/dev/null
fi
# The generated protobuf headers (wire/ includes them) must exist before parsing.
cmake --build --preset ci --target silo_proto >/dev/null

list=$(mktemp)
trap 'rm -f "$list"' EXIT
python3 - "$repo" "$build/compile_commands.json" "$clang" >"$list" <<'EOF'
import json, shlex, sys
repo, db, clang = sys.argv[1], sys.argv[2], sys.argv[3]
for entry in json.load(open(db)):
    source = entry["file"]
    if not source.startswith(repo + "/") or source.startswith(repo + "/build/"):
        continue  # generated protobuf code
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a == "-c" or a == "-g" or a.startswith(("-W", "-O")):
            pass  # warnings (some GCC-only), optimisation, debug info: not needed here
        else:
            out.append(a)
    out += ["-fsyntax-only", "-DBOOST_ASIO_HAS_CO_AWAIT=1",
            "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]
    # One line per file: the directory, then the command.
    print(shlex.quote(entry["directory"]) + " " + " ".join(shlex.quote(a) for a in out))
EOF
count=$(wc -l <"$list")
start=$(date +%s)
# xargs exits 123 when any command failed; each failing file prints its errors.
if ! xargs -a "$list" -d '\n' -P "$jobs" -n 1 sh -c 'eval "set -- $1"; cd "$1" && shift && "$@"' sh; then
  echo "check_thread_safety: thread-safety violations (see above)" >&2
  exit 1
fi
echo "check_thread_safety: $count files clean ($(($(date +%s) - start)) s)" >&2
