#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/mutex.h"

namespace silo::cli {

// A progress bar with counts, bytes, rate and ETA, redrawn in place on stderr (at most
// ten times a second) when `is_drawn`; does nothing otherwise, so callers print plain
// lines instead. Thread-safe: transfer workers call add() concurrently.
class Progress {
 public:
  // `unit` names the items ("objects", "shards").
  Progress(std::string label, uint64_t total_items, uint64_t total_bytes, bool is_drawn,
           std::string unit = "objects");
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(uint64_t items, uint64_t bytes);
  // Absolute figures (a job's progress as the server reports it); 0 rate: measure it.
  void set(uint64_t items, uint64_t total_items, uint64_t bytes, uint64_t bytes_per_second);
  // Prints `line` on stdout above the bar.
  void print_line(const std::string& line);
  // Draws the last state and ends the bar's line; later calls do nothing.
  void finish();
  const std::string& label() const { return label_; }

 private:
  void draw(bool is_forced) REQUIRES(mutex_);

  Mutex mutex_;
  const std::string label_;
  const std::string unit_;
  const bool is_drawn_;
  const std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_draw_ GUARDED_BY(mutex_) = {};
  uint64_t items_ GUARDED_BY(mutex_) = 0;
  uint64_t total_items_ GUARDED_BY(mutex_) = 0;
  uint64_t bytes_ GUARDED_BY(mutex_) = 0;
  uint64_t total_bytes_ GUARDED_BY(mutex_) = 0;
  uint64_t rate_ GUARDED_BY(mutex_) = 0;  // server-reported bytes/s, or 0
  bool is_finished_ GUARDED_BY(mutex_) = false;
};

// "1m05s", "12s"
std::string human_duration(std::chrono::seconds duration);

}  // namespace silo::cli
