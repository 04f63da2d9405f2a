# Every outside library is found here, once (ENV.md lists the lookups that work).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED CONFIG)
find_package(spdlog REQUIRED CONFIG)
find_package(RocksDB REQUIRED CONFIG)
find_package(OpenSSL REQUIRED)
find_package(Protobuf REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(GTest REQUIRED CONFIG)
find_package(benchmark REQUIRED CONFIG)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
find_package(EXPAT REQUIRED)
# archive/ only (tools/check_deps.py): compressed shards. libarchive reads LZ4 frames (and
# writes the tests' archives); zlib inflates gzip streams and zip members, because
# libarchive 3.6 does not check a gzip stream's trailing CRC-32 and length.
find_package(LibArchive REQUIRED)
find_package(ZLIB REQUIRED)
