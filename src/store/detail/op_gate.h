#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>

namespace silo::store::detail {

// Lets a mountpath be taken out of the store while requests run (detach): every store
// operation holds a Ticket while it may touch a mountpath it looked up, and
// wait_for_earlier() returns once every ticket taken before it was released. So after a
// mountpath is marked detached and wait_for_earlier() returned, nothing uses it any more.
// Two counters by epoch parity, as in RCU: entering costs two atomic increments and never
// blocks; only the (rare) waiter waits. Thread-safe. A ticket may be released on another
// thread than it was taken on (coroutines move between threads).
class OpGate {
 public:
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : counter_(std::exchange(other.counter_, nullptr)) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        release();
        counter_ = std::exchange(other.counter_, nullptr);
      }
      return *this;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }

   private:
    friend class OpGate;
    explicit Ticket(std::atomic<int64_t>* counter) : counter_(counter) {}
    void release() {
      if (counter_ != nullptr) counter_->fetch_sub(1);
      counter_ = nullptr;
    }
    std::atomic<int64_t>* counter_ = nullptr;
  };

  Ticket enter() {
    for (;;) {
      const uint64_t epoch = epoch_.load();
      std::atomic<int64_t>& counter = active_[epoch & 1];
      counter.fetch_add(1);
      // The waiter flips the epoch before it reads the counter: if the epoch is still
      // ours, the waiter (if any) sees this increment; else take the new epoch's counter.
      if (epoch_.load() == epoch) return Ticket(&counter);
      counter.fetch_sub(1);
    }
  }

  // Blocks until every ticket taken before this call is released. Waiters run one at a
  // time (the previous waiter drained the other counter, which newer tickets now fill).
  void wait_for_earlier() {
    const std::lock_guard lock(waiter_mutex_);
    const uint64_t epoch = epoch_.fetch_add(1);
    while (active_[epoch & 1].load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

 private:
  std::atomic<uint64_t> epoch_{0};
  std::array<std::atomic<int64_t>, 2> active_{};
  std::mutex waiter_mutex_;
};

}  // namespace silo::store::detail
