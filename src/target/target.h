#pragma once

#include <memory>
#include <string>

#include "cluster/cluster_maps.h"
#include "cluster/primary.h"
#include "config/config.h"
#include "http/client.h"
#include "http/server.h"
#include "stats/registry.h"
#include "store/store.h"

namespace silo::target {

struct TargetOptions {
  wire::NodeInfo self;
  config::ClusterConfig cluster;
};

// The storage role: serves the objects this node owns from its Store, forwards requests
// for objects it does not own to their owner, answers the proxies' listing requests, and
// removes the data of deleted buckets. Lives as long as the node; its coroutines run on the
// node's io_context, its disk work on the Store's executors.
class Target {
 public:
  // `member` is the link to the primary used to catch up when a request shows this node's
  // maps are stale; null on the primary itself (role all), whose maps are the newest.
  Target(TargetOptions options, cluster::ClusterMaps& maps, store::Store& store,
         std::shared_ptr<http::Client> client, cluster::Member* member, stats::Registry& stats);

  // PUT, GET, HEAD, DELETE /v1/objects/{bucket}/{name}: the exchange's path decides.
  http::Awaitable<void> handle_object(http::Exchange& exchange, std::string bucket, std::string name);
  // GET /v1/internal/list/{bucket}?prefix=&start_after=&limit= -> wire::ListPage.
  http::Awaitable<void> handle_list(http::Exchange& exchange, std::string bucket);
  // Removes the objects of buckets deleted from the bucket map.
  http::Awaitable<void> collect_deleted_buckets();

 private:
  struct Resolved {
    wire::Bucket bucket;
    ObjectRef object;
    bool is_local = false;        // this node owns the object
    wire::NodeInfo owner;
  };
  // Finds the bucket and the owner, catching up with the primary once when the request
  // shows newer maps than ours.
  http::Awaitable<Result<Resolved>> resolve(const http::RequestHead& request, const std::string& bucket,
                                            const std::string& name);
  http::Awaitable<Status> put(http::Exchange& exchange, const Resolved& r);
  http::Awaitable<Status> get(http::Exchange& exchange, const Resolved& r);
  http::Awaitable<Status> remove(http::Exchange& exchange, const Resolved& r);
  http::Awaitable<Status> forward(http::Exchange& exchange, const Resolved& r);

  const TargetOptions options_;
  cluster::ClusterMaps& maps_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  cluster::Member* member_;
  stats::Counter& bytes_received_;
  stats::Counter& bytes_sent_;
  stats::Counter& puts_;
  stats::Counter& gets_;
  stats::Counter& deletes_;
  stats::Counter& forwards_;
  stats::Counter& errors_;
};

}  // namespace silo::target
