#pragma once

#include <map>
#include <memory>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "cache/cache.h"
#include "cluster/bucket_writes.h"
#include "cluster/cluster_maps.h"
#include "config/live_config.h"
#include "async/signal.h"
#include "cluster/primary.h"
#include "cluster/s3_request.h"
#include "config/config.h"
#include "http/client.h"
#include "http/server.h"
#include "stats/registry.h"
#include "async/disk_executor.h"
#include "store/store.h"
#include "target/copy_wire.h"
#include "target/object_request.h"

namespace silo::target {

struct TargetOptions {
  wire::NodeInfo self;
  // The node's effective cluster config (the file's with the run-time overrides); read
  // through cluster(), once per request or loop round, so changes apply at once.
  std::shared_ptr<const config::LiveConfig> config;
  std::string state_dir;  // the node's state directory (the mountpath set last seen)
};

// The mountpaths a target opens at start: the configured ones, less those detached at run
// time, plus those attached at run time (<state_dir>/mountpath_changes, written by
// remember_mountpath_change). Blocking.
std::vector<std::string> mountpaths_to_open(const std::vector<std::string>& configured, const std::string& state_dir);
// Records that `path` was attached (or detached) at run time. Blocking.
Status remember_mountpath_change(const std::string& state_dir, const std::string& path, bool attached);

// The storage role: serves the objects this node owns from its Store, forwards requests
// for objects it does not own to their owner, answers the proxies' listing requests, and
// removes the data of deleted buckets. Lives as long as the node; its coroutines run on the
// node's io_context, its disk work on the Store's executors.
class Target {
 public:
  // `member` is the link to the primary used to catch up when a request shows this node's
  // maps are stale; null on the primary itself (role all), whose maps are the newest.
  // `writes` and `cache` are the node's, shared with the cache (which commits fetched
  // objects); both outlive the Target.
  Target(TargetOptions options, cluster::ClusterMaps& maps, store::Store& store,
         std::shared_ptr<http::Client> client, cluster::Member* member, stats::Registry& stats,
         cluster::BucketWrites& writes, cache::Cache& cache);

  // PUT, GET, HEAD, DELETE /v1/objects/{bucket}/{name}: the exchange's path decides.
  http::Awaitable<void> handle_object(http::Exchange& exchange, std::string bucket, std::string name);
  // GET /v1/internal/list/{bucket}?prefix=&start_after=&limit= -> wire::ListPage.
  http::Awaitable<void> handle_list(http::Exchange& exchange, std::string bucket);
  // Removes the objects of buckets deleted from the bucket map.
  http::Awaitable<void> collect_deleted_buckets();
  // An S3 object operation (s3_objects.cc) routed here: runs it when this node owns the
  // object, else forwards it to the owner.
  http::Awaitable<void> handle_s3(http::Exchange& exchange, const cluster::S3Request& request);
  // GET /v1/internal/uploads/{bucket}?prefix=&key_marker=&upload_id_marker=&limit=
  // -> wire::UploadPage (the proxy merges ListMultipartUploads from these).
  http::Awaitable<void> handle_list_uploads(http::Exchange& exchange, std::string bucket);
  // Removes multipart uploads older than the configured TTL, every `period`, forever.
  http::Awaitable<void> sweep_uploads(std::chrono::milliseconds period);

  // Rebalance (rebalance.cc, docs/membership-and-rebalance.md).
  // Starts, restarts or stops this target's rebalance walk as the node map says. Call after
  // every installed map change and at start.
  http::Awaitable<void> sync_rebalance();
  // GET /v1/internal/rebalance -> wire::RebalanceProgress.
  http::Awaitable<void> handle_rebalance_progress(http::Exchange& exchange);
  // /v1/internal/objects/{bucket id}/{name}: this target's own copy, whoever owns the
  // object. GET (?meta=1: the record only), PUT (a copy from another target), DELETE
  // (?mtime=&xxh3=: only that version).
  http::Awaitable<void> handle_internal_object(http::Exchange& exchange, std::string_view rest);
  // Stops the walk (shutdown).
  void stop_rebalance();

  // POST /v1/internal/evict/{bucket} (wire::EvictRequest): removes the cached objects of a
  // remote bucket that the request selects from this target -> {"evicted": N}.
  http::Awaitable<void> handle_evict(http::Exchange& exchange, std::string bucket);
  // Gives the other holders of every object the cache fetched (cold GETs, prefetch) their
  // copies, as after any write. Runs until the cache stops.
  http::Awaitable<void> replicate_fetched();

