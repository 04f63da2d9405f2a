#pragma once

#include <chrono>

namespace silo {

// Time source, injectable so tests can use a fake one.
class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Wall-clock time in nanoseconds since the Unix epoch (object mtime, atime).
  virtual int64_t unix_nanos() const = 0;
  static Clock& real();
};

}  // namespace silo
