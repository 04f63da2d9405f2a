#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "access/policy.h"
#include "backend/backend_pool.h"
#include "cluster/cluster_maps.h"
#include "cluster/primary.h"
#include "s3api/s3_request.h"
#include "config/config.h"
#include "config/live_config.h"
#include "http/client.h"
#include "http/route_table.h"
#include "http/server.h"
#include "stats/registry.h"

namespace silo::proxy {

namespace detail {
struct Access;
}  // namespace detail

// What the native dispatcher learned about a caller before routing.
struct Caller {
  access::Subject subject;  // is_admin: an admin's keys, or another node of the cluster
};

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
  std::function<http::Awaitable<void>(http::Exchange&, const s3api::S3Request&)> local_s3;
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

  // Registers the proxy's native endpoints in `routes` (native_routes.cc), one route per
  // method and exact pattern, each followed by one that answers the errors of the other
  // methods and paths under it:
  //   /v1/buckets                          GET lists the buckets
  //   /v1/buckets/{bucket}                 GET lists its objects (?prefix&limit&token
  //                                        &cached), HEAD, PUT creates, DELETE deletes
  //   /v1/buckets/{bucket}/props           GET, PUT (on the primary)
  //   /v1/buckets/{bucket}/evict           POST (on the primary)
  //   /v1/buckets/{bucket}/policy          GET, PUT, DELETE the bucket policy (S3's
  //                                        grammar, docs/security.md; changes on the primary)
  //   /v1/users[/{access_key}]             admins: GET lists keys (never secrets); PUT adds
  //                                        or replaces a user ({"secret_key", "admin"}),
  //                                        DELETE removes one (on the primary)
  //   /v1/cluster/nodes                    admins, on the primary: POST {"url"} adds a node
  //                                        that waits to be added; DELETE /{id} forgets a
  //                                        node down for good; POST|DELETE
  //                                        /{id}/maintenance starts | stops maintenance;
  //                                        POST /{id}/decommission moves its objects off,
  //                                        then removes it
  //   /v1/jobs                             on the primary: GET [?kind=&state=], POST starts
  //                                        one (admins); GET /{id}; GET /{id}/wait
  //                                        ?timeout_s=N (answers when the job is no longer
  //                                        running or after N s, default 30, at most 300);
  //                                        POST /{id}/abort (admins)
  // A path with a trailing '/' is the collection itself ("/v1/jobs/" is "/v1/jobs").
  // Bucket endpoints check the caller's access to the bucket (docs/security.md) before
  // anything else. `subject` names the member of the dispatcher's context that says who
  // the caller is (an admin, or another node, when is_admin). Call once, before the node
  // serves; the routes refer to this proxy, which must outlive them.
  template <typename Context>
  void add_routes(http::RouteTable<Context>& routes, access::Subject Context::*subject) {
    for (Route& route : native_routes()) {
      routes.add(route.method, route.pattern,
                 typename http::RouteTable<Context>::ParamHandler(
                     AsCaller<Context>{std::move(route.handler), subject}));
    }
  }
  // /v1/objects/{bucket}/{name}, for `subject` (checked: s3:GetObject for GET and HEAD,
  // s3:PutObject, s3:DeleteObject).
  http::Awaitable<void> handle_object(http::Exchange& exchange, std::string bucket,
                                      std::string name, const access::Subject& subject);
  // Whether `subject` may do `request` to `bucket` (its owner, policy, public-read ACL):
  // ok or AccessDenied. Admins and the cluster's nodes may do anything.
  Status authorize(const access::Subject& subject, const wire::Bucket& bucket, access::Request request) const;
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
  http::Awaitable<void> handle_s3(http::Exchange& exchange, const s3api::S3Request& request);

