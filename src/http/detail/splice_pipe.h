#pragma once

#include <cstdint>
#include <utility>

#include "base/result.h"

namespace silo::http::detail {

// A pipe that relays spliced bodies (ClientCall::splice_body), kept per thread between
// relays when it is left empty: making one and growing it to 1 MiB cost more than
// splicing a 100 KiB body saves. Closed when dropped.
class SplicePipe {
 public:
  SplicePipe(SplicePipe&& other) noexcept
      : fds_{std::exchange(other.fds_[0], -1), std::exchange(other.fds_[1], -1)}, capacity_(other.capacity_) {}
  SplicePipe& operator=(SplicePipe&&) = delete;
  ~SplicePipe();

  // One of this thread's idle pipes, else a new one (1 MiB when the kernel allows).
  static Result<SplicePipe> take();
  // Keeps `pipe`, which must be empty, for the next relay on this thread (a few at most).
  static void give_back(SplicePipe pipe);

  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  uint64_t capacity() const { return capacity_; }

 private:
  SplicePipe() = default;

  int fds_[2] = {-1, -1};
  uint64_t capacity_ = 65536;
};

}  // namespace silo::http::detail
