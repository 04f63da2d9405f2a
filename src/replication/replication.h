#pragma once

// replication::Replication: full copies of objects on their holders (docs/data-protection.md
// "Copies"). The owner's copies after a commit, the copy wire's sending and receiving ends
// (/v1/internal/objects, copy_wire.h), a holder's copy pulled back from another, and reads
// checked against their XXH3. Erasure coding, rebalance and scrub build on it.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "async/disk_executor.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "http/client.h"
#include "http/server.h"
#include "replication/copy_wire.h"
#include "replication/peers.h"
#include "stats/registry.h"
#include "store/block_sums.h"
#include "store/store.h"

namespace silo::replication {

// Runs `work` detached from any request (co_spawn it), logging its failure as `what`.
http::Awaitable<void> in_background(http::Awaitable<Status> work, std::string what);

// Whether the request asks for this node's own copy (kLocalOnlyHeader, forwarded).
bool is_local_only(const http::RequestHead& request);

// Lives as long as the node; its coroutines run on the node's io_context, its reads of
// object files on its own disk executor.
class Replication {
 public:
  Replication(Peers& peers, store::Store& store, std::shared_ptr<http::Client> client, stats::Registry& stats);

  // A sync write at the owner: every holder must be up to take its copy.
  static Status check_holders_up(const wire::Bucket& bucket, const std::vector<wire::NodeInfo>& holders,
                                 const std::string& name);
  // Sends the version of `object` here now to each of `to` (in parallel).
  http::Awaitable<Status> push_copies(ObjectRef object, std::vector<wire::NodeInfo> to);
  // After a metadata change at the owner (tags): the other holders get the new record.
  http::Awaitable<Status> replicate_record(const ObjectRef& object, const std::vector<wire::NodeInfo>& holders,
                                           const wire::ObjectRecord& record);
  // Sends `source` to `holder` unless it has this version or a newer one (or the same in
  // the form the layout wants); whether the holder kept what was sent.
  http::Awaitable<Result<bool>> ensure_copy(const wire::NodeInfo& holder, const ObjectRef& object,
                                            const store::OpenObject& source);
  http::Awaitable<Result<Placed>> push_copy(const http::Endpoint& to, const ObjectRef& object,
                                            const store::OpenObject& source);
  // Replaces this node's copy of `object` with the newest one another target holds (none
  // anywhere: ok). `replacing`: the generation of a broken copy here it may replace. The
  // object by value: a read that misses its copy runs this detached, past its own end.
  http::Awaitable<Status> pull_copy(ObjectRef object, std::optional<uint64_t> replacing);

  // Another target's copy of an object and where it is.
  struct Holder {
    wire::NodeInfo node;
    http::Endpoint to;
    wire::ObjectRecord record;
  };
  // The other target that holds the newest version of `object` (mtime, then XXH3), asking
  // every one; nullopt when none has it. kUnavailable when none answered having it and one
  // that may have it is down or failed to answer twice.
  http::Awaitable<Result<std::optional<Holder>>> newest_holder(const ObjectRef& object);
  // The record `node` has of `object` (none: 404); kUnavailable when it is down or fails.
  http::Awaitable<Result<std::optional<wire::ObjectRecord>>> record_at(const wire::NodeInfo& node,
                                                                      const ObjectRef& object);
  // Takes back a copy sent to `owner` of an object deleted meanwhile (DELETE ?mtime=&xxh3=:
  // only that version).
  http::Awaitable<Status> send_undo(const http::Endpoint& owner, const ObjectRef& object, int64_t mtime,
                                    uint64_t xxh3);
  // Relays the read to `to`, which must answer from its own copy (X-Silo-Local-Only).
  http::Awaitable<Status> relay_local_only(http::Exchange& exchange, const http::Endpoint& to);

  // A copy here whose file is missing or whose bytes do not match their XXH3.
  struct BrokenCopy {
    uint64_t generation = 0;
    bool is_corrupt = false;  // false: the file is missing
  };
  http::Awaitable<std::optional<BrokenCopy>> broken_copy(const ObjectRef& object);
  // The XXH3 of the file's bytes, read on the disk executor.
  http::Awaitable<Result<uint64_t>> xxh3_of(const store::OpenObject& object);
  // The XXH3 and the block sums of the file's bytes, in one read on the disk executor.
  http::Awaitable<Result<store::FileSums>> sums_of(const store::OpenObject& object);
  // Checks the bytes of `object` against its XXH3 (every read does: docs/data-protection.md
  // "Verified reads"). kDataLoss (S3 DataLoss) when they differ; nothing was sent then.
  // Reads whole files: a read that sends bytes uses send_verified().
  http::Awaitable<Status> verify_read(const store::OpenObject& object);
  // Sends `head` (its length set here: `prefix` and `length` bytes), `prefix`, then bytes
  // [offset, offset + length) of `object` by sendfile. With kVerify each block the range
  // touches is checked just before its bytes go (store::BlockVerifier; a record without
  // block sums whole, first), the first one before `head`: a corrupt first block fails
  // as verify_read does, kDataLoss (S3 DataLoss) with nothing sent, which the reader
  // answers from another copy; a later one ends the response short with kDataLoss (the
  // server closes the connection: no client takes it for complete). Both are counted in
  // silo_target_corrupt_copies_total; after the head, the copy is also repaired in the
  // background (repair_later()). Requires: offset + length <= the record's size.
  http::Awaitable<Status> send_verified(http::Exchange& exchange, store::ReadCheck check, const ObjectRef& object,
                                        const store::OpenObject& opened, http::ResponseHead head, uint64_t offset,
                                        uint64_t length, std::string_view prefix = {});
  // For a read that found the copy here corrupt after its answer began (so get-from-
  // neighbor could not step in): replaces it in the background with a good copy from
  // another holder, if the object has one (counted as repaired), so the next read is
  // served. Returns at once.
  http::Awaitable<void> repair_later(const ObjectRef& object, uint64_t generation);
  // A corrupt copy here was replaced by a good one (counts it).
  void note_repaired() { corrupt_repaired_.add(); }
  // Counts a corrupt copy found by a reader other than verify_read (a scrub).
  void note_corrupt() { corrupt_found_.add(); }
  void note_copy_made() { copies_made_.add(); }

