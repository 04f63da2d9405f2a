#include "replication/peers.h"

#include <algorithm>

#include "cluster/durability.h"

namespace silo::replication {

std::optional<wire::Bucket> Peers::bucket_by_id(uint64_t id) const {
  for (const auto& b : maps_.bucket_map()->buckets()) {
    if (b.id() == id) return b;
  }
  return std::nullopt;
}

std::vector<wire::NodeInfo> Peers::holders_of(const ObjectRef& object) const {
  const auto bucket = bucket_by_id(object.bucket_id.value());
  if (!bucket) return {};
  return ranked(object, wire::holder_count(bucket->props()));
}

std::vector<wire::NodeInfo> Peers::copy_holders(const ObjectRef& object) const {
  const auto bucket = bucket_by_id(object.bucket_id.value());  // one lookup for both counts
  if (!bucket) return {};
  const uint32_t holders = wire::holder_count(bucket->props());
  return ranked(object, std::min(holders, wire::full_copy_count(bucket->props())));
}

std::vector<wire::NodeInfo> Peers::ranked(const ObjectRef& object, uint32_t count) const {
  const auto placement = maps_.placement();
  if (placement->empty()) return {};
  return placement->holders(object, count);
}

std::vector<wire::NodeInfo> Peers::candidates_of(const ObjectRef& object) const {
  return is_rebalancing() ? maps_.placement()->ranked_holders(object) : holders_of(object);
}

bool Peers::is_self_among(const std::vector<wire::NodeInfo>& nodes) const {
  return std::any_of(nodes.begin(), nodes.end(), [this](const wire::NodeInfo& n) { return is_self(n); });
}

std::vector<wire::NodeInfo> Peers::others_than_self(const std::vector<wire::NodeInfo>& nodes) const {
  std::vector<wire::NodeInfo> out;
  for (const auto& n : nodes) {
    if (!is_self(n)) out.push_back(n);
  }
  return out;
}

bool Peers::is_rebalancing() const {
  return maps_.node_map()->rebalance_phase() != wire::REBALANCE_PHASE_DONE;
}

store::Durability Peers::durability_of(const wire::Bucket& bucket) const {
  return cluster::durability_of(bucket, *live_config());
}

}  // namespace silo::replication
