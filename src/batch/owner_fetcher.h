#pragma once

// batch::OwnerFetcher: a batch entry's bytes from the target that holds it, over the
// native API (docs/shards.md "Batch GET").
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "batch/batch_stream.h"
#include "cluster/cluster_maps.h"
#include "http/client.h"

namespace silo::batch {

// The holders of `name` in `bucket` to ask, in order: those up first, starting at the
// `turn`-th of them (copies take turns), then those down (their state may be stale).
std::vector<wire::NodeInfo> holders_to_ask(const cluster::TargetPlacement& placement, const wire::Bucket& bucket,
                                           const std::string& name, uint64_t turn);

// Asks a holder of each entry's object (HRW; of several copies the ones up, taking turns;
// the next when one cannot be reached) with a forwarded, signed native GET: `archpath`,
// `archmode` and `Range` as the entry says, `batchprefix` for a selection. A remote
// bucket's uncached object is fetched by its owner (single-flight) as for any GET.
// Thread-safe; lives as long as the node.
class OwnerFetcher : public Fetcher {
 public:
  OwnerFetcher(cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client, std::string self_id);

  http::Awaitable<Result<std::unique_ptr<EntryBody>>> open(const wire::BatchEntry& entry) override;

 private:
  cluster::ClusterMaps& maps_;
  std::shared_ptr<http::Client> client_;
  const std::string self_id_;
  std::atomic<uint64_t> turn_{0};
};

}  // namespace silo::batch
