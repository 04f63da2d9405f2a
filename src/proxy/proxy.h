#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend_pool.h"
#include "cluster/cluster_maps.h"
#include "config/live_config.h"
#include "cluster/primary.h"
#include "cluster/s3_request.h"
#include "config/config.h"
#include "http/client.h"
#include "http/server.h"
#include "stats/registry.h"

namespace silo::proxy {

struct ProxyOptions {
  wire::NodeInfo self;
  // The node's effective cluster config (the file's with the run-time overrides): keys
  // settable at run time are read through live_config() per request; start-only ones
  // (auth) from its file().
  std::shared_ptr<const config::LiveConfig> config;
  // Set when this process is also a target (role all): requests for objects it owns are
  // handed to it in-process instead of over loopback HTTP.
  std::function<http::Awaitable<void>(http::Exchange&, std::string bucket, std::string name)> local_target;
  // The same for S3 object operations.
  std::function<http::Awaitable<void>(http::Exchange&, const cluster::S3Request&)> local_s3;
  // Remote buckets' backends (listing, the existence check at creation); null: none.
  std::shared_ptr<backend::BackendPool> backends;
};

// The gateway role of the native API: bucket operations (on the primary, or relayed to
// it), object requests routed to the owner target (streamed through, or 307 redirected
// when the cluster's proxy mode says so), and listings merged from every target.
// Stateless beyond the maps; lives as long as the node.
class Proxy {
 public:
  // `primary` is null unless this proxy is, or may become, the primary.
  Proxy(ProxyOptions options, cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client,
        cluster::Primary* primary, stats::Registry& stats);

  // /v1/buckets and /v1/buckets/{bucket}[/props]; `rest` is the path after /v1/buckets.
  http::Awaitable<void> handle_buckets(http::Exchange& exchange, std::string rest);
  // /v1/objects/{bucket}/{name}
  http::Awaitable<void> handle_object(http::Exchange& exchange, std::string bucket, std::string name);
  // /v1/users[/{access_key}]: GET lists keys (never secrets), PUT adds or replaces a user
  // ({"secret_key", "admin"}), DELETE removes one. Only for admins.
  http::Awaitable<void> handle_users(http::Exchange& exchange, std::string rest, bool is_admin);
  // Membership (cluster_admin.cc), admins only, run by the primary (relayed there):
  //   POST|DELETE /v1/cluster/nodes/{id}/maintenance   start | stop maintenance
  //   POST /v1/cluster/nodes/{id}/decommission         move its objects off, then remove it
  //   DELETE /v1/cluster/nodes/{id}                    forget a node that is down for good
  //   POST /v1/cluster/nodes {"url"}                   add a node that waits to be added
  // `rest` is the path after /v1/cluster/nodes.
  http::Awaitable<void> handle_nodes(http::Exchange& exchange, std::string rest, bool is_admin);
  // Jobs (cluster_admin.cc), on the primary (relayed there): GET /v1/jobs[?kind=&state=],
  // GET /v1/jobs/{id}, GET /v1/jobs/{id}/wait?timeout_s=N (answers when the job is no
  // longer running or after N s, default 30, at most 300), POST /v1/jobs/{id}/abort (admins).
  http::Awaitable<void> handle_jobs(http::Exchange& exchange, std::string rest, bool is_admin);
  // Every S3 request (s3_gateway.cc): object operations go to the owner target, bucket
  // changes to the primary, the rest (listings, DeleteObjects...) run here.
  // Configuration (cluster_admin.cc), admins only (docs/configuration.md "Changing
  // settings at run time"):
  //   GET /v1/config                  this node's effective config (`node` and the cluster
  //                                   section with the run-time overrides), secrets masked
  //   GET /v1/config?overrides=true   only the run-time overrides in effect here, masked
  //   PUT /v1/config {patch}          merge a JSON merge-patch of the cluster section into
  //                                   the overrides (on the primary, relayed there); answers
  //                                   the new effective config
  http::Awaitable<void> handle_config(http::Exchange& exchange, const config::NodeConfig& node, bool is_admin);
  http::Awaitable<void> handle_s3(http::Exchange& exchange, const cluster::S3Request& request);

