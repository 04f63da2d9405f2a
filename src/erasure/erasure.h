#pragma once

// erasure::Erasure: erasure coding on a target (docs/data-protection.md "Layout: erasure
// coding"). The owner cuts a committed object in k data + m parity slices (ec::Layout,
// ec::ReedSolomon over ISA-L) and spreads them over the object's first k + m holders; any
// holder answers a GET by reading the k data slices in parallel, or any k when some are
// missing or corrupt, and rebuilds those afterwards. `ec/` is the codec; this is where
// slices live and move.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "async/disk_executor.h"
#include "http/client.h"
#include "http/server.h"
#include "replication/peers.h"
#include "replication/replication.h"
#include "stats/registry.h"
#include "store/store.h"

namespace silo::ec {
struct Layout;
}  // namespace silo::ec

namespace silo::erasure {
namespace detail {
struct SliceSource;
}  // namespace detail

// Lives as long as the node; its coroutines run on the node's io_context, its reads and
// coding of object files on its own disk executor.
class Erasure {
 public:
  Erasure(replication::Peers& peers, store::Store& store, std::shared_ptr<http::Client> client,
          replication::Replication& replication, stats::Registry& stats);

  // After a whole object of an erasure-coded bucket is here (a PUT at the owner, or a
  // re-encoding walk): sends slice i to holders[i] (parity + 1 full copies for objects
  // under min_size), all confirmed, then keeps its own slice in place of the whole object
  // when this node is a holder. On failure the slices sent are taken back.
  http::Awaitable<Status> encode_and_spread(ObjectRef object, std::vector<wire::NodeInfo> holders);
  // Answers with object bytes [offset, offset + length) of the erasure-coded object whose
  // slice `mine` is here (`head` prepared by the caller): the k data slices read in
  // parallel, or any k when some are missing or corrupt (then rebuilt in the background).
  // kAborted when the slices changed while being read (re-encoding): read again.
  http::Awaitable<Status> send_ec(http::Exchange& exchange, const ObjectRef& object, store::OpenObject& mine, http::ResponseHead head, uint64_t offset,
                                  uint64_t length);
  // Where read_ec() puts the bytes it reads, in order, a cell's worth at most at a time.
  using Sink = std::function<http::Awaitable<Status>(std::span<const char>)>;
  // Reads object bytes [offset, offset + length) of the erasure-coded object whose slice
  // `mine` is here into `sink`, from its slices as send_ec() does (degraded when some are
  // missing or corrupt, which are then rebuilt in the background). Where send_ec() would
  // hand the read to another target (a newer version or a full copy there): kAborted or
  // kUnavailable, to be retried. A failure midway leaves `sink` with part of the bytes.
  http::Awaitable<Status> read_ec(const ObjectRef& object, store::OpenObject& mine, uint64_t offset, uint64_t length,
                                  const Sink& sink);
  // Rebuilds the slices of the version here that no holder has, that are corrupt here, or
  // that are listed in `unreadable`, and sends each to a holder that has none; how many
  // it placed (0 when a newer version exists or the free holders are down).
  http::Awaitable<Result<size_t>> rebuild_slices(ObjectRef object, std::vector<uint32_t> unreadable);
  // rebuild_slices() in the background.
  http::Awaitable<void> start_rebuild(ObjectRef object, std::vector<uint32_t> unreadable);
  // Run by the first holder (by rank) that has a slice of the version `mine` describes:
  // rebuilds the slices no holder has. True when it rebuilt some.
  http::Awaitable<Result<bool>> restore_slices(const ObjectRef& object, const wire::ObjectRecord& mine);
  // A rebalance walk's work on a slice, or on a full copy of an erasure-coded bucket's
  // object. Sets `is_holder`; kAborted when the object here changed form (decoded): walk
  // it again.
  http::Awaitable<Status> move_coded(const ObjectRef& object, const std::vector<wire::NodeInfo>& holders,
                                     store::OpenObject& opened, bool& is_holder);
  // The record as clients see the object: a slice's shows the object's size and XXH3.
  static wire::ObjectRecord object_view(const wire::ObjectRecord& record);