 private:
  using RouteHandler = http::RouteTable<Caller>::ParamHandler;
  struct Route {
    std::optional<http::Method> method;  // nullopt: any
    std::string_view pattern;
    RouteHandler handler;
  };
  // The dispatcher's context seen as a Caller. A named coroutine object, not a lambda: its
  // frame refers to it, and it lives in the route table (docs/adr/0003).
  template <typename Context>
  struct AsCaller {
    RouteHandler handler;
    access::Subject Context::*subject;
    http::Awaitable<void> operator()(http::Exchange& exchange, const Context& context,
                                     const http::PathParams& params) const {
      const Caller caller{context.*subject};
      co_await handler(exchange, caller, params);
    }
  };
  // What an endpoint does once its caller passed the endpoint's Access: answers the
  // request and returns ok, or returns the error to answer.
  using Body = std::function<http::Awaitable<Status>(http::Exchange&, const http::PathParams&)>;
  // The same for an endpoint under /v1/buckets/{bucket} or /v1/users/{access_key}: gets the
  // validated bucket name or access key.
  using NamedBody = std::function<http::Awaitable<Status>(http::Exchange&, const std::string&)>;
  // The same for a body that needs to know its caller (a bucket's creation names its owner).
  using CallerBody = std::function<http::Awaitable<Status>(http::Exchange&, const Caller&, const std::string&)>;

  // native_routes.cc: the routes of add_routes(), in the order they are tried.
  std::vector<Route> native_routes();
  void add_bucket_routes(std::vector<Route>& routes);
  void add_user_routes(std::vector<Route>& routes);
  void add_node_routes(std::vector<Route>& routes);
  void add_job_routes(std::vector<Route>& routes);
  // A route handler that checks `access`, then relays to the primary or runs `body`.
  RouteHandler endpoint(const detail::Access& access, Body body);
  http::Awaitable<void> serve(http::Exchange& exchange, const Caller& caller,
                              const detail::Access& access, const Body& body,
                              const http::PathParams& params);
  // Bodies that check their path's {bucket} or {access_key} first (400 when malformed; 409
  // for the config's admin key, which no request may change).
  Body on_bucket(NamedBody body);
  Body on_user(NamedBody body);
  http::Awaitable<Status> with_bucket(http::Exchange& exchange, std::string name,
                                      const NamedBody& body);
  http::Awaitable<Status> with_user(http::Exchange& exchange, std::string access_key,
                                    const NamedBody& body);

  // A route handler for an endpoint under /v1/buckets/{bucket}: checks the name, then the
  // caller's access for `action` (when the bucket exists; "" checks nothing), then runs
  // `body`.
  RouteHandler bucket_endpoint(std::string_view action, CallerBody body);
  http::Awaitable<void> serve_bucket(http::Exchange& exchange, const Caller& caller, std::string_view action,
                                     std::string name, const CallerBody& body);

  // Access (access_checks.cc): whether ListBuckets shows `bucket` to `subject` (it owns it,
  // or its policy grants it something); the bucket map cut to those.
  bool may_see(const access::Subject& subject, const wire::Bucket& bucket) const;
  wire::BucketMap visible_buckets(const access::Subject& subject) const;
  // An S3 request's access (the action of its operation; a copy's source too).
  Status check_s3_access(const s3api::S3Request& request, const std::optional<wire::Bucket>& bucket,
                         const http::Headers& headers) const;
  // A policy document checked for `bucket` (MalformedPolicy), as it will be stored.
  static Result<std::string> checked_policy(std::string_view bucket, std::string_view text);
  // On the primary: sets (empty: deletes) the bucket's policy.
  http::Awaitable<Status> set_policy(std::string name, std::string policy);
  // GET|PUT|DELETE /v1/buckets/{bucket}/policy.
  http::Awaitable<Status> bucket_policy(http::Exchange& exchange, const std::string& name);

  // Bucket endpoints (proxy.cc).
  // GET /v1/buckets: the buckets the caller may see.
  http::Awaitable<void> list_buckets(http::Exchange& exchange, const Caller& caller);
  http::Awaitable<Status> head_bucket(http::Exchange& exchange, const std::string& name);
  http::Awaitable<Status> get_props(http::Exchange& exchange, const std::string& name);
  // User endpoints (proxy.cc): the list here, changes on the primary.
  http::Awaitable<Status> list_users(http::Exchange& exchange);
  http::Awaitable<Status> put_user(http::Exchange& exchange, const std::string& access_key);
  http::Awaitable<Status> delete_user(http::Exchange& exchange, const std::string& access_key);
  // Membership and job endpoints (cluster_admin.cc), on the primary.
  http::Awaitable<Status> add_node(http::Exchange& exchange);
  http::Awaitable<Status> remove_node(http::Exchange& exchange, std::string id);
  http::Awaitable<Status> set_node_mode(http::Exchange& exchange, std::string id,
                                        wire::NodeMode mode);
  http::Awaitable<Status> start_job(http::Exchange& exchange);
  http::Awaitable<Status> list_jobs(http::Exchange& exchange);
  http::Awaitable<Status> get_job(http::Exchange& exchange, std::string id);
  http::Awaitable<Status> wait_job(http::Exchange& exchange, std::string id);
  http::Awaitable<Status> abort_job(http::Exchange& exchange, std::string id);