 private:
  // Whether this proxy acts as the primary now (HA: it may win or lose the role any time).
  bool is_primary() const { return primary_ != nullptr && primary_->is_active(); }
  http::Awaitable<Status> create_bucket(http::Exchange& exchange, const std::string& name);
  http::Awaitable<Status> delete_bucket(http::Exchange& exchange, const std::string& name);
  // POST /v1/buckets/{name}/evict (wire::EvictRequest) -> {"evicted": N, "bucket_kept"}.
  http::Awaitable<Status> evict(http::Exchange& exchange, const std::string& name);
  // Every target drops the cached objects `request` selects; how many. kUnavailable when a
  // target is down or fails (the others' evictions stand).
  http::Awaitable<Result<uint64_t>> evict_everywhere(const wire::Bucket& bucket, const wire::EvictRequest& request);
  http::Awaitable<Status> set_props(http::Exchange& exchange, const std::string& name);
  // The bucket `name`; when Silo has none and cluster.cache.first_access names a provider,
  // the backend bucket of that name, made a remote bucket here and now when it exists
  // (on the primary, or asked of it). nullopt: no such bucket.
  http::Awaitable<std::optional<wire::Bucket>> find_or_adopt(const std::string& name);
  // Whether the remote bucket `props` name exists and its keys reach it (kInvalidArgument
  // naming the backend and its answer; kUnavailable when it can not be reached).
  http::Awaitable<Status> check_backend(const wire::BackendProps& props);
  http::Awaitable<Status> list_objects(http::Exchange& exchange, const std::string& name);
  http::Awaitable<Status> relay_to_primary(http::Exchange& exchange);
  // On the primary: marks the bucket deleting, checks that no target holds an object of
  // it, then deletes it, or unmarks it (BucketNotEmpty). NoSuchBucket when absent.
  // `evict_first` (a remote bucket): once marked, its cached objects are evicted before
  // the check; how many.
  http::Awaitable<Result<uint64_t>> delete_if_empty(const std::string& name, bool evict_first = false);
  // Streams the request to the object's owner target and its answer back (503 when down).
  http::Awaitable<Status> relay_to_owner(http::Exchange& exchange, const wire::NodeInfo& owner);
  // The targets to send an object request to, in order (docs/data-protection.md): the
  // owner for everything but reads; for a read of a bucket with several copies, the
  // holders that are up, starting at another one each time (reads spread over the
  // copies), then those that are down.
  std::vector<wire::NodeInfo> route_for(const wire::Bucket& bucket, const std::string& name, http::Method method);
  // Relays to the first of `order`; a read that finds it unreachable goes to the next.
  http::Awaitable<Status> relay_to_targets(http::Exchange& exchange, const std::vector<wire::NodeInfo>& order);
  std::atomic<uint64_t> read_turn_{0};
  // One merged page of a bucket's objects from every target.
  // `with_backend`: a remote bucket's backend is one more source (the entries only it
  // has are marked is_remote_only).
  http::Awaitable<Result<std::pair<std::vector<wire::ListEntry>, bool>>> merged_page(
      const wire::Bucket& bucket, const std::string& prefix, const std::string& start_after, size_t limit,
      bool with_backend = false);
  // One round of merged_page(): every target asked once for its share of `limit`.
  http::Awaitable<Result<std::pair<std::vector<wire::ListEntry>, bool>>> merged_round(
      const wire::Bucket& bucket, const std::string& prefix, const std::string& start_after, size_t limit,
      bool with_backend);
  // A page of the backend's listing as the targets answer theirs.
  http::Awaitable<Result<wire::ListPage>> backend_page(const wire::Bucket& bucket, const std::string& prefix,
                                                      const std::string& start_after, size_t limit);

  // S3 (s3_gateway.cc).
  http::Awaitable<void> route_object(http::Exchange& exchange, const cluster::S3Request& request,
                                     const wire::Bucket& bucket);
  http::Awaitable<Status> run_s3(http::Exchange& exchange, const cluster::S3Request& request,
                                 const std::optional<wire::Bucket>& bucket);
  http::Awaitable<Status> s3_create_bucket(http::Exchange& exchange, const cluster::S3Request& request);
  http::Awaitable<Status> s3_list(http::Exchange& exchange, const cluster::S3Request& request,
                                  const wire::Bucket& bucket);
  http::Awaitable<Status> s3_list_uploads(http::Exchange& exchange, const cluster::S3Request& request,
                                          const wire::Bucket& bucket);
  http::Awaitable<Status> s3_delete_objects(http::Exchange& exchange, const cluster::S3Request& request,
                                            const wire::Bucket& bucket);

  // The effective cluster config now (one snapshot per request).
  std::shared_ptr<const config::ClusterConfig> live_config() const { return options_.config->get(); }

  const ProxyOptions options_;
  cluster::ClusterMaps& maps_;
  std::shared_ptr<http::Client> client_;
  cluster::Primary* primary_;
  stats::Counter& object_requests_;
  stats::Counter& redirects_;
  stats::Counter& list_requests_;
  stats::Counter& errors_;
};

}  // namespace silo::proxy