  // Commits a new version of `object` at its owner (holders[0], this node) from `writer`,
  // which holds all its bytes, uncommitted (docs/adr/0014). When the bucket codes it
  // (k + m slices: not under min_size), slice i is *staged* on holders[i] (received and
  // fsynced there, not replacing the version it has) and, once every holder has staged
  // its slice, the staged slices are committed (in parallel), then this node's own slice;
  // then writer.finish_sealed() (an assembled upload is forgotten only now), and on any
  // error writer.discard(). Returns the record as clients see the object. When
  // staging fails anywhere the staged slices are dropped and no holder's piece changed:
  // kUnavailable, or the precondition's error from writer.seal(). nullopt: not coded here
  // (under min_size, not the owner): commit `writer` and copy as for any object.
  // A crash in the commit round itself (milliseconds) can still mix versions: ADR 0014.
  http::Awaitable<Result<std::optional<wire::ObjectRecord>>> commit_coded(store::ObjectWriter& writer,
                                                                         ObjectRef object,
                                                                         std::vector<wire::NodeInfo> holders);

  // One slice being written: into this store, or to another target.
  struct SliceSink {
    uint32_t index = 0;
    wire::NodeInfo node;
    wire::ObjectRecord record;  // of the slice sent
    std::unique_ptr<store::ObjectWriter> writer;
    std::unique_ptr<http::Call> call;
    replication::Placed placed;  // what the receiver did, once finished
  };

 private:
  // Where the slices of one version are: where[i] holds slice i (unset: found nowhere);
  // `whole` a target with a full copy of the same version (re-encoding in progress);
  // `newer` one with a newer version (the slice here is stale); `mine_elsewhere` another
  // target with the same slice as here. When two targets hold the same slice (a rebuild
  // that took an unreachable holder's slice for lost), where[i] is the keeper that every
  // target picks alike (holder i, else the best ranked) and the others are `duplicates`.
  struct SlicePiece {
    wire::NodeInfo node;
    wire::ObjectRecord record;
  };
  struct SliceMap {
    std::vector<std::optional<wire::NodeInfo>> where;
    std::optional<wire::NodeInfo> whole;
    std::optional<wire::NodeInfo> newer;
    std::optional<wire::NodeInfo> mine_elsewhere;
    std::vector<SlicePiece> duplicates;
  };
  enum class UndoScope { kNewOnly, kAll };
  // send_ec() and read_ec(): `begin` runs once the slices to read are open, before the
  // first byte; with `exchange`, reads that another target must answer are relayed there.
  http::Awaitable<Status> read_slices(http::Exchange* exchange, const ObjectRef& object,
                                      store::OpenObject& mine, uint64_t offset, uint64_t length,
                                      const std::function<http::Awaitable<Status>()>& begin, const Sink& sink);
  // A read with every data slice at hand, answered without coding: the cells of
  // [offset, offset + length) in object order, this target's by sendfile, the peers' by
  // splice from their bodies (Call::relay_body_part); nothing passes through a buffer here.
  http::Awaitable<Status> send_cells(http::ResponseWriter& out, std::vector<detail::SliceSource>& sources,
                                     const ec::Layout& layout, uint64_t offset, uint64_t length);
  http::Awaitable<Status> rebuild_slices_status(ObjectRef object, std::vector<uint32_t> unreadable);
  // Waits for every other target to confirm its slice (fsynced), then commits the ones
  // here; a receiver that kept its own piece must hold this very slice. kAborted when
  // the object here changed or a newer version turned up.
  http::Awaitable<Status> finish_slice_sinks(const ObjectRef& object, std::vector<SliceSink>& sinks);
  // Ends a sink's PUT to another target and reads what it did with the slice into
  // sink.placed (a stored or a staged slice alike).
  static http::Awaitable<Status> finish_call(SliceSink& sink);
  // After sending slices (`sent`: how that went): finishes them, and takes back those
  // that landed when the object was deleted meanwhile (kAborted then) or when sending
  // failed (then only those that replaced nothing of this version).
  http::Awaitable<Status> settle_slices(const ObjectRef& object, std::vector<SliceSink>& sinks, Status sent);
  http::Awaitable<void> undo_slices(const ObjectRef& object, const std::vector<SliceSink>& sinks, UndoScope scope);
  // Replaces the slice here by the whole object, decoded from k slices (re-encoding).
  http::Awaitable<Status> decode_here(const ObjectRef& object);
  // Where the slices of `mine`'s version normally are (slice i on holder i, those up), or
  // an empty map when this node's own slice is not at its rank.
  SliceMap assumed_slices(const ObjectRef& object, const wire::ObjectRecord& mine) const;
  // Which target has which slice of the version `mine` (a slice record) describes.
  http::Awaitable<SliceMap> locate_slices(const ObjectRef& object, const wire::ObjectRecord& mine);
  // Removes the duplicates in `map` that sit on holders of `object` (a holder keeps one
  // piece, so a duplicate there keeps the slice no holder has from it) and forgets them;
  // kUnavailable when one could not be removed. A duplicate on a non-holder is left to
  // the rebalance cleanup, like any piece off its holders.
  http::Awaitable<Status> drop_duplicate_slices(const ObjectRef& object, SliceMap& map);
  // Opens the writer of slice `record` on `node`: this store (in place of generation
  // `replacing` only) or a PUT to that target.
  http::Awaitable<Result<SliceSink>> open_slice_sink(const ObjectRef& object, const wire::ObjectRecord& record,
                                                     const wire::NodeInfo& node, const wire::Bucket& bucket,
                                                     uint64_t replacing);

