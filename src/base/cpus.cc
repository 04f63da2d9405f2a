#include "base/cpus.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace silo::cpus {
namespace {

std::optional<uint64_t> number_at(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

}  // namespace

std::optional<uint32_t> quota_of(std::string_view cpu_max) {
  const std::optional<uint64_t> quota = number_at(cpu_max);  // "max" reads as none
  const std::optional<uint64_t> period = number_at(cpu_max);
  if (!quota || !period || *period == 0) return std::nullopt;
  const uint64_t whole = (*quota + *period - 1) / *period;
  return static_cast<uint32_t>(std::clamp<uint64_t>(whole, 1, UINT32_MAX));
}

uint32_t usable() {
  uint32_t count = 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) count = static_cast<uint32_t>(std::max(1, CPU_COUNT(&set)));
  std::ifstream file("/sys/fs/cgroup/cpu.max");
  std::stringstream text;
  text << file.rdbuf();
  if (const std::optional<uint32_t> quota = quota_of(text.str())) count = std::min(count, *quota);
  return count;
}

}  // namespace silo::cpus