  // Whether this proxy acts as the primary now (HA: it may win or lose the role any time).
  bool is_primary() const { return primary_ != nullptr && primary_->is_active(); }
  http::Awaitable<Status> create_bucket(http::Exchange& exchange, const Caller& caller, const std::string& name);
  http::Awaitable<Status> delete_bucket(http::Exchange& exchange, const std::string& name);
  // POST /v1/buckets/{name}/evict (wire::EvictRequest) -> {"evicted": N, "bucket_kept"}.
  http::Awaitable<Status> evict(http::Exchange& exchange, const std::string& name);
  // Every target drops the cached objects `request` selects; how many. kUnavailable when a
  // target is down or fails (the others' evictions stand).
  http::Awaitable<Result<uint64_t>> evict_everywhere(const wire::Bucket& bucket, const wire::EvictRequest& request);
  http::Awaitable<Status> set_props(http::Exchange& exchange, const std::string& name);
  // The bucket `name`; when Silo has none, cluster.cache.first_access names a provider and
  // `subject` is an admin, the backend bucket of that name, made a remote bucket here and
  // now when it exists (on the primary, or asked of it). Only admins adopt: the cluster's
  // backend keys are theirs, and the new bucket has no owner. nullopt: no such bucket.
  http::Awaitable<std::optional<wire::Bucket>> find_or_adopt(const std::string& name,
                                                             const access::Subject& subject);
  // Whether the remote bucket `props` name exists and its keys reach it (kInvalidArgument
  // naming the backend and its answer; kUnavailable when it can not be reached).
  http::Awaitable<Status> check_backend(const wire::BackendProps& props);
  http::Awaitable<Status> list_objects(http::Exchange& exchange, const Caller& caller, const std::string& name);
  // OPTIONS on a bucket or object (s3_cors.cc): the bucket's CORS rules answer it.
  http::Awaitable<Status> s3_preflight(http::Exchange& exchange, const s3api::S3Request& request,
                                       const wire::Bucket& bucket);
  http::Awaitable<Status> relay_to_primary(http::Exchange& exchange);
  // On the primary: marks the bucket deleting, checks that no target holds an object of
  // it, then deletes it, or unmarks it (BucketNotEmpty). NoSuchBucket when absent.
  // `evict_first` (a remote bucket): once marked, its cached objects are evicted before
  // the check; how many.
  http::Awaitable<Result<uint64_t>> delete_if_empty(const std::string& name, bool evict_first = false);
  // Streams the request to the object's owner target and its answer back (503 when down).
  http::Awaitable<Status> relay_to_owner(http::Exchange& exchange, const wire::NodeInfo& owner);
  // The targets to send an object request to, in order (detail::target_order): the owner
  // for everything but reads; reads take turns over the holders that are up.
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
  http::Awaitable<void> route_object(http::Exchange& exchange, const s3api::S3Request& request,
                                     const wire::Bucket& bucket);
  http::Awaitable<Status> run_s3(http::Exchange& exchange, const s3api::S3Request& request,
                                 const std::optional<wire::Bucket>& bucket);
  http::Awaitable<Status> s3_create_bucket(http::Exchange& exchange, const s3api::S3Request& request);
  http::Awaitable<Status> s3_list(http::Exchange& exchange, const s3api::S3Request& request,
                                  const wire::Bucket& bucket);
  http::Awaitable<Status> s3_list_uploads(http::Exchange& exchange, const s3api::S3Request& request,
                                          const wire::Bucket& bucket);
  http::Awaitable<Status> s3_delete_objects(http::Exchange& exchange, const s3api::S3Request& request,
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
