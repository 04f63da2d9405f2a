#pragma once

// batch::OwnerReads: a target's side of a batch's run of entries (POST /v1/internal/batch,
// docs/shards.md "Batch GET"): many small objects, ranges and members read in one task
// rather than a GET each.
#include <cstdint>
#include <string>

#include "async/disk_executor.h"
#include "cluster/cluster_maps.h"
#include "http/server.h"
#include "shards/shards.h"
#include "stats/registry.h"
#include "store/store.h"

namespace silo::batch {

// The answer of a run, entry by entry in request order: a frame head, then its bytes.
// kBytes: `size` bytes of the entry follow. kAsk: nothing follows; the serving node asks
// for the entry with a GET of its own (everything this path does not serve, errors
// included, so an entry is answered exactly as a GET would).
enum class RunAnswer : uint32_t { kBytes = 1, kAsk = 2 };
struct RunFrame {
  uint32_t answer = 0;  // RunAnswer
  uint32_t reserved = 0;
  uint64_t size = 0;
  int64_t mtime_unix_seconds = 0;
};
static_assert(sizeof(RunFrame) == 24);

// The largest entry a run carries (larger ones are asked for with a GET and may stream):
// the serving node holds at most window_entries + 1 of them (docs/shards.md).
inline constexpr uint64_t kMaxRunEntryBytes = 1ull << 20;

// Serves runs on a target. An entry is read here when its object is a local, whole copy
// (not coded, not a remote bucket's) that this target holds under its node map, whose
// block sums are kept (reads are verified as any GET's), and, for a member, whose plain
// tar index is cached or kept by the store (shards::Shards::index_now); the entry's bytes
// are at most kMaxRunEntryBytes. Thread-safe; lives as long as the node.
class OwnerReads {
 public:
  OwnerReads(cluster::ClusterMaps& maps, store::Store& store, shards::Shards& shards, std::string self_id,
             stats::Registry& stats);

  // POST /v1/internal/batch, a wire::BatchRequest (no selections): 200, chunked, frames.
  http::Awaitable<void> handle(http::Exchange& exchange);

 private:
  struct Run;
  cluster::ClusterMaps& maps_;
  store::Store& store_;
  shards::Shards& shards_;
  const std::string self_id_;
  async::DiskExecutor readers_{2};  // opens, hashes and reads the entries of runs
  stats::Counter& entries_read_;
  stats::Counter& entries_asked_;
};

}  // namespace silo::batch
