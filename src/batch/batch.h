#pragma once

// batch::Batch: POST /v1/batch on any node (docs/shards.md "Batch GET").
#include <functional>
#include <memory>
#include <optional>

#include "batch/batch_stream.h"
#include "cluster/cluster_maps.h"
#include "http/client.h"
#include "http/server.h"
#include "stats/registry.h"

namespace silo::batch {

// The most bytes a batch request's JSON may take (kMaxBatchEntries entries of long names).
inline constexpr size_t kMaxRequestBytes = 64ull << 20;

// What a batch needs to gather its entries into runs per owner (RunFetcher).
struct RunSource {
  cluster::ClusterMaps* maps = nullptr;
  std::shared_ptr<http::Client> client;
};

// Serves batch GETs: reads the request, then stream_batch() with the node's fetcher and
// window; with `runs`, through a RunFetcher of the batch's own in front of `fetcher`.
// Thread-safe; lives as long as the node.
class Batch {
 public:
  Batch(std::unique_ptr<Fetcher> fetcher, StreamOptions options, stats::Registry& stats,
        std::optional<RunSource> runs = std::nullopt);

  // Whether the caller may read an entry (ok, else the error to answer, e.g. 403).
  using Authorize = std::function<Status(const wire::BatchEntry&)>;
  // POST /v1/batch {"entries": [...], "continue_on_error": bool} -> application/x-tar.
  // 400 for a malformed request; the error of the first entry `authorize` refuses, before
  // anything is read; the first entry's error when it fails before any byte went out; a
  // later failure cuts the stream.
  http::Awaitable<void> handle(http::Exchange& exchange, Authorize authorize);

 private:
  std::unique_ptr<Fetcher> fetcher_;
  const StreamOptions options_;
  const std::optional<RunSource> runs_;
  stats::Counter& requests_;
  stats::Counter& entries_;
  stats::Counter& missing_;
  stats::Counter& bytes_;
  stats::Counter& failures_;
};

}  // namespace silo::batch