  // Tasks the primary runs on every target as one job (scrub.cc): /v1/internal/tasks/{job
  // id}: POST starts it (scrub-N: ?bucket=&rate_bytes=), GET answers its
  // wire::RebalanceProgress, DELETE stops it.
  http::Awaitable<void> handle_task(http::Exchange& exchange, std::string id);

  // Mountpaths and resilver (mountpaths.cc).
  // /v1/mountpaths: GET lists them with their state and the last resilver (or detach);
  // POST /v1/mountpaths/{id}/disable|enable (admins) takes one out of service or puts it
  // back, then resilvers; POST /v1/mountpaths {"path"} (admins) attaches one, then
  // resilvers; DELETE /v1/mountpaths/{id} (admins) starts its detach (202; GET shows how
  // it ends). Attach and detach are remembered across restarts (mountpaths_to_open).
  // `rest` is the path after /v1/mountpaths.
  http::Awaitable<void> handle_mountpaths(http::Exchange& exchange, std::string_view rest, bool is_admin);
  // Probes the mountpaths every `period` and takes failed ones out; resilvers at start
  // when the set of mountpaths changed since the last run. Runs until stop_rebalance().
  http::Awaitable<void> watch_mountpaths(std::chrono::milliseconds period);

 private:
  struct Resolved {
    wire::Bucket bucket;
    ObjectRef object;
    bool is_local = false;        // this node owns the object
    wire::NodeInfo owner;
    std::vector<wire::NodeInfo> holders;  // where its copies live, the owner first
    bool is_holder = false;               // this node is one of them (serves reads)
  };
  // The bucket named `name`, catching up with the primary once when it is unknown here.
  http::Awaitable<Result<wire::Bucket>> find_bucket(const std::string& name);
  // Finds the bucket and the owner, catching up with the primary once when the request
  // shows newer maps than ours.
  http::Awaitable<Result<Resolved>> resolve(const http::RequestHead& request, const std::string& bucket,
                                            const std::string& name);
  // Where object `name` of `bucket` lives under this node's maps.
  Result<Resolved> placed(const wire::Bucket& bucket, const std::string& name) const;
  using ColdRead = cache::ColdRead;
  // Whether this node runs the request: the owner runs everything, any holder a read, and
  // a holder asked for its own copy (kLocalOnlyHeader) answers with it.
  bool serves_here(const http::RequestHead& request, const Resolved& r, bool is_read) const;
  // Relays the request to the owner, or a read to the first holder that is up.
  http::Awaitable<Status> forward(http::Exchange& exchange, const Resolved& r);
  // Relays the request to `node` as forwarded, with the newest map versions either side
  // has seen.
  http::Awaitable<Status> relay_to(http::Exchange& exchange, const wire::NodeInfo& node);
  store::Durability durability_of(const wire::Bucket& bucket) const;
  // Counts a commit into a bucket from the moment it passed guard_bucket's check until it
  // is done, so that a bucket delete can wait for those before it checks for emptiness
  // (cluster::BucketWrites, shared with the cache).
  class WriteTicket {
   public:
    explicit WriteTicket(Target& target) : ticket_(target.writes_) {}

   private:
    friend class Target;
    cluster::BucketWrites::Ticket ticket_;
  };
  // Wraps options.precondition: the commit fails with NoSuchBucket when the bucket is
  // gone or being deleted by then (checked under the object lock), else counts `ticket`.
  void guard_bucket(store::PutOptions& options, const wire::Bucket& bucket, WriteTicket& ticket);
  // The bucket as a proxy's request sees it: catches up to the request's bucket map
  // version, and for a bucket marked deleting waits for the commits in flight.
  http::Awaitable<Result<wire::Bucket>> bucket_as_sender_sees_it(const http::RequestHead& request,
                                                                 const std::string& bucket_name);
  // Waits until no commit into `bucket_id` is in flight (a delete's emptiness check).
  http::Awaitable<Status> drain_writes(uint64_t bucket_id);
  // Streams `body` into `writer` in large pieces, feeding `checksums`; returns the bytes.
  http::Awaitable<Result<uint64_t>> receive(http::BodyReader& body, store::ObjectWriter& writer,
                                            std::vector<s3::Checksum*> checksums);

