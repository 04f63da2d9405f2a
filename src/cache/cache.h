#pragma once

// The cache in front of remote buckets' backends (docs/remote-buckets.md): cold reads with
// single-flight fetches, revalidation, write-through, deletes and evicts at the backend,
// prefetch tasks, and the space watcher (watermarks, LRU eviction, out-of-space).
#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/mutex.h"
#include "backend/backend_pool.h"
#include "backend/object_backend.h"
#include "base/object_ref.h"
#include "base/result.h"
#include "base/thread_annotations.h"
#include "cache/fetch.h"
#include "cache/chunk_budget.h"
#include "cluster/durability.h"
#include "cluster/cluster_maps.h"
#include "async/signal.h"
#include "config/live_config.h"
#include "http/server.h"
#include "stats/registry.h"
#include "async/disk_executor.h"
#include "store/store.h"
#include "wire/json.h"

namespace silo::cache {

// The backend of a remote bucket (kFailedPrecondition / kInvalidArgument when it has none).
using BackendFinder = std::function<Result<std::shared_ptr<backend::ObjectBackend>>(const wire::Bucket& bucket)>;
// The backends of `pool`; a null pool makes every remote bucket fail with a clear error.
BackendFinder backends_of(std::shared_ptr<backend::BackendPool> pool);

struct CacheOptions {
  std::string node_id;  // this node (ownership of prefetched objects; messages)
  // The node's effective cluster config (the watermarks, range GETs, prefetch workers
  // are read from it once per fetch or loop round: they change at run time).
  std::shared_ptr<const config::LiveConfig> config;
  BackendFinder backend_of;
  // How full the fullest in-service mountpath is, in percent. Unset: from the store's
  // mountpaths (statvfs). Tests set it to drive the watermarks.
  std::function<double()> fullest_mountpath_percent;
};

// What a read of an object that is not cached serves: the backend's description, and the
// fetch that brings its bytes (null for a HEAD, which fetches nothing).
struct ColdRead {
  wire::ObjectRecord record;
  std::shared_ptr<Fetch> fetch;
};

// How a cached copy compares with the backend's object (a revalidating bucket's GET).
enum class Freshness {
  kFresh,  // the same ETag, or the backend can not be asked (availability over freshness)
  kStale,  // another ETag: fetch it anew
  kGone,   // deleted at the backend: the copies here must go too
};

// An object a fetch committed here: its other holders still need their copies.
struct Fetched {
  wire::Bucket bucket;
  ObjectRef object;
};

// A node's cache of remote buckets' objects in its Store. Owns the fetches in flight (one
// per object: single flight), the record of reads for the LRU, the memory budget of range
// GETs, the prefetch tasks and the out-of-space state. Created by the node beside its
// Target (which calls it for remote buckets only) and lives as long as the node; its
// coroutines run on the node's io_context, blocking reads on its own executor. It never
// calls into the target: what the target must do after a cache operation (replicate a
// fetched object, remove the copies of one gone at the backend) is returned to it.
// Thread-safe.
class Cache {
 public:
  Cache(CacheOptions options, const cluster::ClusterMaps& maps, store::Store& store, stats::Registry& stats);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Reads (cache.cc). `bucket` is always a remote bucket.
  // A read served from the copy here: counted as a hit, and noted for the LRU.
  void note_hit(const ObjectRef& object);
  // What the backend says of an object that is not cached (a HEAD: nothing is fetched).
  http::Awaitable<Result<wire::ObjectRecord>> describe(const wire::Bucket& bucket, const ObjectRef& object);
  // The fetch of `object`: joined when one runs, else started (detached from the caller,
  // on its executor). Returns once the backend described the object, or with why the
  // fetch failed.
  http::Awaitable<Result<ColdRead>> fetch(const wire::Bucket& bucket, const ObjectRef& object);
  // Sends bytes [offset, offset + length) of `fetch` to the client as they land (after
  // `head`). A failed fetch cuts the answer: the client sees a short body, never wrong
  // bytes. The object's last byte is sent only after the commit.
  http::Awaitable<Status> send_fetching(http::Exchange& exchange, Fetch& fetch, http::ResponseHead head,
                                        uint64_t offset, uint64_t length);
  // Waits until `fetch` ended: the bytes fetched, or why it failed.
  http::Awaitable<Result<uint64_t>> wait_fetched(Fetch& fetch);
  // Whether the copy here (`cached`) is the backend's object.
  http::Awaitable<Result<Freshness>> freshness(const wire::Bucket& bucket, const ObjectRef& object,
                                               const wire::ObjectRecord& cached);
  // The copies of `object` were removed because the backend no longer has it.
  void note_gone(const ObjectRef& object);
  // The next object a fetch committed (waits for one); nullopt once stopped. The target
  // takes these to give the other holders their copies.
  http::Awaitable<std::optional<Fetched>> next_fetched();

  // Writes (cache.cc).
  // A client's write of `object` committed here: uploads it to the backend from the
  // committed file and records the backend's ETag. When the backend refuses, this
  // generation is removed again and the write fails (kUnavailable).
  http::Awaitable<Status> write_through(const wire::Bucket& bucket, const ObjectRef& object);
  // A DELETE: the backend's object first; a fetch of it in flight is marked so that it
  // can no longer commit. The caller then removes the copies.
  http::Awaitable<Status> remove_at_backend(const wire::Bucket& bucket, const ObjectRef& object);
  // Removes the cached objects of `bucket` that `selection` names (a prefix: listed from
  // the store) from this node: every piece (copies and slices). How many went.
  http::Awaitable<Result<uint64_t>> evict(const wire::Bucket& bucket, const wire::ObjectSelection& selection);

