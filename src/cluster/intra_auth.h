#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "config/config.h"

namespace silo::cluster {

// Carries the signature of an intra-cluster request: "<node id>:<unix seconds>:<hex HMAC>".
inline constexpr const char* kClusterAuthHeader = "X-Silo-Cluster-Auth";

// Signs and checks intra-cluster requests with the cluster secret, so that internal
// endpoints (keepalive, metasync, listing) and requests relayed between nodes cannot be
// forged by a client: HMAC-SHA256 over node id, time, method and request-target, valid
// for five minutes either side of the receiver's clock. Immutable; thread-safe.
class ClusterAuth {
 public:
  explicit ClusterAuth(const config::AuthConfig& auth);
  std::string sign(std::string_view node_id, std::string_view method, std::string_view target,
                   int64_t now_unix_seconds) const;
  // kUnauthenticated when `value` is malformed, stale or does not match.
  Status verify(std::string_view value, std::string_view method, std::string_view target,
                int64_t now_unix_seconds) const;

 private:
  std::string secret_;
};

}  // namespace silo::cluster