  // The object service (object_service.cc, object_request.h): PUT, GET, HEAD, DELETE and
  // copy of one object, served once for both front-ends. handle_object() (native) and
  // run_s3() (S3) parse the request into an ObjectRequest, serve_object() runs it, and
  // only the answer's shape depends on the front-end.
  http::Awaitable<Status> serve_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r);
  http::Awaitable<Status> put_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r);
  // A GET or HEAD of the copy here, or with `cold` of an object of a remote bucket being
  // fetched from its backend.
  http::Awaitable<Status> get_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r,
                                     const ColdRead* cold);
  // A Range that is not satisfiable: S3's InvalidRange error, or the native 416 answer.
  http::Awaitable<Status> refuse_range(http::Exchange& exchange, const ObjectRequest& request, const Status& error,
                                       uint64_t size);
  http::Awaitable<Status> delete_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r);
  // CopyObject and UploadPartCopy: the source is read through the native GET of a holder.
  http::Awaitable<Status> copy_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r);
  struct CopyFrom;
  http::Awaitable<Result<CopyFrom>> open_copy_source(const ObjectRequest& request);
  store::PutOptions put_options(const ObjectRequest& request, const wire::Bucket& bucket) const;
  // A new version of the object (its commit guarded by guard_bucket), or a part.
  http::Awaitable<Result<std::unique_ptr<store::ObjectWriter>>> open_writer(const ObjectRequest& request,
                                                                           const Resolved& r,
                                                                           store::PutOptions options,
                                                                           WriteTicket& ticket);
  // Commits, then publish()es a new version of the object (a part waits for Complete).
  http::Awaitable<Result<wire::ObjectRecord>> commit_write(const ObjectRequest& request, const Resolved& r,
                                                           store::ObjectWriter& writer);
  // Receives a PUT or UploadPart body into `writer`: S3's aws-chunked decoded and its
  // checksums checked (their headers put into `response`), at most request.max_size bytes.
  http::Awaitable<Status> receive_payload(http::Exchange& exchange, const ObjectRequest& request,
                                          store::ObjectWriter& writer, http::Headers& response);

  // S3 (s3_objects.cc): the front-end, and the operations only S3 has.
  http::Awaitable<Status> run_s3(http::Exchange& exchange, const cluster::S3Request& request, const Resolved& r);
  http::Awaitable<Status> s3_tagging(http::Exchange& exchange, const cluster::S3Request& request, const Resolved& r);
  http::Awaitable<Status> s3_multipart(http::Exchange& exchange, const cluster::S3Request& request,
                                       const Resolved& r);

  // Remote buckets (remote.cc, docs/remote-buckets.md): the cache (src/cache) does the
  // work; these decide, once per request, whether a bucket goes through it, and do what
  // only the target can (relay a miss to the owner, remove every copy, replicate).
  using CachedReadFn = std::function<http::Awaitable<Status>(const ColdRead* cold)>;
  // A GET or HEAD: `read(nullptr)` serves the copy here (or a neighbor's). A local
  // bucket's read goes nowhere else; a remote bucket's goes through read_remote().
  http::Awaitable<Status> read_object(http::Exchange& exchange, const Resolved& r, CachedReadFn read);
  // In a remote bucket a miss becomes a cold read (`read(&cold)`) at the owner, a stale
  // copy (revalidating bucket) is fetched anew, and one deleted at the backend is dropped.
  http::Awaitable<Status> read_remote(http::Exchange& exchange, const Resolved& r, CachedReadFn read);
  // After a client's write committed at the owner: in a remote bucket the object goes to
  // the backend first (write-through; on failure the write is taken back), then to the
  // other holders (replicate).
  http::Awaitable<Status> publish(const Resolved& r);
  // A DELETE in a remote bucket: the backend's object first, then the copies everywhere.
  http::Awaitable<Status> remove_remote(const Resolved& r);
  // replicate() of one object the cache fetched (`r` is owned by the coroutine).
  http::Awaitable<void> replicate_fetched_object(Resolved r);
  // The body of POST /v1/internal/tasks/{id}: the job request, checked against the kind
  // the id names, and the bucket it names (caught up with the primary once when unknown).
  struct TaskStart {
    wire::JobRequest request;
    std::optional<wire::Bucket> bucket;  // all buckets when unset
  };
  http::Awaitable<Result<TaskStart>> read_task_start(http::Exchange& exchange, const std::string& id);
  // /v1/internal/tasks/prefetch-*: the cache's prefetch tasks (see handle_task).
  http::Awaitable<void> handle_prefetch_task(http::Exchange& exchange, const std::string& id);
  // A target's part of a scrub job (scrub.cc, detail/task.h).
  struct Task;

  // Rebalance (rebalance.cc).
  struct Walk;
  bool is_rebalancing() const;
  // Get-from-neighbor: while a rebalance runs, copies a missing object here from the
  // target that still has it. ok when the object is here now or nowhere (the caller's own
  // lookup then answers NoSuchKey); kUnavailable when a target that may hold it is down.
  http::Awaitable<Status> pull_if_missing(const ObjectRef& object);
  // Another target's copy of an object and where it is.
  struct Holder {
    wire::NodeInfo node;
    http::Endpoint to;
    wire::ObjectRecord record;
  };
  // The other target that holds the newest version of `object` (mtime, then XXH3), asking
  // every one; nullopt when none has it. kUnavailable when none answered having it and one
  // that may have it is down or unreachable.
  http::Awaitable<Result<std::optional<Holder>>> newest_holder(const ObjectRef& object);
  // Whether the request asks for this node's own copy (kLocalOnlyHeader, forwarded).
  static bool is_local_only(const http::RequestHead& request);
  // A GET or HEAD that missed here while a rebalance runs: relays it to the target that
  // still has the object, streaming the answer (no copy waits). NoSuchKey when none has
  // it; kUnavailable when one that may have it is down.
  http::Awaitable<Status> read_from_neighbor(http::Exchange& exchange, const ObjectRef& object);
  // Relays the read to `to`, which must answer from its own copy (X-Silo-Local-Only).
  http::Awaitable<Status> relay_local_only(http::Exchange& exchange, const http::Endpoint& to);
  // Runs a GET or HEAD (`read`) and, when it missed before answering anything while a
  // rebalance runs, reads from the neighbor instead.
  template <typename ReadFn>
  http::Awaitable<Status> read_here_or_neighbor(http::Exchange& exchange, const ObjectRef& object, ReadFn read);
  // While a rebalance runs, a DELETE also removes the copies other targets still hold.
  // Returns whether any had one.
  http::Awaitable<Result<bool>> remove_elsewhere(const ObjectRef& object);
  // A DELETE: the copies elsewhere (remove_elsewhere), then this node's. kNotFound
  // (NoSuchKey) when no copy was anywhere.
  http::Awaitable<Status> remove_everywhere(const ObjectRef& object);
  http::Awaitable<void> walk(std::shared_ptr<Walk> walk);
  http::Awaitable<Status> walk_once(Walk& walk);
  // Copies one object to every holder that lacks it (COPY), or makes sure they have it and
  // removes it here when this node is not one of them (CLEANUP).
  http::Awaitable<Status> move_object(Walk& walk, const ObjectRef& object, const std::vector<wire::NodeInfo>& holders);
  // Sends `source` to `holder` unless it has this version or a newer one (or the same in
  // the form the layout wants); whether the holder kept what was sent.
  http::Awaitable<Result<bool>> ensure_copy(const wire::NodeInfo& holder, const ObjectRef& object,
                                            const store::OpenObject& source);
  http::Awaitable<Result<Placed>> push_copy(const http::Endpoint& to, const ObjectRef& object,
                                            const store::OpenObject& source);
  // Receives [record length][record][bytes] from `body` into the store, or keeps the
  // copy here when it is as new or newer (`replaces()`).
  // `replacing`: a broken generation here (missing file, bad XXH3) of the same version
  // that the copy may replace.
  http::Awaitable<Result<Placed>> store_copy(http::BodyReader& body, const ObjectRef& object,
                                           std::optional<uint64_t> replacing = std::nullopt);
  std::optional<wire::Bucket> bucket_by_id(uint64_t id) const;

  // Data protection (protection.cc, docs/data-protection.md).
  // The targets that hold copies of `object` under the current maps, the owner first;
  // empty when its bucket is unknown here.
  std::vector<wire::NodeInfo> holders_of(const ObjectRef& object) const;
  // A sync write at the owner: every other holder must be up to take its copy.
  Status check_holders_up(const Resolved& r) const;
  // After a commit at the owner: the other holders get the object, before the answer
  // (sync) or in the background (async).
  http::Awaitable<Status> replicate(const Resolved& r);
  // Where full copies of `object` live: holders_of(), or for an erasure-coded bucket the
  // first parity + 1 of them (its small objects).
  std::vector<wire::NodeInfo> replica_holders(const ObjectRef& object) const;

  // Erasure coding (erasure.cc, docs/data-protection.md "Layout: erasure coding").
 public:
  // One slice being written, here or to another target (erasure.cc; public only so that
  // that file's helpers can take it).
  struct SliceSink;

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
  // After a whole object of an erasure-coded bucket is here (a PUT at the owner, or a
  // re-encoding walk): sends slice i to holders[i] (parity + 1 full copies for objects
  // under min_size), all confirmed, then keeps its own slice in place of the whole object
  // when this node is a holder. On failure the slices sent are taken back.
  http::Awaitable<Status> encode_and_spread(ObjectRef object, std::vector<wire::NodeInfo> holders);
  // Answers with object bytes [offset, offset + length) of the erasure-coded object whose
  // slice `mine` is here (`head` prepared by the caller): the k data slices read in
  // parallel, or any k when some are missing or corrupt (then rebuilt in the background).
  http::Awaitable<Status> send_ec(http::Exchange& exchange, const Resolved& r, store::OpenObject& mine,
                                  http::ResponseHead head, uint64_t offset, uint64_t length);
  // Rebuilds the slices of the version here that no holder has, that are corrupt here, or
  // that are listed in `unreadable`, and sends each to a holder that has none; how many
  // it placed (0 when a newer version exists or the free holders are down).
  http::Awaitable<Result<size_t>> rebuild_slices(ObjectRef object, std::vector<uint32_t> unreadable);
  http::Awaitable<Status> rebuild_slices_status(ObjectRef object, std::vector<uint32_t> unreadable);
  // rebuild_slices() in the background.
  http::Awaitable<void> start_rebuild(ObjectRef object, std::vector<uint32_t> unreadable);
  // Waits for every other target to confirm its slice (fsynced), then commits the ones
  // here; a receiver that kept its own piece must hold this very slice. kAborted when
  // the object here changed or a newer version turned up.
  http::Awaitable<Status> finish_slice_sinks(const ObjectRef& object, std::vector<SliceSink>& sinks);
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
  // A copy here whose file is missing or whose bytes do not match their XXH3.
  struct BrokenCopy {
    uint64_t generation = 0;
    bool is_corrupt = false;  // false: the file is missing
  };
  http::Awaitable<std::optional<BrokenCopy>> broken_copy(const ObjectRef& object);
  // Opens the writer of slice `record` on `node`: this store (in place of generation
  // `replacing` only) or a PUT to that target.
  http::Awaitable<Result<SliceSink>> open_slice_sink(const ObjectRef& object, const wire::ObjectRecord& record,
                                                     const wire::NodeInfo& node, const wire::Bucket& bucket,
                                                     uint64_t replacing);
  // The walk's work on a slice, or on a full copy of an erasure-coded bucket's object.
  // Sets `is_holder`; kAborted when the object here changed form (decoded): walk it again.
  http::Awaitable<Status> move_coded(const ObjectRef& object,
                                     const std::vector<wire::NodeInfo>& holders, store::OpenObject& opened,
                                     bool& is_holder);
  // Run by the first holder (by rank) that has a slice of the version `mine` describes:
  // rebuilds the slices no holder has. True when it rebuilt some.
  http::Awaitable<Result<bool>> restore_slices(const ObjectRef& object, const wire::ObjectRecord& mine);
  // The record `node` has of `object` (none: 404); kUnavailable when it is down or fails.
  http::Awaitable<Result<std::optional<wire::ObjectRecord>>> record_at(const wire::NodeInfo& node,
                                                                      const ObjectRef& object);
  // The record as clients see the object: a slice's shows the object's size and XXH3.
  static wire::ObjectRecord object_view(const wire::ObjectRecord& record);

  // Runs `work` detached from any request, logging its failure as `what`.
  http::Awaitable<void> in_background(http::Awaitable<Status> work, std::string what);
  // Sends the version of `object` here now to each of `to` (in parallel).
  http::Awaitable<Status> push_copies(ObjectRef object, std::vector<wire::NodeInfo> to);
  // After a metadata change at the owner (tags): the other holders get the new record.
  http::Awaitable<Status> replicate_record(const Resolved& r, const wire::ObjectRecord& record);
  // The XXH3 of the file's bytes, read on the reader executor.
  http::Awaitable<Result<uint64_t>> xxh3_of(const store::OpenObject& object);
  // Whether this node is one of `nodes`.
  bool is_self_among(const std::vector<wire::NodeInfo>& nodes) const;
  std::vector<wire::NodeInfo> others_than_self(const std::vector<wire::NodeInfo>& nodes) const;
  // Checks the bytes of `object` against its XXH3 when the bucket verifies reads.
  // kDataLoss (S3 InternalError) when they differ; nothing was sent then.
  http::Awaitable<Status> verify_read(const wire::Bucket& bucket, const store::OpenObject& object);
  // Replaces this node's copy of `object` with the newest one another target holds.
  // `replacing`: the generation of a corrupt copy here that the new one may replace.
  http::Awaitable<Status> pull_copy(const ObjectRef& object, std::optional<uint64_t> replacing);
  http::Awaitable<void> run_scrub(std::shared_ptr<Task> task);
  // Checks one copy; replaces it when corrupt; gives holders that lack it a copy when
  // this node is the first holder that is up.
  http::Awaitable<Status> scrub_object(Task& task, const ObjectRef& object);
  Mutex tasks_mutex_;
  std::map<std::string, std::shared_ptr<Task>> tasks_ GUARDED_BY(tasks_mutex_);  // by job id

  struct Resilver;
  // Starts a resilver, preempting one that runs; with `detach_id`, the detach of that
  // mountpath instead (which moves only what is on it; its reason names the mountpath).
  void start_resilver(boost::asio::any_io_executor executor, std::string reason, std::string detach_id = {});
  // Remembers the mountpaths in use now (so a restart resilvers only when they changed).
  void remember_mountpath_set();
  http::Awaitable<void> attach_mountpath(http::Exchange& exchange);
  // Checks a detach and starts it in the background (errors: kNotFound, the last one in
  // service, a detach already running).
  Status start_detach(boost::asio::any_io_executor executor, std::string id);
  http::Awaitable<void> run_resilver(std::shared_ptr<Resilver> resilver);
  Mutex resilver_mutex_;
  std::shared_ptr<Resilver> resilver_ GUARDED_BY(resilver_mutex_);  // the current or last one
  std::atomic<bool> is_stopping_{false};

  // Copies received (rebalance, get-from-neighbor) between their ownership check and the
  // end of their commit: a new walk waits for them, so none lands behind its listing.
  Mutex copies_mutex_;
  uint64_t copies_in_flight_ GUARDED_BY(copies_mutex_) = 0;
  http::Awaitable<void> drain_copies(Walk& walk);
  // Takes back copies of objects deleted while being sent (DELETE ?mtime=&xxh3=).
  http::Awaitable<Status> send_undo(const http::Endpoint& owner, const ObjectRef& object, int64_t mtime,
                                    uint64_t xxh3);
  // send_undo() for the walk's pending ones; those that fail stay pending.
  http::Awaitable<Status> retry_undos(Walk& walk);

  Mutex rebalance_mutex_;
  std::shared_ptr<Walk> walk_ GUARDED_BY(rebalance_mutex_);  // the current or last walk
  async::DiskExecutor reader_{2};  // reads object files for pushes

  // The effective cluster config now (one snapshot: read every value of a request from it).
  std::shared_ptr<const config::ClusterConfig> live_config() const { return options_.config->get(); }

  const TargetOptions options_;
  cluster::ClusterMaps& maps_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  cluster::Member* member_;
  cluster::BucketWrites& writes_;
  cache::Cache& cache_;
  stats::Counter& bytes_received_;
  stats::Counter& bytes_sent_;
  stats::Counter& puts_;
  stats::Counter& gets_;
  stats::Counter& deletes_;
  stats::Counter& forwards_;
  stats::Counter& errors_;
  stats::Counter& corrupt_found_;
  stats::Counter& corrupt_repaired_;
  stats::Counter& copies_made_;
  stats::Counter& slices_made_;
  stats::Counter& degraded_reads_;
  stats::Counter& duplicate_slices_dropped_;
};

}  // namespace silo::target
