#pragma once

// silo::Mutex and silo::MutexLock: std::mutex and its scoped lock with the clang
// capability annotations that libstdc++'s std::mutex lacks, so that GUARDED_BY, REQUIRES
// and EXCLUDES (thread_annotations.h) are checked by clang's -Wthread-safety
// (tools/check_thread_safety.sh). Same size and cost as std::mutex / std::unique_lock.
//
//   mutable Mutex mutex_;
//   std::vector<Job> jobs_ GUARDED_BY(mutex_);
//   ...
//   MutexLock lock(mutex_);
//   while (jobs_.empty()) lock.wait(changed_);  // a std::condition_variable
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace silo {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  // Tells the analysis that the caller holds this mutex where it cannot see so itself
  // (a callback that its caller runs under the lock). Checks nothing at run time.
  void assert_held() const ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

// Holds a Mutex for its scope. unlock()/lock() let it drop the mutex for a while (the
// analysis tracks that); wait*() wait on a std::condition_variable with the mutex
// released during the wait and held again on return. Predicates are written as loops
// (`while (!ready_) lock.wait(cv_);`) so the analysis sees the guarded reads under the lock.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() { lock_.lock(); }
  void unlock() RELEASE() { lock_.unlock(); }

  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <typename Clock, typename Duration>
  std::cv_status wait_until(std::condition_variable& cv,
                            const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline);
  }
  template <typename Rep, typename Period>
  std::cv_status wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout) {
    return cv.wait_for(lock_, timeout);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace silo
