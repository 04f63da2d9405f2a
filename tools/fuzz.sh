#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a while:
#   tools/fuzz.sh [SECONDS]   (default 60 per target)
# Targets: src/archive/tar_index_fuzz.cc (the tar index; docs/shards.md). The corpus
# starts from tars GNU tar writes in its three formats; crashes are left as
# build/fuzz/crash-* (rerun one: build/fuzz/tar_index_fuzz build/fuzz/crash-...).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=${1:-60}
out=build/fuzz
mkdir -p "$out/corpus"
# The generated protobuf code and Silo's base library come from the ci build (GCC); the
# fuzzed sources are compiled by clang with the sanitizers.
cmake --preset ci >/dev/null
cmake --build --preset ci --target silo_proto silo_base >/dev/null
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Isrc -isystem build/ci/proto -DFMT_SHARED -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB)
clang++ "${flags[@]}" src/archive/tar_index_fuzz.cc src/archive/tar_reader.cc src/archive/members.cc \
  build/ci/proto/libsilo_proto.a build/ci/src/base/libsilo_base.a -lprotobuf -lfmt -lspdlog \
  -o "$out/tar_index_fuzz"
seed=$(mktemp -d)
trap 'rm -rf "$seed"' EXIT
mkdir -p "$seed/d/sub"
printf 'hello' >"$seed/d/a.txt"
head -c 3000 /dev/urandom >"$seed/d/sub/$(printf 'n%.0s' {1..120}).bin"
for format in gnu pax ustar; do
  (cd "$seed" && tar --format=$format -cf "$repo/$out/corpus/seed-$format.tar" d 2>/dev/null) || true
done
cd "$out"
./tar_index_fuzz -max_total_time="$seconds" -max_len=65536 -timeout=5 corpus
