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
#include "cluster/cluster_maps.h"
#include "config/live_config.h"
#include "async/signal.h"
#include "cluster/primary.h"
#include "s3api/s3_request.h"
#include "config/config.h"
#include "http/client.h"
#include "http/server.h"
#include "stats/registry.h"
#include "erasure/erasure.h"
#include "rebalance/rebalance.h"
#include "replication/peers.h"
#include "replication/replication.h"
#include "scrub/scrub.h"
#include "shards/shards.h"
#include "store/store.h"
#include "target/completed_uploads.h"
#include "target/object_request.h"

namespace silo::target {

struct TargetOptions {
  wire::NodeInfo self;
  // The node's effective cluster config (the file's with the run-time overrides); read
  // through cluster(), once per request or loop round, so changes apply at once.
  std::shared_ptr<const config::LiveConfig> config;
};

// The storage role: serves the objects this node owns from its Store, forwards requests
// for objects it does not own to their owner, answers the proxies' listing requests, and
// removes the data of deleted buckets. What happens to an object's other copies is the
// data services' beneath it (replication, erasure, rebalance, scrub, cache): the target
// decides once per request which applies and delegates. Lives as long as the node; its
// coroutines run on the node's io_context, its disk work on the Store's executors.
class Target {
 public:
  // The data services beneath the target, made by the node before it and outliving it.
  struct Services {
    replication::Peers& peers;
    replication::Replication& replication;
    erasure::Erasure& erasure;
    rebalance::Rebalance& rebalance;
    scrub::Scrub& scrub;
    cache::Cache& cache;
    shards::Shards& shards;
  };
  // `member` is the link to the primary used to catch up when a request shows this node's
  // maps are stale; null on the primary itself (role all), whose maps are the newest.
  Target(TargetOptions options, cluster::ClusterMaps& maps, store::Store& store,
         std::shared_ptr<http::Client> client, cluster::Member* member, stats::Registry& stats, Services services);

  // PUT, GET, HEAD, DELETE /v1/objects/{bucket}/{name}: the exchange's path decides.
  http::Awaitable<void> handle_object(http::Exchange& exchange, std::string bucket, std::string name);
  // GET /v1/internal/list/{bucket}?prefix=&start_after=&limit= -> wire::ListPage.
  http::Awaitable<void> handle_list(http::Exchange& exchange, std::string bucket);
  // Applies the bucket map to the store (call after every change and at start): closes
  // the buckets being deleted to new commits (store::Store::close_bucket), reopens those
  // whose delete was called off, and removes the objects of deleted buckets.
  http::Awaitable<void> apply_bucket_map();
  // An S3 object operation (s3_objects.cc) routed here: runs it when this node owns the
  // object, else forwards it to the owner.
  http::Awaitable<void> handle_s3(http::Exchange& exchange, const s3api::S3Request& request);
  // GET /v1/internal/uploads/{bucket}?prefix=&key_marker=&upload_id_marker=&limit=
  // -> wire::UploadPage (the proxy merges ListMultipartUploads from these).
  http::Awaitable<void> handle_list_uploads(http::Exchange& exchange, std::string bucket);
  // Removes multipart uploads older than the configured TTL, every `period`, forever.
  http::Awaitable<void> sweep_uploads(std::chrono::milliseconds period);

  // POST /v1/internal/evict/{bucket} (wire::EvictRequest): removes the cached objects of a
  // remote bucket that the request selects from this target -> {"evicted": N}.
  http::Awaitable<void> handle_evict(http::Exchange& exchange, std::string bucket);
  // Gives the other holders of every object the cache fetched (cold GETs, prefetch) their
  // copies, as after any write. Runs until the cache stops.
  http::Awaitable<void> replicate_fetched();

