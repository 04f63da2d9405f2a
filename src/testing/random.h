#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace silo::testing {

// A fast seeded RNG (xoshiro256**) for test data. The seed comes from SILO_TEST_SEED
// when set, otherwise from the clock, and is printed so a failing run can be repeated.
// Not thread-safe: give each thread its own (fork() one off the first).
class Random {
 public:
  Random();
  explicit Random(uint64_t seed);

  uint64_t seed() const { return seed_; }
  uint64_t next();
  // Uniform in [low, high]. Requires: low <= high.
  uint64_t uniform(uint64_t low, uint64_t high);
  void fill(std::span<char> out);
  std::string bytes(size_t size);
  // A generator for another thread, seeded from this one (reproducible with the seed).
  Random fork();

 private:
  uint64_t seed_;
  uint64_t state_[4];
};

}  // namespace silo::testing
