#include "client/owner_map.h"

#include "base/object_ref.h"

namespace silo::client {

Result<OwnerMap> OwnerMap::create(const NodeMap& map) {
  OwnerMap owners;
  std::vector<std::string> ids;
  for (const NodeEntry& node : map.nodes) {
    const bool stores = node.role == "target" || node.role == "all";
    if (!stores || node.mode != "normal" || node.state == "maintenance") continue;
    ids.push_back(node.id);
    owners.urls_.push_back(node.url);
  }
  if (ids.empty()) return Status::failed_precondition("the node map (version {}) lists no target that owns objects", map.version);
  owners.hrw_ = placement::HrwCandidates(std::move(ids));
  return owners;
}

size_t OwnerMap::owner_index(uint64_t bucket_id, std::string_view name) const {
  return hrw_.owner(ObjectRef{BucketId(bucket_id), std::string(name)});
}

const std::string& OwnerMap::owner_url(uint64_t bucket_id, std::string_view name) const {
  return urls_[owner_index(bucket_id, name)];
}

}  // namespace silo::client
