#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "wire/codec.h"

namespace silo::cluster {

// What a target's share of a cluster job (scrub, prefetch) keeps of its failures: how many,
// the last one, and the first kMaxFailedObjects objects that failed, named. Shared by the
// job's coroutines on any thread; lives as long as the job's task.
class TaskFailures {
 public:
  static constexpr size_t kMaxFailedObjects = 100;

  void fail(const Status& s);
  // One object failed: counted and named.
  void fail_object(const std::string& name, const Status& s);
  uint64_t count() const { return count_.load(); }
  // Sets the progress' errors, last_error and failed_objects.
  void report(wire::RebalanceProgress& progress) const;

 private:
  std::atomic<uint64_t> count_{0};
  mutable Mutex mutex_;
  std::string last_error_ GUARDED_BY(mutex_);
  std::vector<std::string> failed_objects_ GUARDED_BY(mutex_);
};

}  // namespace silo::cluster
