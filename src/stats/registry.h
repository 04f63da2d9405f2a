#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
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

// The metrics of one node, rendered as Prometheus text on GET /metrics. Counters are
// registered once (usually at startup) and then updated lock-free; gauges are read by a
// callback at render time. Thread-safe.
class Registry {
 public:
  // `name` is a Prometheus metric name (silo_..._total); `labels` is "" or `k="v",...`.
  // Returns the same counter for the same name and labels.
  Counter& counter(const std::string& name, const std::string& help, const std::string& labels = "");
  void gauge(const std::string& name, const std::string& help, std::function<double()> read);
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
  mutable Mutex mutex_;
  std::deque<CounterEntry> counters_ GUARDED_BY(mutex_);  // deque: stable addresses
  std::vector<GaugeEntry> gauges_ GUARDED_BY(mutex_);
};

}  // namespace silo::stats
