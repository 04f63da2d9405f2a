#include "stats/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace silo::stats {

Counter& Registry::counter(const std::string& name, const std::string& help, const std::string& labels) {
  MutexLock lock(mutex_);
  for (auto& e : counters_) {
    if (e.name == name && e.labels == labels) return e.counter;
  }
  auto& e = counters_.emplace_back();
  e.name = name;
  e.help = help;
  e.labels = labels;
  return e.counter;
}

std::string label(std::string_view key, std::string_view value) {
  std::string out(key);
  out += "=\"";
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(std::max(seconds, 0.0) * 1e6), std::memory_order_relaxed);
}

std::array<uint64_t, Histogram::kBounds.size() + 1> Histogram::cumulative() const {
  std::array<uint64_t, kBounds.size() + 1> out{};
  uint64_t total = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    out[i] = total;
  }
  return out;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help, const std::string& labels) {
  MutexLock lock(mutex_);
  for (auto& e : histograms_) {
    if (e.name == name && e.labels == labels) return e.histogram;
  }
  auto& e = histograms_.emplace_back();
  e.name = name;
  e.help = help;
  e.labels = labels;
  return e.histogram;
}

void Registry::gauge_family(const std::string& name, const std::string& help,
                            std::function<std::vector<LabeledValue>()> read) {
  MutexLock lock(mutex_);
  families_.push_back({name, help, std::move(read)});
}

void Registry::gauge(const std::string& name, const std::string& help, std::function<double()> read) {
  MutexLock lock(mutex_);
  gauges_.push_back({name, help, std::move(read)});
}

std::string Registry::render() const {
  MutexLock lock(mutex_);
  std::string out;
  std::set<std::string> described;
  for (const auto& e : counters_) {
    if (described.insert(e.name).second) {
      out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", e.name, e.help, e.name);
    }
    if (e.labels.empty()) {
      out += fmt::format("{} {}\n", e.name, e.counter.value());
    } else {
      out += fmt::format("{}{{{}}} {}\n", e.name, e.labels, e.counter.value());
    }
  }
  for (const auto& g : gauges_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", g.name, g.help, g.name, g.name, g.read());
  }
  for (const auto& f : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", f.name, f.help, f.name);
    for (const LabeledValue& v : f.read()) out += fmt::format("{}{{{}}} {}\n", f.name, v.labels, v.value);
  }
  for (const auto& h : histograms_) {
    if (described.insert(h.name).second) {
      out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", h.name, h.help, h.name);
    }
    const std::string sep = h.labels.empty() ? "" : ",";
    const auto counts = h.histogram.cumulative();
    for (size_t i = 0; i < Histogram::kBounds.size(); ++i) {
      out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", h.name, h.labels, sep, Histogram::kBounds[i], counts[i]);
    }
    out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", h.name, h.labels, sep, counts.back());
    const std::string labels = h.labels.empty() ? "" : "{" + h.labels + "}";
    out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", h.name, labels, h.histogram.sum(), h.name, labels,
                       counts.back());
  }
  return out;
}

}  // namespace silo::stats
