#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "backend/object_backend.h"
#include "base/mutex.h"
#include "base/result.h"
#include "config/live_config.h"
#include "http/client.h"
#include "wire/codec.h"

namespace silo::backend {

// The backends of a node's remote buckets: one ObjectBackend per bucket, made on first use
// from the bucket's backend props, filled in from the cluster's defaults
// (config::CacheConfig, read live: a change at run time applies to backends made after
// it), and made anew when the props or those defaults change. Thread-safe.
class BackendPool {
 public:
  BackendPool(std::shared_ptr<http::Client> client, std::shared_ptr<const config::LiveConfig> config);

  // kInvalidArgument when the bucket is not remote or its settings are incomplete.
  Result<std::shared_ptr<ObjectBackend>> get(const wire::Bucket& bucket);
  // A backend for `props` alone (a bucket being created: its existence is checked first).
  Result<std::shared_ptr<ObjectBackend>> make(const wire::BackendProps& props) const;

 private:
  struct Entry {
    std::string fingerprint;  // the props and defaults it was made from
    std::shared_ptr<ObjectBackend> backend;
  };
  std::shared_ptr<http::Client> client_;
  const std::shared_ptr<const config::LiveConfig> config_;
  Mutex mutex_;
  std::map<uint64_t, Entry> by_bucket_id_ GUARDED_BY(mutex_);
};

}  // namespace silo::backend
