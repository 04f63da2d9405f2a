#pragma once

// Commits into buckets, as every writer of a target (client writes, copies, fetches of
// remote buckets) makes them: the guard that keeps a commit out of a bucket being deleted
// (docs/adr/0005), and the durability a bucket's commits get.
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "cluster/cluster_maps.h"
#include "config/config.h"
#include "http/message.h"
#include "store/store.h"

namespace silo::cluster {

// The durability of commits into `bucket`: its props', else the cluster's default.
store::Durability durability_of(const wire::Bucket& bucket, const config::ClusterConfig& config);

// Counts the commits into each bucket that passed their guard and have not ended, so that
// a bucket delete can wait for them before it checks for emptiness. One per node, shared
// by the target and the cache (which both commit objects); lives as long as the node.
// Thread-safe.
class BucketWrites {
 public:
  explicit BucketWrites(const ClusterMaps& maps) : maps_(maps) {}
  BucketWrites(const BucketWrites&) = delete;
  BucketWrites& operator=(const BucketWrites&) = delete;

  // One commit, counted from the moment it passed guard()'s check until the ticket is
  // destroyed. Must not outlive its BucketWrites.
  class Ticket {
   public:
    explicit Ticket(BucketWrites& writes) : writes_(writes) {}
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class BucketWrites;
    BucketWrites& writes_;
    std::shared_ptr<uint64_t> bucket_id_ = std::make_shared<uint64_t>(0);  // set once counted
  };

  // Wraps options.precondition: the commit fails with NoSuchBucket when the bucket is gone
  // or being deleted by then (checked under the object lock, with the count below in one
  // step), else counts `ticket`. The wrapper calls only into this object and the maps.
  void guard(store::PutOptions& options, const wire::Bucket& bucket, Ticket& ticket);
  // Waits until no commit into `bucket_id` is in flight (a delete's emptiness check);
  // kUnavailable after 10 s.
  http::Awaitable<Status> drain(uint64_t bucket_id);

 private:
  const ClusterMaps& maps_;
  Mutex mutex_;
  std::unordered_map<uint64_t, int> in_flight_ GUARDED_BY(mutex_);  // bucket id -> commits past the guard
};

}  // namespace silo::cluster
