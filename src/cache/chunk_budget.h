#pragma once

#include <cstddef>
#include <mutex>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "async/signal.h"
#include "http/message.h"

namespace silo::cache {

// Memory for the chunks of parallel range GETs, shared by all fetches of a node: a fetch
// takes its batch's chunks before it asks for them and gives them back once written. One
// per Cache. Thread-safe.
class ChunkBudget {
 public:
  // Waits until `n` more chunks fit in `budget` (a batch of at most `budget` always fits
  // once the others are given back, so a fetch never waits for memory it can not get).
  http::Awaitable<void> take(size_t n, size_t budget);
  void give_back(size_t n);

 private:
  Mutex mutex_;
  size_t in_use_ GUARDED_BY(mutex_) = 0;
  async::Signal signal_;
};

}  // namespace silo::cache
