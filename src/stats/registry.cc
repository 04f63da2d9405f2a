#include "stats/registry.h"

#include <fmt/format.h>

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
  return out;
}

}  // namespace silo::stats
