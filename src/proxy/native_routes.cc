// The proxy's native endpoints: one route per method and exact path pattern, and after
// each group a route for any method, and one for any path under it, that answer the same
// errors as a proxy always did (400 for a method an endpoint does not take, 404 for an
// unknown path, a malformed name before either).
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "http/reply.h"
#include "proxy/detail/routing.h"
#include "proxy/proxy.h"
#include "s3/names.h"

namespace silo::proxy {
namespace {

using detail::Access;
using detail::RunsOn;
using http::Method;

constexpr std::string_view kUsersRefusal = "only admin users may manage users";
constexpr std::string_view kMembershipRefusal =
    "only admin users may change the cluster's membership";
// Jobs name buckets and objects of every user (and their errors): admins only, reading too.
constexpr std::string_view kJobsRefusal = "only admin users may start, read or abort jobs";

constexpr Access kAnyone{};
constexpr Access kUserAdmins{.admins_only = kUsersRefusal, .runs_on = RunsOn::kThisProxy};
constexpr Access kUserAdminsOnPrimary{.admins_only = kUsersRefusal, .runs_on = RunsOn::kPrimary};
constexpr Access kMembershipAdmins{.admins_only = kMembershipRefusal,
                                   .runs_on = RunsOn::kThisProxy};
constexpr Access kMembershipAdminsOnPrimary{.admins_only = kMembershipRefusal,
                                            .runs_on = RunsOn::kPrimary};
constexpr Access kJobAdminsOnPrimary{.admins_only = kJobsRefusal, .runs_on = RunsOn::kPrimary};

// A collection's path, with and without the trailing '/' that clients may add.
constexpr std::array<std::string_view, 2> kBucketsRoot = {"/v1/buckets", "/v1/buckets/"};
constexpr std::array<std::string_view, 2> kUsersRoot = {"/v1/users", "/v1/users/"};
constexpr std::array<std::string_view, 2> kNodesRoot = {"/v1/cluster/nodes", "/v1/cluster/nodes/"};
constexpr std::array<std::string_view, 2> kJobsRoot = {"/v1/jobs", "/v1/jobs/"};

// Proxy::Body and Proxy::NamedBody, which are private.
using AnyBody = std::function<http::Awaitable<Status>(http::Exchange&, const http::PathParams&)>;
using AnyNamedBody = std::function<http::Awaitable<Status>(http::Exchange&, const std::string&)>;

// The error of a method that an endpoint does not take: "{method} {what}".
http::Awaitable<Status> refuse_method(http::Exchange& exchange, std::string what) {
  co_return Status::invalid_argument("{} {}", exchange.request().method_text, what);
}

AnyBody refusal(std::string what) {
  return [what = std::move(what)](http::Exchange& exchange, const http::PathParams&) {
    return refuse_method(exchange, what);
  };
}

AnyNamedBody named_refusal(std::string what) {
  return [what = std::move(what)](http::Exchange& exchange, const std::string&) {
    return refuse_method(exchange, what);
  };
}

// A path under a collection that names no endpoint.
http::Awaitable<Status> no_such_endpoint(http::Exchange& exchange, const http::PathParams&) {
  const http::RequestHead& request = exchange.request();
  co_return Status::not_found("no such endpoint: {} {}", request.method_text, request.path);
}

// Any other path under /v1/buckets/: a malformed bucket name is the error, else the path.
http::Awaitable<Status> unknown_bucket_path(http::Exchange& exchange,
                                            const http::PathParams& params) {
  const std::string_view path = params.get("path");
  CO_RETURN_IF_ERROR(s3::validate_bucket_name(path.substr(0, path.find('/'))));
  co_return Status::not_found("no such endpoint {}", exchange.request().path);
}

// More than one segment under /v1/users/: no access key has a '/'.
http::Awaitable<Status> unknown_user_path(http::Exchange& exchange,
                                          const http::PathParams& params) {
  CO_RETURN_IF_ERROR(detail::validate_access_key(params.get("path")));
  co_return co_await no_such_endpoint(exchange, params);
}

// The root of /v1/cluster/nodes takes only POST; answered here, not relayed: the node map
// that every node serves lists the nodes.
http::Awaitable<Status> list_nodes_elsewhere(http::Exchange& exchange, const http::PathParams&) {
  const http::RequestHead& request = exchange.request();
  co_return Status::not_found("no such endpoint {} {} (GET /v1/cluster/map lists the nodes)",
                              request.method_text, request.path);
}

// Bodies that call a member of the proxy: with the exchange alone, with the path
// parameter `param` (a copy, for the coroutine to keep), or with a checked name.
template <typename Owner>
AnyBody call(Owner* owner, http::Awaitable<Status> (Owner::*member)(http::Exchange&)) {
  return [owner, member](http::Exchange& exchange, const http::PathParams&) {
    return (owner->*member)(exchange);
  };
}

template <typename Owner>
AnyBody call_with(Owner* owner,
                  http::Awaitable<Status> (Owner::*member)(http::Exchange&, std::string),
                  std::string_view param) {
  return [owner, member, param](http::Exchange& exchange, const http::PathParams& params) {
    return (owner->*member)(exchange, std::string(params.get(param)));
  };
}

template <typename Owner>
AnyNamedBody call_named(Owner* owner,
                        http::Awaitable<Status> (Owner::*member)(http::Exchange&,
                                                                 const std::string&)) {
  return [owner, member](http::Exchange& exchange, const std::string& name) {
    return (owner->*member)(exchange, name);
  };
}

}  // namespace

std::vector<Proxy::Route> Proxy::native_routes() {
  std::vector<Route> routes;
  add_bucket_routes(routes);
  add_user_routes(routes);
  add_node_routes(routes);
  add_job_routes(routes);
  return routes;
}

Proxy::RouteHandler Proxy::endpoint(const Access& access, Body body) {
  return [this, access, body = std::move(body)](http::Exchange& exchange, const Caller& caller,
                                                const http::PathParams& params) {
    return serve(exchange, caller, access, body, params);
  };
}

http::Awaitable<void> Proxy::serve(http::Exchange& exchange, const Caller& caller,
                                   const Access& access, const Body& body,
                                   const http::PathParams& params) {
  Status s;
  switch (detail::access_step(access, caller.subject.is_admin, is_primary())) {
    case detail::AccessStep::kDeny:
      s = Status::permission_denied("{}", access.admins_only);
      break;
    case detail::AccessStep::kRelay:
      s = co_await relay_to_primary(exchange);
      break;
    case detail::AccessStep::kRun:
      s = co_await body(exchange, params);
      break;
  }
  if (s.is_ok()) co_return;
  errors_.add();
  co_await http::send_error(exchange, s);
}

Proxy::Body Proxy::on_bucket(NamedBody body) {
  return [this, body = std::move(body)](http::Exchange& exchange, const http::PathParams& params) {
    return with_bucket(exchange, std::string(params.get("bucket")), body);
  };
}

http::Awaitable<Status> Proxy::with_bucket(http::Exchange& exchange, std::string name,
                                           const NamedBody& body) {
  CO_RETURN_IF_ERROR(s3::validate_bucket_name(name));
  co_return co_await body(exchange, name);
}

Proxy::Body Proxy::on_user(NamedBody body) {
  return [this, body = std::move(body)](http::Exchange& exchange, const http::PathParams& params) {
    return with_user(exchange, std::string(params.get("access_key")), body);
  };
}

http::Awaitable<Status> Proxy::with_user(http::Exchange& exchange, std::string access_key,
                                         const NamedBody& body) {
  CO_RETURN_IF_ERROR(detail::validate_access_key(access_key));
  if (access_key == options_.config->file().auth.admin_access_key) {
    co_return Status::failed_precondition("{} is the admin of the config; change it there",
                                          access_key);
  }
  co_return co_await body(exchange, access_key);
}

Proxy::RouteHandler Proxy::bucket_endpoint(std::string_view action, CallerBody body) {
  return [this, action, body = std::move(body)](http::Exchange& exchange, const Caller& caller,
                                                const http::PathParams& params) {
    return serve_bucket(exchange, caller, action, std::string(params.get("bucket")), body);
  };
}

http::Awaitable<void> Proxy::serve_bucket(http::Exchange& exchange, const Caller& caller, std::string_view action,
                                          std::string name, const CallerBody& body) {
  Status s = s3::validate_bucket_name(name);
  if (s.is_ok() && !action.empty()) {
    if (const auto bucket = maps_.find_bucket(name)) {  // absent: the body says so
      access::Request wanted;
      wanted.action = std::string(action);
      wanted.prefix = exchange.request().query_param("prefix");
      s = authorize(caller.subject, *bucket, std::move(wanted));
    }
  }
  if (s.is_ok()) s = co_await body(exchange, caller, name);
  if (s.is_ok()) co_return;
  errors_.add();
  co_await http::send_error(exchange, s);
}

void Proxy::add_bucket_routes(std::vector<Route>& routes) {
  // Bucket changes relay to the primary themselves, once the name and the caller's access
  // are checked here.
  const auto add = [&](std::optional<Method> method, std::string_view pattern, Body body) {
    routes.push_back({method, pattern, endpoint(kAnyone, std::move(body))});
  };
  const auto add_checked = [&](std::optional<Method> method, std::string_view pattern, std::string_view action,
                               NamedBody body) {
    routes.push_back({method, pattern,
                      bucket_endpoint(action, [body = std::move(body)](http::Exchange& exchange, const Caller&,
                                                                       const std::string& name) {
                        return body(exchange, name);
                      })});
  };
  for (const std::string_view root : kBucketsRoot) {
    routes.push_back({Method::kGet, root, [this](http::Exchange& exchange, const Caller& caller, const http::PathParams&) {
                        return list_buckets(exchange, caller);
                      }});
    add(std::nullopt, root, refusal("/v1/buckets is not supported (use GET)"));
  }
  constexpr std::string_view kBucket = "/v1/buckets/{bucket}";
  routes.push_back({Method::kGet, kBucket,
                    bucket_endpoint("s3:ListBucket", [this](http::Exchange& exchange, const Caller& caller,
                                                            const std::string& name) {
                      return list_objects(exchange, caller, name);
                    })});
  add_checked(Method::kHead, kBucket, "s3:ListBucket", call_named(this, &Proxy::head_bucket));
  // Any user may create a bucket; it owns it then.
  routes.push_back({Method::kPut, kBucket,
                    bucket_endpoint("", [this](http::Exchange& exchange, const Caller& caller, const std::string& name) {
                      return create_bucket(exchange, caller, name);
                    })});
  add_checked(Method::kDelete, kBucket, "s3:DeleteBucket", call_named(this, &Proxy::delete_bucket));
  add(std::nullopt, kBucket, on_bucket(named_refusal("is not supported on a bucket")));
  constexpr std::string_view kProps = "/v1/buckets/{bucket}/props";
  // Properties (copies, EC, backend...) are the owner's: no S3 action grants them, only
  // a policy's Action "*".
  add_checked(Method::kGet, kProps, "s3:ListBucket", call_named(this, &Proxy::get_props));
  add_checked(Method::kPut, kProps, "silo:PutBucketProps", call_named(this, &Proxy::set_props));
  add(std::nullopt, kProps,
      on_bucket(named_refusal("is not supported on bucket properties (use GET or PUT)")));
  constexpr std::string_view kEvict = "/v1/buckets/{bucket}/evict";
  add_checked(Method::kPost, kEvict, "silo:EvictBucket", call_named(this, &Proxy::evict));
  add(std::nullopt, kEvict, on_bucket(named_refusal("is not supported on /evict (use POST)")));
  constexpr std::string_view kPolicy = "/v1/buckets/{bucket}/policy";
  add_checked(Method::kGet, kPolicy, "s3:GetBucketPolicy", call_named(this, &Proxy::bucket_policy));
  add_checked(Method::kPut, kPolicy, "s3:PutBucketPolicy", call_named(this, &Proxy::bucket_policy));
  add_checked(Method::kDelete, kPolicy, "s3:DeleteBucketPolicy", call_named(this, &Proxy::bucket_policy));
  add(std::nullopt, kPolicy, on_bucket(named_refusal("is not supported on a bucket policy (use GET, PUT or DELETE)")));
  add(std::nullopt, "/v1/buckets/{path...}", unknown_bucket_path);
}

void Proxy::add_user_routes(std::vector<Route>& routes) {
  const auto add = [&](std::optional<Method> method, std::string_view pattern, const Access& access,
                       Body body) {
    routes.push_back({method, pattern, endpoint(access, std::move(body))});
  };
  for (const std::string_view root : kUsersRoot) {
    add(Method::kGet, root, kUserAdmins, call(this, &Proxy::list_users));
    add(std::nullopt, root, kUserAdmins, refusal("/v1/users is not supported (use GET)"));
  }
  // Changes relay to the primary before the key is looked at: it checks it again.
  constexpr std::string_view kUser = "/v1/users/{access_key}";
  add(Method::kPut, kUser, kUserAdminsOnPrimary, on_user(call_named(this, &Proxy::put_user)));
  add(Method::kDelete, kUser, kUserAdminsOnPrimary, on_user(call_named(this, &Proxy::delete_user)));
  add(std::nullopt, kUser, kUserAdminsOnPrimary,
      on_user(named_refusal("is not supported on a user (use PUT or DELETE)")));
  add(std::nullopt, "/v1/users/{path...}", kUserAdminsOnPrimary, unknown_user_path);
}

void Proxy::add_node_routes(std::vector<Route>& routes) {
  const auto add = [&](std::optional<Method> method, std::string_view pattern, const Access& access,
                       Body body) {
    routes.push_back({method, pattern, endpoint(access, std::move(body))});
  };
  for (const std::string_view root : kNodesRoot) {
    add(Method::kPost, root, kMembershipAdminsOnPrimary, call(this, &Proxy::add_node));
    add(std::nullopt, root, kMembershipAdmins, list_nodes_elsewhere);
  }
  const auto to_mode = [this](wire::NodeMode mode) -> Body {
    return [this, mode](http::Exchange& exchange, const http::PathParams& params) {
      return set_node_mode(exchange, std::string(params.get("id")), mode);
    };
  };
  add(Method::kDelete, "/v1/cluster/nodes/{id}", kMembershipAdminsOnPrimary,
      call_with(this, &Proxy::remove_node, "id"));
  constexpr std::string_view kMaintenance = "/v1/cluster/nodes/{id}/maintenance";
  add(Method::kPost, kMaintenance, kMembershipAdminsOnPrimary,
      to_mode(wire::NODE_MODE_MAINTENANCE));
  add(Method::kDelete, kMaintenance, kMembershipAdminsOnPrimary, to_mode(wire::NODE_MODE_NORMAL));
  add(Method::kPost, "/v1/cluster/nodes/{id}/decommission", kMembershipAdminsOnPrimary,
      to_mode(wire::NODE_MODE_DECOMMISSIONING));
  add(std::nullopt, "/v1/cluster/nodes/{path...}", kMembershipAdminsOnPrimary, no_such_endpoint);
}

void Proxy::add_job_routes(std::vector<Route>& routes) {
  const auto add = [&](std::optional<Method> method, std::string_view pattern, const Access& access,
                       Body body) {
    routes.push_back({method, pattern, endpoint(access, std::move(body))});
  };
  for (const std::string_view root : kJobsRoot) {
    add(Method::kPost, root, kJobAdminsOnPrimary, call(this, &Proxy::start_job));
    add(Method::kGet, root, kJobAdminsOnPrimary, call(this, &Proxy::list_jobs));
    add(std::nullopt, root, kJobAdminsOnPrimary,
        refusal("/v1/jobs is not supported (use GET, or POST to start one)"));
  }
  add(Method::kGet, "/v1/jobs/{id}", kJobAdminsOnPrimary, call_with(this, &Proxy::get_job, "id"));
  add(Method::kGet, "/v1/jobs/{id}/wait", kJobAdminsOnPrimary, call_with(this, &Proxy::wait_job, "id"));
  add(Method::kPost, "/v1/jobs/{id}/abort", kJobAdminsOnPrimary,
      call_with(this, &Proxy::abort_job, "id"));
  add(std::nullopt, "/v1/jobs/{id}/abort", kJobAdminsOnPrimary, no_such_endpoint);
  add(std::nullopt, "/v1/jobs/{path...}", kJobAdminsOnPrimary, no_such_endpoint);
}

}  // namespace silo::proxy
