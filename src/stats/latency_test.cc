#include "stats/latency.h"

#include <gtest/gtest.h>

#include <random>

namespace silo::stats {
namespace {

TEST(LatencyHistogramTest, EmptyAnswersZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(0.99), 0u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 50; ++v) h.record(v);
  EXPECT_EQ(h.percentile(0.5), 25u);
  EXPECT_EQ(h.percentile(1.0), 50u);
  EXPECT_EQ(h.percentile(0.0), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 25.5);
}

TEST(LatencyHistogramTest, BucketsCoverEveryValueInOrder) {
  uint64_t previous = 0;
  for (int i = 1; i < LatencyHistogram::kBuckets; ++i) {
    const uint64_t bound = LatencyHistogram::upper_bound(i);
    ASSERT_GT(bound, previous) << i;
    ASSERT_EQ(LatencyHistogram::bucket_of(bound), i);
    ASSERT_EQ(LatencyHistogram::bucket_of(previous + 1), i);
    previous = bound;
  }
  EXPECT_EQ(previous, UINT64_MAX);
}

TEST(LatencyHistogramTest, PercentilesWithinOneBucketOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(13.0, 1.5);  // ~0.4 ms median, long tail
  std::vector<uint64_t> values;
  LatencyHistogram a, b;
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    (i % 2 == 0 ? a : b).record(v);
  }
  a.merge(b);
  std::sort(values.begin(), values.end());
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    const uint64_t exact = values[static_cast<size_t>(std::ceil(p * values.size())) - 1];
    const uint64_t got = a.percentile(p);
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * (1.0 + 1.0 / 64) + 1) << p;
  }
  EXPECT_EQ(a.count(), 100000u);
  EXPECT_EQ(a.max(), values.back());
  EXPECT_EQ(a.min(), values.front());
}

}  // namespace
}  // namespace silo::stats
