#pragma once

// batch::Batch: POST /v1/batch on any node (docs/shards.md "Batch GET").
#include <memory>

#include "batch/batch_stream.h"
#include "http/server.h"
#include "stats/registry.h"

namespace silo::batch {

// The most bytes a batch request's JSON may take (kMaxBatchEntries entries of long names).
inline constexpr size_t kMaxRequestBytes = 64ull << 20;

// Serves batch GETs: reads the request, then stream_batch() with the node's fetcher and
// window. Thread-safe; lives as long as the node.
class Batch {
 public:
  Batch(std::unique_ptr<Fetcher> fetcher, StreamOptions options, stats::Registry& stats);

  // POST /v1/batch {"entries": [...], "continue_on_error": bool} -> application/x-tar.
  // 400 for a malformed request, the first entry's error when it fails before any byte
  // went out; a later failure cuts the stream.
  http::Awaitable<void> handle(http::Exchange& exchange);

 private:
  std::unique_ptr<Fetcher> fetcher_;
  const StreamOptions options_;
  stats::Counter& requests_;
  stats::Counter& entries_;
  stats::Counter& missing_;
  stats::Counter& bytes_;
  stats::Counter& failures_;
};

}  // namespace silo::batch
