#include "testing/random.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

namespace silo::testing {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t initial_seed() {
  if (const char* text = std::getenv("SILO_TEST_SEED"); text != nullptr && *text != '\0') {
    return std::strtoull(text, nullptr, 10);
  }
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace

Random::Random() : Random(initial_seed()) {
  std::cout << "[silo::testing] random seed " << seed_ << " (SILO_TEST_SEED=" << seed_ << " repeats this run)"
            << std::endl;
}

Random::Random(uint64_t seed) : seed_(seed) {
  uint64_t x = seed;
  for (auto& s : state_) s = splitmix64(x);
}

uint64_t Random::next() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

uint64_t Random::uniform(uint64_t low, uint64_t high) {
  const uint64_t span = high - low + 1;
  return span == 0 ? next() : low + next() % span;
}

void Random::fill(std::span<char> out) {
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    const uint64_t v = next();
    std::memcpy(out.data() + i, &v, 8);
  }
  if (i < out.size()) {
    const uint64_t v = next();
    std::memcpy(out.data() + i, &v, out.size() - i);
  }
}

std::string Random::bytes(size_t size) {
  std::string out(size, '\0');
  fill(out);
  return out;
}

Random Random::fork() { return Random(next()); }

}  // namespace silo::testing
