#include "base/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fmt/format.h>

namespace silo::hash {

uint64_t xxh64(std::string_view data, uint64_t seed) {
  return XXH64(data.data(), data.size(), seed);
}

std::string xxh128_hex(std::string_view data) {
  const XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

uint64_t xxh3(std::span<const char> data) { return XXH3_64bits(data.data(), data.size()); }

Xxh3Stream::Xxh3Stream() : state_(XXH3_createState()) {
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}
Xxh3Stream::~Xxh3Stream() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Xxh3Stream::update(std::span<const char> data) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}
uint64_t Xxh3Stream::digest() const {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_));
}

std::string to_hex(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::string u64_hex(uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace silo::hash