  // Space (space.cc, docs/remote-buckets.md "Capacity").
  // kResourceExhausted (507 InsufficientStorage) while a mountpath is past out-of-space
  // (the watcher's flag, or a statvfs of this call's own).
  Status check_space() const;
  // check_space(), after evicting least recently used cached objects when it fails
  // (what a fetch into the cache calls).
  http::Awaitable<Status> make_room();
  // Every cluster.cache.space_check_interval: past the high watermark evicts (evict_lru);
  // past out-of-space new objects are refused. Runs until stop().
  http::Awaitable<void> watch_space();
  // Evicts cached objects of remote buckets, least recently used first (the last read
  // since start, else the time the copy was written), two at a time, until the fullest
  // mountpath is under the low watermark or nothing is left; never an object of a local
  // bucket. How many went.
  http::Awaitable<uint64_t> evict_lru();

  // Prefetch tasks (prefetch.cc, docs/remote-buckets.md "Prefetch"), by job id.
  // Starts this node's part of a prefetch job on `executor`: the objects it owns among
  // those `request` selects (no bucket: the task fails). False when it runs already (a
  // retried start).
  bool start_prefetch(const boost::asio::any_io_executor& executor, std::string id, wire::JobRequest request,
                      std::optional<wire::Bucket> bucket);
  // The task's progress; nullopt when there is no such task here.
  std::optional<wire::RebalanceProgress> prefetch_progress(const std::string& id);
  // Asks the task to stop (each worker finishes its object); false when there is none.
  bool stop_prefetch(const std::string& id);

  // Stops the space watcher, the prefetch tasks and next_fetched() (shutdown).
  void stop();

 private:
  using Key = std::pair<uint64_t, std::string>;  // bucket id, object name
  static Key key_of(const ObjectRef& object) { return {object.bucket_id.value(), object.name}; }
  struct PrefetchTask;
  struct PrefetchItem;

  Result<std::shared_ptr<backend::ObjectBackend>> backend_of(const wire::Bucket& bucket) const;
  // Runs a fetch to its end; then announces it (next_fetched) when it committed.
  http::Awaitable<void> run_fetch(std::shared_ptr<Fetch> fetch);
  // Opens the store writer of a fetch; on failure discards it before reporting, so a
  // failed fetch has left nothing once it is seen.
  http::Awaitable<Status> fetch_into_store(Fetch& fetch);
  // The bytes of a fetch into `out`, then its commit.
  http::Awaitable<Status> fetch_into(Fetch& fetch, store::ObjectWriter& out,
                                     std::shared_ptr<backend::ObjectBackend> backend);
  // The bytes after the first chunk (`first` describes the object): chunks of
  // range_get_size, range_get_streams at a time, of the first chunk's version (If-Match),
  // given to `sink` in order.
  http::Awaitable<Status> fetch_rest(backend::ObjectBackend& backend, const std::string& name,
                                     const backend::RemoteObject& first, const config::ClusterConfig& config,
                                     const backend::Sink& sink);
  // `op`, counted and timed as one backend operation.
  template <typename T>
  http::Awaitable<T> timed(http::Awaitable<T> op);

  double fullest_mountpath_percent() const;

  http::Awaitable<void> run_prefetch(std::shared_ptr<PrefetchTask> task);
  // Fetches the items this node owns, the task's workers (or the configured number) at a
  // time; those cached with the backend's ETag are skipped.
  http::Awaitable<void> prefetch_batch(PrefetchTask& task, const std::vector<PrefetchItem>& items);
  http::Awaitable<Status> prefetch_one(PrefetchTask& task, const PrefetchItem& item);
  bool owns(const ObjectRef& object) const;

  // The effective cluster config now (one snapshot per fetch or loop round).
  std::shared_ptr<const config::ClusterConfig> live_config() const { return options_.config->get(); }

  const CacheOptions options_;
  const cluster::ClusterMaps& maps_;
  store::Store& store_;
  async::DiskExecutor reader_{2};  // reads committed files for write-through
  ChunkBudget chunks_;
  std::atomic<bool> is_stopping_{false};
  std::atomic<bool> is_out_of_space_{false};

  Mutex fetches_mutex_;
  std::map<Key, std::shared_ptr<Fetch>> fetches_ GUARDED_BY(fetches_mutex_);  // in flight

  Mutex atimes_mutex_;
  std::map<Key, int64_t> atimes_ GUARDED_BY(atimes_mutex_);  // reads since start (unix nanos)

  Mutex fetched_mutex_;
  std::deque<Fetched> fetched_ GUARDED_BY(fetched_mutex_);  // committed, not taken yet
  async::Signal fetched_signal_;

  Mutex tasks_mutex_;
  std::map<std::string, std::shared_ptr<PrefetchTask>> tasks_ GUARDED_BY(tasks_mutex_);  // by job id

  stats::Counter& hits_;
  stats::Counter& misses_;
  stats::Counter& backend_bytes_;
  stats::Counter& backend_errors_;
  stats::Counter& backend_operations_;
  stats::Counter& backend_nanos_;
  stats::Counter& evictions_;
  stats::Counter& bytes_sent_;
};

}  // namespace silo::cache
