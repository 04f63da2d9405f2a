#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/mutex.h"
#include "config/config.h"

namespace silo::config {

// A node's effective cluster config: its config file's cluster section with the run-time
// overrides of the bucket map applied (docs/adr/0012). Readers take one snapshot per
// request (or per loop round) and read every value from it; set_overrides() swaps in a
// new snapshot. Thread-safe.
class LiveConfig {
 public:
  explicit LiveConfig(ClusterConfig file)
      : file_(std::move(file)), current_(std::make_shared<const ClusterConfig>(file_)) {}

  // The effective config now. Never null.
  std::shared_ptr<const ClusterConfig> get() const {
    MutexLock lock(mutex_);
    return current_;
  }
  // The config file's cluster section (what start-only settings come from).
  const ClusterConfig& file() const { return file_; }
  // The overrides the current snapshot was made from ("" when none).
  std::string overrides() const {
    MutexLock lock(mutex_);
    return overrides_;
  }

  // Makes the effective config the file's with `overrides_json` applied. The same
  // overrides again are a no-op. Overrides that do not apply (this node's file differs
  // from the primary's so that a cross-field rule fails) leave the previous effective
  // config and return the error (kInvalidArgument), for the caller to log.
  Status set_overrides(std::string_view overrides_json) {
    MutexLock update(update_mutex_);  // one update at a time, in order
    {
      MutexLock lock(mutex_);
      if (overrides_ == overrides_json) return Status::ok();
    }
    ClusterConfig next = file_;
    RETURN_IF_ERROR(apply_overrides(next, overrides_json));
    auto snapshot = std::make_shared<const ClusterConfig>(std::move(next));
    MutexLock lock(mutex_);
    current_ = std::move(snapshot);
    overrides_ = std::string(overrides_json);
    return Status::ok();
  }

 private:
  const ClusterConfig file_;
  Mutex update_mutex_;
  mutable Mutex mutex_;
  std::shared_ptr<const ClusterConfig> current_ GUARDED_BY(mutex_);
  std::string overrides_ GUARDED_BY(mutex_);
};

}  // namespace silo::config