  // Tasks the primary runs on every target as one job: /v1/internal/tasks/{job id}: POST
  // starts it (the body is its wire::JobRequest; scrub-N runs on the scrub, prefetch-N on
  // the cache), GET answers its wire::RebalanceProgress, DELETE stops it.
  http::Awaitable<void> handle_task(http::Exchange& exchange, std::string id);

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
  // The bucket as a proxy's request sees it: catches up to the request's bucket map
  // version, and for a bucket marked deleting closes it and waits for the commits in
  // flight (docs/adr/0005).
  http::Awaitable<Result<wire::Bucket>> bucket_as_sender_sees_it(const http::RequestHead& request,
                                                                 const std::string& bucket_name);
  // Streams `body` (`expected_size` bytes, when known) into `writer`, feeding
  // `checksums`; returns the bytes (replication::receive_into).
  http::Awaitable<Result<uint64_t>> receive(http::BodyReader& body, store::ObjectWriter& writer,
                                            std::optional<uint64_t> expected_size,
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
  // With ?archpath / archmode / archlist: the archive's members (docs/shards.md), from
  // `object`, or with `cold` from the copy the fetch commits (by reference: adr/0003).
  http::Awaitable<Status> get_members(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r,
                                      std::optional<store::OpenObject>& object, const ColdRead* cold);
  // get_members() of an erasure-coded shard whose slice `mine` is here: the index built
  // from the object's bytes read through its slices (then kept beside the slice's
  // record), each member's bytes read through them too (erasure::Erasure::read_ec).
  http::Awaitable<Status> get_coded_members(http::Exchange& exchange, const ObjectRequest& request,
                                            const Resolved& r, store::OpenObject& mine);
  // get_coded_members() of a compressed archive (tgz, tar.lz4, zip) with member index
  // `index`: members decompressed from the object's bytes as its slices give them.
  http::Awaitable<Status> get_coded_compressed_members(http::Exchange& exchange, const ObjectRequest& request,
                                                       const Resolved& r, store::OpenObject& mine,
                                                       const shards::MemberIndex& index);
  // Writes [offset, offset + length) of the coded object whose slice `mine` is here to `out`.
  http::Awaitable<Status> read_coded_into(const Resolved& r, store::OpenObject& mine, uint64_t offset,
                                          uint64_t length, http::ResponseWriter& out);
  // A Range that is not satisfiable: S3's InvalidRange error, or the native 416 answer.
  http::Awaitable<Status> refuse_range(http::Exchange& exchange, const ObjectRequest& request, const Status& error,
                                       uint64_t size);
  http::Awaitable<Status> delete_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r);
  // CopyObject and UploadPartCopy: the source is read through the native GET of a holder.
  http::Awaitable<Status> copy_object(http::Exchange& exchange, const ObjectRequest& request, const Resolved& r);
  struct CopyFrom;
  http::Awaitable<Result<CopyFrom>> open_copy_source(const ObjectRequest& request);
  store::PutOptions put_options(const ObjectRequest& request, const wire::Bucket& bucket) const;
  // A new version of the object (its commit fenced by the store, docs/adr/0005), or a part.
  http::Awaitable<Result<std::unique_ptr<store::ObjectWriter>>> open_writer(const ObjectRequest& request,
                                                                           const Resolved& r,
                                                                           store::PutOptions options);
  // Commits, then publish()es a new version of the object (a part waits for Complete).
  http::Awaitable<Result<wire::ObjectRecord>> commit_write(const ObjectRequest& request, const Resolved& r,
                                                           store::ObjectWriter& writer);
  // Receives a PUT or UploadPart body into `writer`: S3's aws-chunked decoded and its
  // checksums checked (their headers put into `response`), at most request.max_size bytes.
  http::Awaitable<Status> receive_payload(http::Exchange& exchange, const ObjectRequest& request,
                                          store::ObjectWriter& writer, http::Headers& response);

  // S3 (s3_objects.cc): the front-end, and the operations only S3 has.
  http::Awaitable<Status> run_s3(http::Exchange& exchange, const s3api::S3Request& request, const Resolved& r);
  http::Awaitable<Status> s3_tagging(http::Exchange& exchange, const s3api::S3Request& request, const Resolved& r);
  // CompleteMultipartUpload's answer (the first, or a retry's from completed_uploads_).
  http::Awaitable<Status> send_completed(http::Exchange& exchange, const s3api::S3Request& request,
                                         const CompletedUploads::Answer& answer);
  // The checksum algorithm of the upload a part (`request.part`) belongs to; nullopt for
  // anything else, or an upload without one.
  http::Awaitable<Result<std::optional<s3::ChecksumAlgorithm>>> upload_checksum(const ObjectRequest& request,
                                                                                const Resolved& r);
  http::Awaitable<Status> s3_multipart(http::Exchange& exchange, const s3api::S3Request& request,
                                       const Resolved& r);

  // Copies (replication, erasure; docs/data-protection.md).
  // After a commit at the owner: the other holders get the object, before the answer
  // (sync) or in the background (async): full copies, or an erasure-coded bucket's slices.
  http::Awaitable<Status> replicate(const Resolved& r);

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

  // The effective cluster config now (one snapshot: read every value of a request from it).
  std::shared_ptr<const config::ClusterConfig> live_config() const { return options_.config->get(); }

  Mutex fences_mutex_;
  uint64_t fenced_version_ GUARDED_BY(fences_mutex_) = 0;  // the bucket map apply_bucket_map() fenced by

  const TargetOptions options_;
  cluster::ClusterMaps& maps_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  cluster::Member* member_;
  replication::Peers& peers_;
  replication::Replication& replication_;
  erasure::Erasure& erasure_;
  rebalance::Rebalance& rebalance_;
  scrub::Scrub& scrub_;
  cache::Cache& cache_;
  shards::Shards& shards_;
  CompletedUploads completed_uploads_;
  stats::Counter& bytes_received_;
  stats::Counter& bytes_sent_;
  stats::Counter& puts_;
  stats::Counter& gets_;
  stats::Counter& deletes_;
  stats::Counter& forwards_;
  stats::Counter& errors_;
};

}  // namespace silo::target
