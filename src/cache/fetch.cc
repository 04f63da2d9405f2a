#include "cache/fetch.h"

#include <unistd.h>

namespace silo::cache {

Fetch::~Fetch() {
  if (read_fd_ >= 0) ::close(read_fd_);
}

Fetch::Progress Fetch::progress() const {
  MutexLock lock(mutex_);
  return Progress{record_, written_, is_done_, failure_};
}

void Fetch::set_record(wire::ObjectRecord record) {
  {
    MutexLock lock(mutex_);
    record_ = std::move(record);
  }
  signal_.notify();
}

void Fetch::add_written(uint64_t n) {
  {
    MutexLock lock(mutex_);
    written_ += n;
  }
  signal_.notify();
}

void Fetch::finish(Status status) {
  {
    MutexLock lock(mutex_);
    is_done_ = true;
    failure_ = std::move(status);
  }
  signal_.notify();
}

}  // namespace silo::cache
