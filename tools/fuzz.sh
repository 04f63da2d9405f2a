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
#   http_head   src/http/head_fuzz.cc           request heads as the server reads them
#               (Beast's parser with its limits, then what the server makes of them)
#   archive     src/archive/archive_fuzz.cc     tgz, tar.lz4 and zip indexes and member
#               reads (libarchive, zlib); seeds are archives made when the script runs
#   records     src/wire/records_fuzz.cc        persisted records (object, node map,
#               bucket map, upload, archive index) decoded as from disk, then rendered;
#               seeds are written by the target itself (SILO_RECORDS_SEEDS)
# Each grows its corpus in build/fuzz/corpus-TARGET; a crash is left as
# build/fuzz/crash-* (rerun one: build/fuzz/TARGET_fuzz build/fuzz/crash-...), and the
# script fails.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tar_index s3_parsers policy range http_head archive records)
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
    # Boost 1.74 finds coroutines for clang only with libc++: say that libstdc++ has them.
    # message.cc holds a coroutine, which clang 14 cannot assemble under UBSan ("cannot
    # represent a difference across sections"): it gets ASan only.
    http_head)
      local asio=(-DBOOST_ASIO_HAS_CO_AWAIT=1 -DBOOST_ASIO_HAS_STD_COROUTINE=1 -DBOOST_BEAST_USE_STD_STRING_VIEW
                  -DBOOST_ASIO_NO_DEPRECATED -include utility)
      clang++ "${flags[@]/-fsanitize=fuzzer,address,undefined/-fsanitize=fuzzer-no-link,address}" "${asio[@]}" \
        -c src/http/message.cc -o "$out/http_message.o"
      clang++ "${flags[@]}" "${asio[@]}" src/http/head_fuzz.cc src/http/range.cc "$out/http_message.o" "${libs[@]}" \
        -o "$out/http_head_fuzz" ;;
    archive) clang++ "${flags[@]}" src/archive/archive_fuzz.cc $(sources_of archive) "${libs[@]}" -larchive -lz \
               -o "$out/archive_fuzz" ;;
    records) clang++ "${flags[@]}" src/wire/records_fuzz.cc $(sources_of wire | grep -v job_json) \
               "${libs[@]}" -lcrypto -o "$out/records_fuzz" ;;
    *) echo "fuzz.sh: no target $name (tar_index, s3_parsers, policy, range, http_head, archive, records)" >&2; exit 2 ;;
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
  elif [ "$name" = archive ]; then
    # The first byte picks the format (archive_fuzz.cc): 0 tgz, 1 tar.lz4, 2 zip.
    python3 - "$repo/$corpus" <<'PY'
import gzip, io, os, sys, tarfile, zipfile
out = sys.argv[1]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    for name, data in (("a/k1.jpg", os.urandom(3000)), ("a/k1.cls", b"7"), ("b/" + "n" * 120 + ".bin", b"x" * 700)):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
tar = buf.getvalue()
open(os.path.join(out, "seed-tgz"), "wb").write(b"\0" + gzip.compress(tar))
z = io.BytesIO()
with zipfile.ZipFile(z, "w") as f:
    f.writestr("k1.jpg", os.urandom(2000), compress_type=zipfile.ZIP_STORED)
    f.writestr("k1.txt", b"hello " * 200, compress_type=zipfile.ZIP_DEFLATED)
    f.writestr("dir/", b"")
open(os.path.join(out, "seed-zip"), "wb").write(b"\2" + z.getvalue())
open(os.path.join(out, "seed-tar-sniffed"), "wb").write(b"\3" + tar)
PY
    if command -v lz4 >/dev/null; then
      python3 -c 'import sys; sys.stdout.buffer.write(bytes([1]))' >"$corpus/seed-lz4"
      python3 -c 'import io,tarfile,sys
b=io.BytesIO(); t=tarfile.open(fileobj=b,mode="w"); i=tarfile.TarInfo("k.bin"); i.size=5; t.addfile(i,io.BytesIO(b"hello")); t.close(); sys.stdout.buffer.write(b.getvalue())' |
        lz4 -q -c >>"$corpus/seed-lz4"
    fi
  elif [ "$name" = records ]; then
    SILO_RECORDS_SEEDS="$repo/$corpus" "$out/records_fuzz" -runs=0 >/dev/null 2>&1
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