  // Sends `cell_length` bytes of each sink's cell to it, all at once.
  static http::Awaitable<Status> write_cells(std::vector<SliceSink>& sinks,
                                             const std::vector<std::vector<uint8_t>>& cells,
                                             uint64_t cell_length);
  // Starts the PUT of slice `record` to `node`'s internal objects endpoint with `query`
  // ("repair=1", "stage=TOKEN") and sends the copy prefix.
  http::Awaitable<Result<std::unique_ptr<http::Call>>> start_slice_call(const ObjectRef& object,
                                                                       const wire::ObjectRecord& record,
                                                                       const wire::NodeInfo& node,
                                                                       const std::string& query);
  // Staged overwrites (staged_write.cc, docs/adr/0014).
  // Opens slice `record`'s writer on `node`: a new generation here that replaces only an
  // older version, or a staged slice there under `token`.
  http::Awaitable<Result<SliceSink>> open_staged_sink(const ObjectRef& object, const wire::ObjectRecord& record,
                                                      const wire::NodeInfo& node, const wire::Bucket& bucket,
                                                      const std::string& token);
  // Stages every slice of the sealed version `whole` (from `fd`) on its holder; ok once
  // every other holder confirmed its staged slice (fsynced). Leaves the sinks to the caller.
  http::Awaitable<Status> stage_slices(const ObjectRef& object, const wire::Bucket& bucket,
                                       const std::vector<wire::NodeInfo>& holders, const wire::ObjectRecord& whole,
                                       int fd, const std::string& token, std::vector<SliceSink>& sinks);
  // Waits for every other holder's answer to its staged slice: kAborted when one would
  // not take it (it has this version or a newer one).
  http::Awaitable<Status> finish_staged_sinks(const ObjectRef& object, std::vector<SliceSink>& sinks);
  // Commits the slices staged under `token` on the other holders, in parallel: how many
  // did, and how many gave no answer (those may have committed; the others answered
  // that they did not: expired, or a newer version there).
  struct CommitRound {
    size_t committed = 0;
    size_t unknown = 0;
  };
  http::Awaitable<CommitRound> commit_staged_slices(const ObjectRef& object, const std::vector<SliceSink>& sinks,
                                                    const std::string& token);
  // The commit round of commit_coded(): the staged slices, then this node's own
  // (sinks[0]); its record. kUnavailable when not every slice was committed.
  http::Awaitable<Result<wire::ObjectRecord>> commit_round(const ObjectRef& object, std::vector<SliceSink>& sinks,
                                                           const std::string& token);
  // Drops the slices staged under `token` (best effort: a holder that misses this drops
  // its slice at the deadline).
  http::Awaitable<void> drop_staged_slices(const ObjectRef& object, const std::vector<SliceSink>& sinks,
                                           const std::string& token);

  replication::Peers& peers_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  replication::Replication& replication_;
  async::DiskExecutor reader_{2};  // reads slices and codes stripes

  stats::Counter& bytes_sent_;
  stats::Counter& copies_made_;
  stats::Counter& slices_made_;
  stats::Counter& degraded_reads_;
  stats::Counter& duplicate_slices_dropped_;
};

}  // namespace silo::erasure
