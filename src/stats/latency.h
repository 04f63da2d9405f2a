#pragma once

#include <array>
#include <cstdint>

namespace silo::stats {

// A log-linear histogram of durations in nanoseconds (the idea of HdrHistogram): exact
// below 64 ns, then 64 buckets per power of two, so any percentile is within 1/64
// (1.6 %) of the true value, in a fixed 30 KB with no allocation per sample. One writer;
// merge() the histograms of several writers to read them together.
class LatencyHistogram {
 public:
  void record(uint64_t nanos);
  void merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0 : static_cast<double>(sum_) / static_cast<double>(count_); }
  // The smallest recorded value v such that at least `fraction` of the samples are <= v
  // (up to the bucket's width); 0 when empty. fraction in [0, 1].
  uint64_t percentile(double fraction) const;

  static constexpr int kSubBits = 6;
  static constexpr int kBuckets = (1 << kSubBits) * (64 - kSubBits + 1);
  // Bucket index of `nanos`, and the largest value that falls in bucket `index`.
  static int bucket_of(uint64_t nanos);
  static uint64_t upper_bound(int index);

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace silo::stats
