#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

// The one entry point to libxxhash.
namespace silo::hash {

// XXH64 of `data` with `seed`. Stable across machines and versions: placement and
// on-disk paths depend on it, so it must never change.
uint64_t xxh64(std::string_view data, uint64_t seed = 0);

// XXH3 128-bit as 32 lowercase hex digits (object file names on disk).
std::string xxh128_hex(std::string_view data);

// XXH3-64 of `data` in one call: Xxh3Stream's digest of the same bytes.
uint64_t xxh3(std::span<const char> data);

// Streaming XXH3-64, the integrity checksum of object bytes.
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  void update(std::span<const char> data);
  uint64_t digest() const;

 private:
  void* state_;
};

std::string to_hex(std::span<const unsigned char> bytes);
std::string u64_hex(uint64_t value);  // 16 lowercase hex digits

}  // namespace silo::hash
