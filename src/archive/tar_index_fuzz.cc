// libFuzzer target for the tar index (tools/fuzz.sh builds and runs it with ASan and
// UBSan): whatever the bytes, index_tar() ends (no crash, no hang, no sanitizer report)
// and every member it reports lies inside them; selections never fail on an index.
#include <cstdint>
#include <cstring>
#include <span>

#include "archive/members.h"
#include "archive/tar_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const silo::archive::ReadAt read = [data, size](uint64_t offset, std::span<char> out) -> silo::Result<size_t> {
    if (offset >= size) return size_t{0};
    const size_t n = std::min<uint64_t>(out.size(), size - offset);
    std::memcpy(out.data(), data + offset, n);
    return n;
  };
  const auto index = silo::archive::index_tar(read, size);
  if (!index) return 0;
  for (const auto& m : index->members()) {
    if (m.offset() > size || m.size() > size - m.offset()) __builtin_trap();
  }
  for (auto mode : {silo::archive::SelectMode::kWdsKey, silo::archive::SelectMode::kSuffix}) {
    if (!silo::archive::select_members(*index, mode, "a")) __builtin_trap();
  }
  return 0;
}
