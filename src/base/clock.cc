#include "base/clock.h"

namespace silo {
namespace {
class RealClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  int64_t unix_nanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};
}  // namespace

Clock& Clock::real() {
  static RealClock clock;
  return clock;
}

}  // namespace silo