  // /v1/internal/objects/{bucket id}/{name}: this target's own copy, whoever owns the
  // object. GET (?meta=1: the record only; ?offset=&length=: part of it), PUT (a copy from
  // another target; ?meta=1: a new record of the same version; ?repair=1: may replace a
  // broken copy of the same version; ?stage=TOKEN: a slice of a coded overwrite, received
  // and fsynced but not committed), POST ?commit=TOKEN (commits that staged slice),
  // DELETE (?mtime=&xxh3=: only that version; ?stage=TOKEN: drops a staged slice).
  // `rest` is the path after /v1/internal/objects/. docs/wire-format.md.
  http::Awaitable<void> handle_internal_object(http::Exchange& exchange, std::string_view rest);
  // Waits until every copy accepted here before the call has committed or failed (a new
  // rebalance walk then lists what they brought). Returns early when `cancelled()`.
  http::Awaitable<void> drain_copies(const std::function<bool()>& cancelled);

 private:
  // A received copy or slice on its way into the store (store_copy(), a staged slice):
  // its writer, whose precondition decides at commit, under the object lock, whether it
  // replaces what is here, and what it did then. Lives until committed or dropped.
  struct Incoming {
    ObjectRef object;
    wire::ObjectRecord record;
    Placed placed;            // set by the precondition
    bool is_counted = false;  // in copies_in_flight_ since its precondition passed
    std::unique_ptr<store::ObjectWriter> writer;  // destroyed first: its precondition uses this
  };

  // Receives [record length][record][bytes] from `body` into the store, or keeps the
  // copy here when it is as new or newer (`replaces()`). `replacing`: a broken generation
  // here (missing file, bad XXH3) of the same version that the copy may replace.
  http::Awaitable<Result<Placed>> store_copy(http::BodyReader& body, const ObjectRef& object,
                                           std::optional<uint64_t> replacing = std::nullopt);
  // store_copy() up to the commit: the bytes are in the work file.
  http::Awaitable<Result<std::unique_ptr<Incoming>>> receive_copy(http::BodyReader& body,
                                                                  const ObjectRef& object,
                                                                  std::optional<uint64_t> replacing);
  http::Awaitable<Result<Placed>> commit_incoming(Incoming& incoming);
  // Staged slices of coded overwrites (docs/adr/0014, staged.cc).
  http::Awaitable<Status> stage_copy(http::Exchange& exchange, const ObjectRef& object, std::string token);
  http::Awaitable<Status> commit_staged(http::Exchange& exchange, const ObjectRef& object,
                                        const std::string& token);
  http::Awaitable<Status> drop_staged(http::Exchange& exchange, const ObjectRef& object,
                                      const std::string& token);
  // After its deadline, the staged slice `token` if still here (its owner failed): commits
  // it when another holder has its version committed, else drops it.
  http::Awaitable<void> expire_staged(std::string token);
  // Whether another candidate holder of `object` has a piece of the version of `slice`.
  http::Awaitable<bool> is_committed_elsewhere(const ObjectRef& object, const wire::ObjectRecord& slice);
  // Takes the staged slice `token` of `object` out of the table; nullptr when none.
  std::unique_ptr<Incoming> take_staged(const ObjectRef& object, const std::string& token);
  http::Awaitable<Status> serve_copy(http::Exchange& exchange, const ObjectRef& object);
  http::Awaitable<Status> take_record(http::Exchange& exchange, const ObjectRef& object);
  http::Awaitable<Status> take_copy(http::Exchange& exchange, const ObjectRef& object);
  http::Awaitable<Status> drop_copy(http::Exchange& exchange, const ObjectRef& object);
  // repair_later()'s work: a corrupt copy (still `generation`, still broken) pulled again.
  http::Awaitable<Status> repair_copy(ObjectRef object, uint64_t generation);
  // Checks the block of `object` that holds `offset` (on reader_ unless cached); a failure is counted and
  // logged as a corrupt copy here.
  http::Awaitable<Status> verify_block(store::BlockVerifier& verifier, const store::OpenObject& object,
                                       uint64_t offset);

  Peers& peers_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  async::DiskExecutor reader_{2};  // reads object files for pushes and checks

  // Copies received (rebalance, get-from-neighbor) between their ownership check and the
  // end of their commit: a new walk waits for them, so none lands behind its listing.
  Mutex copies_mutex_;
  uint64_t copies_in_flight_ GUARDED_BY(copies_mutex_) = 0;

  // Slices staged by coded overwrites, by token, until their owner commits or drops them
  // or their deadline passes (then dropped). A restart drops them with every work file.
  Mutex staged_mutex_;
  std::map<std::string, std::unique_ptr<Incoming>> staged_ GUARDED_BY(staged_mutex_);
  // Tokens dropped before their slice was staged (the owner gave up while this holder was
  // still syncing it), until when: such a slice is discarded as it arrives, not kept
  // until its deadline.
  std::map<std::string, std::chrono::steady_clock::time_point> dropped_early_ GUARDED_BY(staged_mutex_);

  stats::Counter& bytes_sent_;
  stats::Counter& forwards_;
  stats::Counter& corrupt_found_;
  stats::Counter& corrupt_repaired_;
  stats::Counter& copies_made_;
};

}  // namespace silo::replication
