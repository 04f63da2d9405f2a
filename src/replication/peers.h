#pragma once

// replication::Peers: this target among the others. Who holds an object under the maps
// of now, which bucket an id names, and who this node is: the lookups every data service
// beneath the target (replication, erasure, rebalance, scrub) makes, in one place.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/object_ref.h"
#include "cluster/cluster_maps.h"
#include "config/live_config.h"
#include "store/store.h"
#include "wire/json.h"

namespace silo::replication {

// Cheap to call from any thread: it reads the maps' current snapshots. Lives as long as
// the node; the maps outlive it.
class Peers {
 public:
  Peers(wire::NodeInfo self, cluster::ClusterMaps& maps, std::shared_ptr<const config::LiveConfig> config)
      : self_(std::move(self)), maps_(maps), config_(std::move(config)) {}

  const wire::NodeInfo& self() const { return self_; }
  cluster::ClusterMaps& maps() const { return maps_; }
  // The effective cluster config now (one snapshot: read every value of a request from it).
  std::shared_ptr<const config::ClusterConfig> live_config() const { return config_->get(); }

  std::optional<wire::Bucket> bucket_by_id(uint64_t id) const;
  // The targets that hold copies of `object` under the current maps, the owner first;
  // empty when its bucket is unknown here.
  std::vector<wire::NodeInfo> holders_of(const ObjectRef& object) const;
  // Where full copies of `object` live: holders_of(), or for an erasure-coded bucket the
  // first parity + 1 of them (its small objects).
  std::vector<wire::NodeInfo> copy_holders(const ObjectRef& object) const;
  // holders_of(), or every target by rank while a rebalance runs (a copy may still sit on
  // a target that no longer holds it).
  std::vector<wire::NodeInfo> candidates_of(const ObjectRef& object) const;
  bool is_self(const wire::NodeInfo& node) const { return node.id() == self_.id(); }
  bool is_self_among(const std::vector<wire::NodeInfo>& nodes) const;
  std::vector<wire::NodeInfo> others_than_self(const std::vector<wire::NodeInfo>& nodes) const;
  // Whether the node map says a rebalance runs (objects may sit off their holders).
  bool is_rebalancing() const;
  // The durability of commits into `bucket`: its props', else the cluster's default.
  store::Durability durability_of(const wire::Bucket& bucket) const;

 private:
  // The first `count` targets of `object`'s HRW ranking under the current node map.
  std::vector<wire::NodeInfo> ranked(const ObjectRef& object, uint32_t count) const;

  const wire::NodeInfo self_;
  cluster::ClusterMaps& maps_;
  const std::shared_ptr<const config::LiveConfig> config_;
};

}  // namespace silo::replication
