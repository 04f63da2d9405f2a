#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "client/client.h"
#include "placement/hrw.h"

namespace silo::client {

// Which target owns an object, from a node map as GET /v1/cluster/map shows it: HRW over
// the targets (and nodes of role all) in normal mode, down ones included, the rule the
// cluster places objects by (docs/membership-and-rebalance.md). A client that sends an
// object request straight there saves the proxy's hop; a stale map only costs a hop (a
// target forwards what it does not own). Immutable; share freely.
class OwnerMap {
 public:
  // kFailedPrecondition when the map lists no target that owns objects.
  static Result<OwnerMap> create(const NodeMap& map);

  // The owner's URL ("http://host:port") for the object `name` of bucket `bucket_id`.
  const std::string& owner_url(uint64_t bucket_id, std::string_view name) const;
  const std::vector<std::string>& urls() const { return urls_; }  // index-aligned with the HRW ids
  size_t owner_index(uint64_t bucket_id, std::string_view name) const;

 private:
  OwnerMap() = default;
  placement::HrwCandidates hrw_;
  std::vector<std::string> urls_;
};

}  // namespace silo::client
