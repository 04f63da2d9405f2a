#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/mutex.h"
#include "async/resume.h"

namespace silo::async {

// Wakes coroutines when something they watch changed (a fetch made progress). A waiter
// reads count(), checks its condition, and when it does not hold yet waits for a notify()
// after that count: a change between its check and its wait is never missed. Thread-safe.
class Signal {
 public:
  uint64_t count() const {
    MutexLock lock(mutex_);
    return count_;
  }

  void notify() {
    std::vector<std::function<void()>> waiters;
    {
      MutexLock lock(mutex_);
      ++count_;
      waiters.swap(waiters_);
    }
    for (auto& resume : waiters) resume();
  }

  // Completes once notify() was called after count() returned `seen` (at once when it was).
  boost::asio::awaitable<void> wait(uint64_t seen) {
    // A named initiation object, not a lambda inside co_await (docs/adr/0003).
    Initiation initiation{this, seen};
    co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void()>(initiation,
                                                                                      boost::asio::use_awaitable);
  }

 private:
  struct Initiation {
    Signal* signal;
    uint64_t seen;
    template <typename Handler>
    void operator()(Handler handler) const {
      std::function<void()> resume = resume_later(std::move(handler));
      MutexLock lock(signal->mutex_);
      if (signal->count_ != seen) {
        lock.unlock();
        resume();
        return;
      }
      signal->waiters_.push_back(std::move(resume));
    }
  };

  mutable Mutex mutex_;
  uint64_t count_ GUARDED_BY(mutex_) = 0;
  std::vector<std::function<void()>> waiters_ GUARDED_BY(mutex_);
};

}  // namespace silo::async
