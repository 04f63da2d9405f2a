#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace silo::stats {

// A monotonically growing count. Lock-free; lives as long as its Registry.
class Counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A Prometheus histogram of durations in seconds over fixed buckets (kBounds). Lock-free.
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                  0.25,  0.5,    1,     2.5,  5,     10,  30};
  void observe(double seconds);
  // Cumulative counts per bound (and +Inf last), the sum and the count, for rendering.
  std::array<uint64_t, kBounds.size() + 1> cumulative() const;
  double sum() const { return static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6; }

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> sum_micros_{0};
};

// `key="value"`, the value escaped as the Prometheus text format wants (\\, \", \n).
std::string label(std::string_view key, std::string_view value);

// One sample of a gauge family: `labels` is `k="v",...`.
struct LabeledValue {
  std::string labels;
  double value = 0;
};

// The metrics of one node, rendered as Prometheus text on GET /metrics. Counters are
// registered once (usually at startup) and then updated lock-free; gauges are read by a
// callback at render time. Thread-safe.
class Registry {
 public:
  // `name` is a Prometheus metric name (silo_..._total); `labels` is "" or `k="v",...`.
  // Returns the same counter for the same name and labels.
  Counter& counter(const std::string& name, const std::string& help, const std::string& labels = "");
  void gauge(const std::string& name, const std::string& help, std::function<double()> read);
  // Gauges whose label sets are known only when read (one per mountpath, per job).
  void gauge_family(const std::string& name, const std::string& help,
                    std::function<std::vector<LabeledValue>()> read);
  // Returns the same histogram for the same name and labels.
  Histogram& histogram(const std::string& name, const std::string& help, const std::string& labels = "");
  std::string render() const;

 private:
  struct CounterEntry {
    std::string name, help, labels;
    Counter counter;
  };
  struct GaugeEntry {
    std::string name, help;
    std::function<double()> read;
  };
  struct FamilyEntry {
    std::string name, help;
    std::function<std::vector<LabeledValue>()> read;
  };
  struct HistogramEntry {
    std::string name, help, labels;
    Histogram histogram;
  };
  mutable Mutex mutex_;
  std::deque<CounterEntry> counters_ GUARDED_BY(mutex_);  // deque: stable addresses
  std::vector<GaugeEntry> gauges_ GUARDED_BY(mutex_);
  std::vector<FamilyEntry> families_ GUARDED_BY(mutex_);
  std::deque<HistogramEntry> histograms_ GUARDED_BY(mutex_);
};

}  // namespace silo::stats
