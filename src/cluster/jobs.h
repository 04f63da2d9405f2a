#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/mutex.h"
#include "wire/codec.h"

namespace silo::cluster {

// The primary's registry of cluster jobs (rebalance now; prefetch and EC encode later):
// what runs, what ran, with progress. A job's start and end are persisted in the
// primary's state directory (jobs.pb); progress lives in memory. Keeps the newest
// kMaxJobs. Thread-safe. The blocking calls (start, finish) write a small file: call them
// from a disk executor.
class JobRegistry {
 public:
  static constexpr size_t kMaxJobs = 200;

  // Loads the jobs persisted in `state_dir`. Blocking.
  static Result<std::unique_ptr<JobRegistry>> open(const std::string& state_dir);

  // Adds `job` (state "running") or replaces the one with its id. Blocking.
  Status start(wire::JobInfo job);
  // Ends a running job with `state` ("finished", "preempted", "aborted", "failed") and
  // `detail`. Not found or not running: nothing. Blocking.
  Status finish(const std::string& id, std::string state, std::string detail, int64_t now_unix_nanos);
  // Replaces the progress fields of a running job (not persisted).
  void update(const wire::JobInfo& job);
  // update(), then persists. Blocking.
  Status checkpoint(const wire::JobInfo& job);

  std::optional<wire::JobInfo> find(const std::string& id) const;
  std::vector<wire::JobInfo> list() const;  // oldest first

 private:
  explicit JobRegistry(std::string path) : path_(std::move(path)) {}
  Status persist() REQUIRES(mutex_);

  const std::string path_;
  mutable Mutex mutex_;
  std::vector<wire::JobInfo> jobs_ GUARDED_BY(mutex_);
};

}  // namespace silo::cluster
