#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/object_ref.h"
#include "base/result.h"
#include "base/mutex.h"
#include "placement/hrw.h"
#include "wire/codec.h"

namespace silo::cluster {

// Whether `node` can hold objects: a target, or a node of role all.
bool stores_objects(const wire::NodeInfo& node);
// Whether `node` owns objects: a target (or role all) in normal mode, down or not.
bool owns_objects(const wire::NodeInfo& node);
// The ids of the nodes that own objects, in map order: a change of this list is what
// starts a rebalance.
std::vector<std::string> owner_ids(const wire::NodeMap& map);

// Where objects live under one node map: the targets that own objects (every target in
// normal mode, down ones included: a down target still owns its objects, and a request
// for them fails with 503 until it returns or rebalance moves them). Immutable.
class TargetPlacement {
 public:
  explicit TargetPlacement(const wire::NodeMap& map);
  bool empty() const { return nodes_.empty(); }
  // Requires: !empty().
  const wire::NodeInfo& owner(const ObjectRef& object) const { return nodes_[hrw_.owner(object)]; }
  const std::vector<wire::NodeInfo>& targets() const { return nodes_; }
  // The first `n` targets of the object's HRW ranking (fewer when fewer own objects): where
  // its copies live, the owner first (docs/data-protection.md). Down ones included.
  std::vector<wire::NodeInfo> holders(const ObjectRef& object, size_t n) const;
  // Every target of the map (maintenance ones too), best HRW rank for `object` first: the
  // order in which to look for an object that a rebalance may not have moved yet.
  std::vector<wire::NodeInfo> ranked_holders(const ObjectRef& object) const;

 private:
  std::vector<wire::NodeInfo> nodes_;  // index-aligned with hrw_
  placement::HrwCandidates hrw_;
  std::vector<wire::NodeInfo> every_;  // index-aligned with every_hrw_
  placement::HrwCandidates every_hrw_;
};

// The node's current node map and bucket map, as immutable snapshots. Newer versions
// replace older ones and are persisted to the node's state directory first, so a restarted
// node serves with its last known maps. Thread-safe; readers never block writers for long.
class ClusterMaps {
 public:
  // Loads the maps persisted in `state_dir` (none on a new node). Blocking.
  static Result<std::unique_ptr<ClusterMaps>> open(const std::string& state_dir);

  std::shared_ptr<const wire::NodeMap> node_map() const;
  std::shared_ptr<const wire::BucketMap> bucket_map() const;
  std::shared_ptr<const TargetPlacement> placement() const;
  std::optional<wire::Bucket> find_bucket(std::string_view name) const;
  std::optional<wire::NodeInfo> find_node(std::string_view id) const;

  // Persists and installs `map` if its version is newer than the current one; returns
  // whether it did. Blocking (writes and fsyncs a small file): call from a disk executor.
  Result<bool> install(const wire::NodeMap& map);
  Result<bool> install(const wire::BucketMap& map);

  // Called (on the installing thread) after every installed change.
  void on_change(std::function<void()> listener);

 private:
  explicit ClusterMaps(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  void notify();

  const std::string state_dir_;
  mutable Mutex mutex_;
  std::shared_ptr<const wire::NodeMap> node_map_ GUARDED_BY(mutex_);
  std::shared_ptr<const wire::BucketMap> bucket_map_ GUARDED_BY(mutex_);
  std::shared_ptr<const TargetPlacement> placement_ GUARDED_BY(mutex_);
  std::vector<std::function<void()>> listeners_ GUARDED_BY(mutex_);
};

// Writes `bytes` to `path` atomically and durably (temp file, fsync, rename, fsync dir).
Status write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace silo::cluster
