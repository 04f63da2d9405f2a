#include "ec/reed_solomon.h"

#include <gtest/gtest.h>

#include <random>

namespace silo::ec {
namespace {

struct Slices {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::span<uint8_t>> spans() {
    std::vector<std::span<uint8_t>> out;
    for (auto& b : bytes) out.emplace_back(b);
    return out;
  }
};

// k random data slices and m parity slices encoded from them.
Slices encoded(const ReedSolomon& rs, size_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  Slices s;
  s.bytes.assign(rs.data_slices() + rs.parity_slices(), std::vector<uint8_t>(length));
  for (int i = 0; i < rs.data_slices(); ++i) {
    for (auto& b : s.bytes[i]) b = static_cast<uint8_t>(rng());
  }
  std::vector<std::span<const uint8_t>> data;
  for (int i = 0; i < rs.data_slices(); ++i) data.emplace_back(s.bytes[i]);
  std::vector<std::span<uint8_t>> parity;
  for (int i = 0; i < rs.parity_slices(); ++i) parity.emplace_back(s.bytes[rs.data_slices() + i]);
  EXPECT_TRUE(rs.encode(data, parity).is_ok());
  return s;
}

TEST(ReedSolomonTest, EveryChoiceOfUpToMLostSlicesIsRebuilt) {
  for (const auto& [k, m] : {std::pair{2, 1}, std::pair{4, 2}, std::pair{6, 3}, std::pair{10, 4}}) {
    auto rs = ReedSolomon::create(k, m);
    ASSERT_TRUE(rs.has_value());
    const int n = k + m;
    const Slices original = encoded(*rs, 4099, static_cast<uint32_t>(k * 100 + m));  // odd length
    // Every subset of at most m slices lost.
    for (uint32_t mask = 1; mask < (1u << n); ++mask) {
      if (__builtin_popcount(mask) > m) continue;
      Slices damaged = original;
      std::vector<bool> present(n, true);
      for (int i = 0; i < n; ++i) {
        if (mask & (1u << i)) {
          present[i] = false;
          std::fill(damaged.bytes[i].begin(), damaged.bytes[i].end(), 0xee);
        }
      }
      ASSERT_TRUE(rs->reconstruct(damaged.spans(), present).is_ok()) << k << "+" << m << " mask " << mask;
      ASSERT_EQ(damaged.bytes, original.bytes) << k << "+" << m << " lost mask " << mask;
    }
  }
}

TEST(ReedSolomonTest, MoreThanMLostIsDataLossNotGarbage) {
  auto rs = ReedSolomon::create(4, 2);
  ASSERT_TRUE(rs.has_value());
  Slices s = encoded(*rs, 1000, 7);
  std::vector<bool> present = {false, true, false, true, false, true};
  const Status lost = rs->reconstruct(s.spans(), present);
  EXPECT_EQ(lost.code(), Code::kDataLoss) << lost;
}

TEST(ReedSolomonTest, BadShapesAreRefused) {
  EXPECT_FALSE(ReedSolomon::create(0, 2).has_value());
  EXPECT_FALSE(ReedSolomon::create(4, 0).has_value());
  EXPECT_FALSE(ReedSolomon::create(30, 3).has_value());
  auto rs = ReedSolomon::create(2, 1);
  ASSERT_TRUE(rs.has_value());
  std::vector<uint8_t> a(10), b(11), p(10);
  std::vector<std::span<const uint8_t>> data = {a, b};
  std::vector<std::span<uint8_t>> parity = {p};
  EXPECT_EQ(rs->encode(data, parity).code(), Code::kInvalidArgument);
  std::vector<std::span<const uint8_t>> one = {a};
  EXPECT_EQ(rs->encode(one, parity).code(), Code::kInvalidArgument);
}

TEST(ReedSolomonTest, ParityOfZerosIsZeroAndEmptySlicesWork) {
  auto rs = ReedSolomon::create(3, 2);
  ASSERT_TRUE(rs.has_value());
  std::vector<uint8_t> d0(64, 0), d1(64, 0), d2(64, 0), p0(64, 1), p1(64, 1);
  std::vector<std::span<const uint8_t>> data = {d0, d1, d2};
  std::vector<std::span<uint8_t>> parity = {p0, p1};
  ASSERT_TRUE(rs->encode(data, parity).is_ok());
  EXPECT_EQ(p0, std::vector<uint8_t>(64, 0));
  EXPECT_EQ(p1, std::vector<uint8_t>(64, 0));
  std::vector<std::span<const uint8_t>> empty_data(3);
  std::vector<std::span<uint8_t>> empty_parity(2);
  EXPECT_TRUE(rs->encode(empty_data, empty_parity).is_ok());
}

}  // namespace
}  // namespace silo::ec
