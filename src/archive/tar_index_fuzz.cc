// libFuzzer target for the tar index (tools/fuzz.sh builds and runs it with ASan and
// UBSan): whatever the bytes, index_tar() ends (no crash, no hang, no sanitizer report)
// and every member it reports lies inside them; selections never fail on an index.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "archive/members.h"
#include "archive/tar_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto index = silo::archive::index_tar(silo::archive::read_bytes(bytes), size);
  if (!index) return 0;
  for (const auto& m : index->members()) {
    if (m.offset() > size || m.size() > size - m.offset()) __builtin_trap();
  }
  for (auto mode : {silo::archive::SelectMode::kWdsKey, silo::archive::SelectMode::kSuffix}) {
    if (!silo::archive::select_members(*index, mode, "a")) __builtin_trap();
  }
  return 0;
}
