#pragma once

// batch::RunFetcher: one batch's entries gathered into runs, one request per owner for
// many entries (POST /v1/internal/batch, batch::OwnerReads), rather than a GET each
// (docs/shards.md "Batch GET").
#include <memory>
#include <string>

#include "batch/batch_stream.h"
#include "cluster/cluster_maps.h"
#include "http/client.h"

namespace silo::batch {

// The most entries one run asks for.
inline constexpr size_t kMaxRunEntries = 256;

// A Fetcher for one batch. An entry that a run may carry (no selection, a local bucket)
// waits in its owner's queue; a run takes what waits when none is in flight to that owner
// (or a second one when enough wait), and its answer, read frame by frame, hands each
// entry its bytes as they come. An entry the owner leaves to a GET (RunAnswer::kAsk), a
// selection, a remote bucket's entry, or any entry of a run that failed goes to
// `fallback` (OwnerFetcher), which answers exactly as a GET would. Entries of a run are at
// most kMaxRunEntryBytes, so the serving node's memory stays within the stream's window.
// Thread-safe; lives as long as its batch (runs still reading keep what they use).
class RunFetcher final : public Fetcher {
 public:
  RunFetcher(cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client, Fetcher& fallback);

  http::Awaitable<Result<std::unique_ptr<EntryBody>>> open(const wire::BatchEntry& entry) override;

  struct State;

 private:
  std::shared_ptr<State> state_;
  Fetcher& fallback_;
};

}  // namespace silo::batch
