#pragma once

// Target::Task: a target's part of a scrub job, driven through /v1/internal/tasks/{job id}
// (scrub.cc; a prefetch task is the cache's, cache/prefetch.cc).
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster/task_failures.h"
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
  std::atomic<uint64_t> corrupt{0};
  std::atomic<uint64_t> repaired{0};
  std::atomic<uint64_t> restored{0};
  std::atomic<uint64_t> total{0};
  int64_t started_unix_nanos = 0;
  std::atomic<int64_t> finished_unix_nanos{0};
  cluster::TaskFailures failures;
  std::unique_ptr<boost::asio::steady_timer> timer;
};

}  // namespace silo::target
