#pragma once

// Target::Task: a target's part of a job the primary runs on every target (scrub.cc,
// prefetch.cc), driven through /v1/internal/tasks/{job id}.
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"
#include "wire/json.h"

namespace silo::target {

struct Target::Task {
  std::string id;
  wire::JobRequest request;           // what the primary asked for
  std::optional<wire::Bucket> bucket;  // only this bucket; all when unset
  uint64_t rate_bytes = 0;            // bytes checked per second at most; 0: no bound
  std::atomic<bool> cancelled{false};
  std::atomic<bool> finished{false};
  std::atomic<uint64_t> scanned{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> corrupt{0};
  std::atomic<uint64_t> repaired{0};
  std::atomic<uint64_t> restored{0};
  std::atomic<uint64_t> fetched{0};  // prefetch
  std::atomic<uint64_t> skipped{0};  // prefetch: cached and unchanged
  std::atomic<uint64_t> total{0};
  int64_t started_unix_nanos = 0;
  std::atomic<int64_t> finished_unix_nanos{0};
  Mutex mutex;
  std::string last_error GUARDED_BY(mutex);
  std::vector<std::string> failed_objects GUARDED_BY(mutex);  // the first kMaxFailedObjects
  std::unique_ptr<boost::asio::steady_timer> timer;

  static constexpr size_t kMaxFailedObjects = 100;

  void fail(const Status& s) {
    errors.fetch_add(1);
    MutexLock lock(mutex);
    last_error = s.to_string();
  }
  // One object failed (prefetch): counted and named.
  void fail_object(const std::string& name, const Status& s) {
    fail(s);
    MutexLock lock(mutex);
    if (failed_objects.size() < kMaxFailedObjects) failed_objects.push_back(name + ": " + s.message());
  }
};

}  // namespace silo::target
