#include "progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "context.h"

namespace silo::cli {
namespace {

constexpr int kBarWidth = 30;
constexpr std::chrono::milliseconds kRedrawEvery{100};

}  // namespace

std::string human_duration(std::chrono::seconds duration) {
  const int64_t s = duration.count();
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Progress::Progress(std::string label, uint64_t total_items, uint64_t total_bytes, bool is_drawn,
                   std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      is_drawn_(is_drawn),
      started_(std::chrono::steady_clock::now()),
      total_items_(total_items),
      total_bytes_(total_bytes) {}

void Progress::add(uint64_t items, uint64_t bytes) {
  MutexLock lock(mutex_);
  items_ += items;
  bytes_ += bytes;
  draw(false);
}

void Progress::set(uint64_t items, uint64_t total_items, uint64_t bytes,
                   uint64_t bytes_per_second) {
  MutexLock lock(mutex_);
  items_ = items;
  total_items_ = total_items;
  bytes_ = bytes;
  rate_ = bytes_per_second;
  draw(false);
}

void Progress::print_line(const std::string& line) {
  MutexLock lock(mutex_);
  if (is_drawn_ && !is_finished_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
  if (!is_finished_) draw(true);
}

void Progress::finish() {
  MutexLock lock(mutex_);
  if (is_finished_) return;
  draw(true);
  if (is_drawn_) std::fprintf(stderr, "\n");
  is_finished_ = true;
}

void Progress::draw(bool is_forced) {
  if (!is_drawn_ || is_finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!is_forced && now - last_draw_ < kRedrawEvery) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - started_).count();
  const double rate =
      rate_ != 0 ? static_cast<double>(rate_) : (elapsed > 0 ? bytes_ / elapsed : 0);
  // The fraction done: by bytes when their total is known, else by items.
  double fraction = 0;
  if (total_bytes_ > 0) {
    fraction = static_cast<double>(bytes_) / static_cast<double>(total_bytes_);
  } else if (total_items_ > 0) {
    fraction = static_cast<double>(items_) / static_cast<double>(total_items_);
  }
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kBarWidth) bar += '>';
  bar.resize(kBarWidth, ' ');
  std::string eta = "--";
  if (fraction > 0 && fraction < 1 && elapsed > 0.5) {
    eta = human_duration(
        std::chrono::seconds(static_cast<int64_t>(elapsed * (1 - fraction) / fraction)));
  } else if (fraction >= 1) {
    eta = "0s";
  }
  const std::string items =
      total_items_ > 0 ? fmt::format("{}/{}", items_, total_items_) : fmt::format("{}", items_);
  std::fprintf(stderr, "\r\033[K%s [%s] %3.0f%% %s %s %s %s/s ETA %s", label_.c_str(), bar.c_str(),
               fraction * 100, items.c_str(), unit_.c_str(), human_bytes(bytes_).c_str(),
               human_bytes(static_cast<uint64_t>(rate)).c_str(), eta.c_str());
  std::fflush(stderr);
}

}  // namespace silo::cli
