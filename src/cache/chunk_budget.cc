#include "cache/chunk_budget.h"

namespace silo::cache {

http::Awaitable<void> ChunkBudget::take(size_t n, size_t budget) {
  for (;;) {
    const uint64_t seen = signal_.count();
    {
      MutexLock lock(mutex_);
      if (in_use_ + n <= budget) {
        in_use_ += n;
        co_return;
      }
    }
    co_await signal_.wait(seen);
  }
}

void ChunkBudget::give_back(size_t n) {
  {
    MutexLock lock(mutex_);
    in_use_ -= n;
  }
  signal_.notify();
}

}  // namespace silo::cache
