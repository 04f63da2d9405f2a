#pragma once

// rebalance::Rebalance: a target's part in rebalance (docs/membership-and-rebalance.md).
// The walk that moves the objects this target holds but no longer should to their holders
// under the new node map; get-from-neighbor for objects not moved yet; DELETEs that reach
// every copy while objects move; a read's repair from another copy. The primary drives
// the phases (cluster/primary_rebalance.cc); a target's mountpaths and their resilver are
// mountpaths.h.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "erasure/erasure.h"
#include "http/client.h"
#include "http/server.h"
#include "replication/peers.h"
#include "replication/replication.h"
#include "store/store.h"

namespace silo::rebalance {

// How long a walk keeps at objects that fail for a reason other than a target that is
// down or busy (which it waits out, however long: the primary names whom it waits for).
struct WalkOptions {
  // Consecutive passes in which such an object failed, and for at least how long, before
  // the walk gives up and reports itself failed, with the reason (the job then ends
  // `failed`). The time covers a coded object whose staged commit makes it look short of
  // slices until its deadline (docs/adr/0014).
  int max_failing_passes = 5;
  std::chrono::milliseconds give_up_after{180'000};
  // The pause after a pass with failures; it doubles after each such pass, up to 16 times.
  std::chrono::milliseconds retry_pause{1000};
};

// Lives as long as the node; its coroutines run on the node's io_context.
class Rebalance {
 public:
  Rebalance(replication::Peers& peers, store::Store& store, std::shared_ptr<http::Client> client,
            replication::Replication& replication, erasure::Erasure& erasure, WalkOptions options = {});

  // Starts, restarts or stops this target's walk as the node map says. Call after every
  // installed map change and at start.
  http::Awaitable<void> sync();
  // Stops the walk (shutdown).
  void stop();
  // GET /v1/internal/rebalance -> wire::RebalanceProgress of the current or last walk.
  http::Awaitable<void> handle_progress(http::Exchange& exchange);

  // A GET or HEAD of the copy here: runs `read` and, when it failed before answering
  // anything, tries what may save it: again after a coded read found its slices moving;
  // a good copy in place of a corrupt one; the copy on another holder (get-from-neighbor
  // while a rebalance runs, or a holder that lost its copy).
  using ReadFn = std::function<http::Awaitable<Status>()>;
  http::Awaitable<Status> read_here_or_neighbor(http::Exchange& exchange, const ObjectRef& object, ReadFn read);
  // Get-from-neighbor for what is not a plain read: while a rebalance runs, copies a
  // missing object here from the target that still has it. ok when the object is here
  // now or nowhere (the caller's own lookup then answers NoSuchKey); kUnavailable when a
  // target that may hold it is down.
  http::Awaitable<Status> pull_if_missing(const ObjectRef& object);
  // A DELETE: the copies elsewhere (every target while a rebalance runs, else the
  // holders), then this node's. kNotFound (NoSuchKey) when no copy was anywhere.
  http::Awaitable<Status> remove_everywhere(const ObjectRef& object);

 private:
  struct Walk;
  // Relays a read that missed here to the target that still has the object, streaming
  // the answer. NoSuchKey when none has it; kUnavailable when one that may have it is down.
  http::Awaitable<Status> read_from_neighbor(http::Exchange& exchange, const ObjectRef& object);
  // Replaces a corrupt copy (or a slice whose file is gone) before a read answers it;
  // `s` is the read's kDataLoss. The read's result after the repair, or `s`.
  http::Awaitable<Status> repair_and_read(http::Exchange& exchange, const ObjectRef& object, const ReadFn& read,
                                          Status s);
  // Whether any other target had a copy of `object` (which it removed).
  http::Awaitable<Result<bool>> remove_elsewhere(const ObjectRef& object);
  http::Awaitable<void> walk(std::shared_ptr<Walk> walk);
  http::Awaitable<Status> walk_once(Walk& walk);
  // Copies one object to every holder that lacks it (COPY), or makes sure they have it and
  // removes it here when this node is not one of them (CLEANUP).
  http::Awaitable<Status> move_object(Walk& walk, const ObjectRef& object, const std::vector<wire::NodeInfo>& holders);
  // Waits for the walks this one replaced to exit (taking over their undos) and for the
  // copies accepted here under the previous map to commit.
  http::Awaitable<void> drain_previous(Walk& walk);
  // send_undo() for the walk's pending ones; those that fail stay pending.
  http::Awaitable<Status> retry_undos(Walk& walk);

  replication::Peers& peers_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  replication::Replication& replication_;
  erasure::Erasure& erasure_;
  const WalkOptions options_;
  std::atomic<bool> is_stopping_{false};

  Mutex mutex_;
  std::shared_ptr<Walk> walk_ GUARDED_BY(mutex_);  // the current or last walk
};

}  // namespace silo::rebalance
