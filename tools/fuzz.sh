#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a while:
#   tools/fuzz.sh [SECONDS] [TARGET...]   (default 60 s per target, every target)
# Targets (seed corpora in test/fuzz/, README there):
#   tar_index   src/archive/tar_index_fuzz.cc   the tar index (docs/shards.md); seeds are
#               tars GNU tar writes in its three formats
#   s3_parsers  src/s3/s3_parsers_fuzz.cc       SigV4/SigV2, aws-chunked, XML documents,
#               tagging header, routing, x-amz-copy-source
#   policy      src/access/policy_fuzz.cc       bucket policies, the native API's JSON
#               documents, brace templates
#   range       src/http/range_fuzz.cc          Range headers
# Each grows its corpus in build/fuzz/corpus-TARGET; a crash is left as
# build/fuzz/crash-* (rerun one: build/fuzz/TARGET_fuzz build/fuzz/crash-...), and the
# script fails.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tar_index s3_parsers policy range)
out=build/fuzz
mkdir -p "$out"
# The generated protobuf code and Silo's base library come from the ci build (GCC); the
# fuzzed sources are compiled by clang with the sanitizers.
cmake --preset ci >/dev/null
cmake --build --preset ci --target silo_proto silo_base >/dev/null
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Isrc -isystem build/ci/proto -DFMT_SHARED -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB)
libs=(build/ci/proto/libsilo_proto.a build/ci/src/base/libsilo_base.a -lprotobuf -lfmt -lspdlog)
# A module's library sources: its .cc files but tests and fuzz targets.
sources_of() {
  find "src/$1" -maxdepth 2 -name '*.cc' ! -name '*_test.cc' ! -name '*_fuzz.cc' | sort
}

build() {
  local name=$1
  case $name in
    tar_index) clang++ "${flags[@]}" src/archive/tar_index_fuzz.cc src/archive/tar_reader.cc src/archive/members.cc \
                 "${libs[@]}" -o "$out/tar_index_fuzz" ;;
    s3_parsers) clang++ "${flags[@]}" src/s3/s3_parsers_fuzz.cc $(sources_of s3) "${libs[@]}" -lcrypto -lisal -lexpat \
                  -o "$out/s3_parsers_fuzz" ;;
    # job_json.cc is left out: clang 14 refuses its optional<nested struct>.emplace()
    # (default member initializers of a nested class), and no fuzzed parser needs it.
    policy) clang++ "${flags[@]}" src/access/policy_fuzz.cc src/access/policy.cc $(sources_of wire | grep -v job_json) \
              "${libs[@]}" -lcrypto -o "$out/policy_fuzz" ;;
    range) clang++ "${flags[@]}" src/http/range_fuzz.cc src/http/range.cc "${libs[@]}" -o "$out/range_fuzz" ;;
    *) echo "fuzz.sh: no target $name (tar_index, s3_parsers, policy, range)" >&2; exit 2 ;;
  esac
}

seed() {
  local name=$1 corpus=$2
  if [ "$name" = tar_index ]; then
    local tmp
    tmp=$(mktemp -d)
    mkdir -p "$tmp/d/sub"
    printf 'hello' >"$tmp/d/a.txt"
    head -c 3000 /dev/urandom >"$tmp/d/sub/$(printf 'n%.0s' {1..120}).bin"
    for format in gnu pax ustar; do
      (cd "$tmp" && tar --format=$format -cf "$repo/$corpus/seed-$format.tar" d 2>/dev/null) || true
    done
    rm -rf "$tmp"
  else
    cp test/fuzz/"$name"/seed-* "$corpus"/
  fi
}

for name in "${targets[@]}"; do
  build "$name"
  corpus=$out/corpus-$name
  mkdir -p "$corpus"
  seed "$name" "$corpus"
  echo "fuzz.sh: $name for ${seconds}s"
  log=$out/$name.log
  if ! (cd "$out" && ./"${name}_fuzz" -max_total_time="$seconds" -max_len=65536 -timeout=5 -print_final_stats=1 \
          "corpus-$name" >"$name.log" 2>&1); then
    tail -40 "$log" >&2
    echo "fuzz.sh: $name failed (log $log)" >&2
    exit 1
  fi
  grep -E "^(stat::number_of_executed_runs|Done)" "$log" || true
done
