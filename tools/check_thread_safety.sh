#!/usr/bin/env bash
# Runs clang's thread-safety analysis (-Wthread-safety, as errors) over every Silo
# translation unit of the ci build that can see the annotation macros (it includes
# base/thread_annotations.h, directly or through project headers), each with its own flags
# from build/ci/compile_commands.json. Exits non-zero when a file breaks a GUARDED_BY /
# REQUIRES / EXCLUDES annotation (base/thread_annotations.h, base/mutex.h) or does not
# parse. Syntax only: nothing is built, and no other warning is reported.
#   SILO_CHECK_JOBS  parallel clang processes (default: number of cores)
#   SILO_CLANG       the clang++ to use (default: /usr/bin/clang++, Debian's clang 14)
#
# Clang 14 + libstdc++ 12 + Boost 1.74: Asio turns co_await on under clang only for the
# Coroutines TS (<experimental/coroutine>, which libstdc++ lacks), so the C++20 coroutine
# support is named by hand (-DBOOST_ASIO_HAS_CO_AWAIT=1). docs/adr/0016.
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
# A current compile_commands.json (files come and go) and current generated protobuf
# headers (wire/ includes them): a configure and a protoc run, seconds when up to date.
cmake --preset ci >/dev/null
cmake --build --preset ci --target silo_proto >/dev/null

list=$(mktemp)
trap 'rm -f "$list"' EXIT
python3 - "$repo" "$build/compile_commands.json" "$clang" >"$list" <<'PY'
import json, pathlib, re, shlex, sys

repo, db, clang = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2], sys.argv[3]
annotations = repo / "src/base/thread_annotations.h"
include_re = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
includes = {}
# Files left out, each with its reason. Only for what clang 14 cannot parse, never to
# silence a finding.
SKIPPED = set()


def project_includes(path):
    if path not in includes:
        try:
            names = include_re.findall(path.read_text(errors="replace"))
        except OSError:
            names = []
        found = []
        for name in names:
            for base in (path.parent, repo / "src"):
                candidate = (base / name).resolve()
                if candidate.is_file():
                    found.append(candidate)
                    break
        includes[path] = found
    return includes[path]


def sees_annotations(source):
    """Whether `source` includes thread_annotations.h, directly or not: a file that cannot
    see the macros has nothing for the analysis to check."""
    seen, todo = set(), [source]
    while todo:
        path = todo.pop()
        if path == annotations:
            return True
        if path not in seen:
            seen.add(path)
            todo.extend(project_includes(path))
    return False


for entry in json.load(open(db)):
    source = pathlib.Path(entry["file"]).resolve()
    if repo not in source.parents or repo / "build" in source.parents:
        continue  # generated protobuf code
    if not sees_annotations(source) or source.relative_to(repo).as_posix() in SKIPPED:
        continue
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a in ("-c", "-g") or a.startswith(("-W", "-O")):
            pass  # warnings (some GCC-only), optimisation, debug info: not needed here
        else:
            out.append(a)
    out += ["-fsyntax-only", "-DBOOST_ASIO_HAS_CO_AWAIT=1",
            "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]
    # One line per file: its directory, then the command, shell-quoted.
    print(" ".join(shlex.quote(a) for a in [entry["directory"]] + out))
PY
count=$(wc -l <"$list")
start=$(date +%s)
# xargs exits non-zero when any command failed; each failing file has printed its errors.
if ! xargs -a "$list" -d '\n' -P "$jobs" -n 1 sh -c 'eval "set -- $1"; cd "$1" && shift && exec "$@"' sh; then
  echo "check_thread_safety: thread-safety violations or parse errors (see above)" >&2
  exit 1
fi
echo "check_thread_safety: $count files clean ($(($(date +%s) - start)) s)" >&2
