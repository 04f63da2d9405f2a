#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>

namespace silo::store::detail {

// Lets a mountpath be taken out of the store while requests run (detach): every store
// operation holds a Ticket while it may touch a mountpath it looked up, and a grace
// period ends once every ticket taken before it began is released. So once a mountpath is
// marked detached and a grace period begun after that has ended, nothing uses it any more.
// Two counters by epoch parity, as in RCU: entering costs two atomic increments and never
// blocks; only the (rare) detach waits. Thread-safe. A ticket may be released on another
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
      // ours, a grace period begun meanwhile sees this increment; else take the new epoch's counter.
      if (epoch_.load() == epoch) return Ticket(&counter);
      counter.fetch_sub(1);
    }
  }

  // Starts a grace period: is_drained(token) turns true once every ticket taken before
  // this call is released. Grace periods must not overlap: the caller waits for one to
  // drain before it begins the next (the store runs one detach at a time). Waiting is the
  // caller's (a coroutine polls on a timer, so no thread blocks).
  uint64_t begin_grace_period() { return epoch_.fetch_add(1); }
  bool is_drained(uint64_t token) const { return active_[token & 1].load() == 0; }

 private:
  std::atomic<uint64_t> epoch_{0};
  std::array<std::atomic<int64_t>, 2> active_{};
};

}  // namespace silo::store::detail
