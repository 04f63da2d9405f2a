#include "stats/latency.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace silo::stats {

int LatencyHistogram::bucket_of(uint64_t nanos) {
  constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  if (nanos < kSub) return static_cast<int>(nanos);
  const int exponent = 63 - std::countl_zero(nanos);  // >= kSubBits
  const uint64_t mantissa = (nanos >> (exponent - kSubBits)) & (kSub - 1);
  return static_cast<int>(kSub + static_cast<uint64_t>(exponent - kSubBits) * kSub + mantissa);
}

uint64_t LatencyHistogram::upper_bound(int index) {
  constexpr int kSub = 1 << kSubBits;
  if (index < kSub) return static_cast<uint64_t>(index);
  const int exponent = (index - kSub) / kSub + kSubBits;
  const uint64_t mantissa = static_cast<uint64_t>((index - kSub) % kSub);
  const uint64_t low = (uint64_t{1} << exponent) | (mantissa << (exponent - kSubBits));
  const uint64_t width = uint64_t{1} << (exponent - kSubBits);
  return low + (width - 1);  // no overflow: low + width - 1 <= UINT64_MAX
}

void LatencyHistogram::record(uint64_t nanos) {
  ++counts_[static_cast<size_t>(bucket_of(nanos))];
  ++count_;
  sum_ += nanos;
  min_ = std::min(min_, nanos);
  max_ = std::max(max_, nanos);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t LatencyHistogram::percentile(double fraction) const {
  if (count_ == 0) return 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(upper_bound(static_cast<int>(i)), min_, max_);
  }
  return max_;
}

}  // namespace silo::stats
