#include "proxy/proxy.h"

#include <algorithm>
#include <charconv>

#include "async/gather.h"
#include "async/sleep.h"
#include "base/log.h"
#include "base/text.h"
#include "http/relay.h"
#include "http/reply.h"
#include "proxy/detail/listing.h"
#include "proxy/detail/routing.h"
#include "s3api/object_headers.h"
#include "s3/names.h"
#include "wire/json.h"

namespace silo::proxy {
namespace {

constexpr size_t kMaxPropsBody = 64 * 1024;
constexpr size_t kMaxEvictBody = 16 << 20;  // a list of names
constexpr size_t kDefaultListLimit = 1000;
constexpr size_t kMaxListLimit = 10000;
constexpr size_t kMaxListPageBytes = 256 * 1024 * 1024;

}  // namespace

Proxy::Proxy(ProxyOptions options, cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client,
             cluster::Primary* primary, stats::Registry& stats)
    : options_(std::move(options)),
      maps_(maps),
      client_(std::move(client)),
      primary_(primary),
      object_requests_(stats.counter("silo_proxy_object_requests_total", "Object requests routed by the proxy.")),
      redirects_(stats.counter("silo_proxy_redirects_total", "Object requests answered with a 307 redirect.")),
      list_requests_(stats.counter("silo_proxy_list_requests_total", "Object listings merged by the proxy.")),
      errors_(stats.counter("silo_proxy_errors_total", "Proxy requests that failed.")) {}

http::Awaitable<void> Proxy::list_buckets(http::Exchange& exchange, const Caller& caller) {
  co_await http::send_json(exchange, 200, wire::bucket_list_json(visible_buckets(caller.subject)));
}

http::Awaitable<Status> Proxy::head_bucket(http::Exchange& exchange, const std::string& name) {
  if (!maps_.find_bucket(name)) co_return Status::not_found("bucket {} does not exist", name);
  std::ignore = co_await exchange.response().send({}, "");  // client gone
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::get_props(http::Exchange& exchange, const std::string& name) {
  const auto bucket = maps_.find_bucket(name);
  if (!bucket) co_return Status::not_found("bucket {} does not exist", name);
  co_await http::send_json(exchange, 200, wire::bucket_json(*bucket));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::list_users(http::Exchange& exchange) {
  co_await http::send_json(
      exchange, 200,
      wire::users_json(*maps_.bucket_map(), options_.config->file().auth.admin_access_key));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::put_user(http::Exchange& exchange, const std::string& access_key) {
  CO_ASSIGN_OR_RETURN(const std::string body,
                      co_await http::read_all(exchange.body(), kMaxPropsBody));
  CO_ASSIGN_OR_RETURN(auto user, wire::parse_user_json(body, access_key));
  CO_RETURN_IF_ERROR(co_await primary_->put_user(std::move(user)));
  SILO_LOG_INFO("user {} added", access_key);
  co_await http::send_json(exchange, 200, "{}");
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::delete_user(http::Exchange& exchange,
                                           const std::string& access_key) {
  CO_RETURN_IF_ERROR(co_await primary_->delete_user(access_key));
  http::ResponseHead head;
  head.status = 204;
  std::ignore = co_await exchange.response().send(std::move(head), "");  // client gone
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::relay_to_primary(http::Exchange& exchange) {
  const auto map = maps_.node_map();
  const auto primary = maps_.find_node(map->primary_id());
  if (!primary) co_return Status::unavailable("no primary in node map v{}", map->version());
  // Relayed once already, or the map still names this proxy, which lost the role (HA):
  // the cluster is electing a primary; relaying again could only go round in circles.
  if (primary->id() == options_.self.id() || exchange.request().headers.has(http::kForwardedHeader)) {
    co_return Status::unavailable("no primary right now (node map v{} names {}); a new one is being elected, retry",
                                  map->version(), primary->id());
  }
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(primary->url()));
  http::Headers extra;
  extra.set(http::kForwardedHeader, options_.self.id());
  CO_RETURN_IF_ERROR(co_await http::relay(exchange, *client_, to, extra));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::create_bucket(http::Exchange& exchange, const Caller& caller, const std::string& name) {
  if (!caller.subject.access_key && !caller.subject.is_admin) {
    co_return Status::permission_denied("anonymous clients may not create buckets").with_reason("AccessDenied");
  }
  if (!is_primary()) co_return co_await relay_to_primary(exchange);
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxPropsBody));
  CO_ASSIGN_OR_RETURN(wire::BucketProps props, wire::apply_bucket_props_json(body, wire::BucketProps()));
  // The user that signed it, also when another proxy relayed it here (the primary checks
  // the user's own signature again: docs/security.md).
  if (caller.subject.access_key) props.set_owner(*caller.subject.access_key);
  if (wire::is_remote(props)) CO_RETURN_IF_ERROR(co_await check_backend(props.backend()));
  CO_ASSIGN_OR_RETURN(const wire::Bucket bucket, co_await primary_->create_bucket(name, props));
  SILO_LOG_INFO("bucket {} created (id {})", bucket.name(), bucket.id());
  co_await http::send_json(exchange, 200, wire::bucket_json(bucket));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::set_props(http::Exchange& exchange, const std::string& name) {
  if (!is_primary()) co_return co_await relay_to_primary(exchange);
  const auto bucket = maps_.find_bucket(name);
  if (!bucket) co_return Status::not_found("bucket {} does not exist", name);
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxPropsBody));
  CO_ASSIGN_OR_RETURN(const wire::BucketProps props, wire::apply_bucket_props_json(body, bucket->props()));
  const wire::BackendProps& was = bucket->props().backend();
  if (was.provider() != props.backend().provider() || was.bucket() != props.backend().bucket()) {
    co_return Status::invalid_argument(
        "a bucket's backend is set when the bucket is created and stays (bucket {} has {}); create another bucket",
        name, wire::is_remote(bucket->props()) ? wire::backend_url(was) : "none");
  }
  if (wire::is_remote(props) && props.backend().SerializeAsString() != was.SerializeAsString()) {
    CO_RETURN_IF_ERROR(co_await check_backend(props.backend()));
  }
  CO_ASSIGN_OR_RETURN(const wire::Bucket updated, co_await primary_->set_bucket_props(name, props));
  co_await http::send_json(exchange, 200, wire::bucket_json(updated));
  co_return Status::ok();
}

http::Awaitable<std::optional<wire::Bucket>> Proxy::find_or_adopt(const std::string& name,
                                                                  const access::Subject& subject) {
  auto bucket = maps_.find_bucket(name);
  const std::string provider = live_config()->cache.first_access;
  if (bucket || provider.empty() || !subject.is_admin || !s3::validate_bucket_name(name).is_ok()) co_return bucket;
  wire::BucketProps props;
  props.mutable_backend()->set_provider(provider);
  props.mutable_backend()->set_bucket(name);
  if (!(co_await check_backend(props.backend())).is_ok()) co_return std::nullopt;
  Status made;
  if (is_primary()) {
    made = (co_await primary_->create_bucket(name, props)).status();
  } else {
    // The primary creates buckets: ask it (intra-cluster requests act as admin).
    const auto map = maps_.node_map();
    const auto primary = maps_.find_node(map->primary_id());
    if (!primary) co_return std::nullopt;
    auto to = http::Endpoint::parse(primary->url());
    if (!to) co_return std::nullopt;
    http::ClientRequest create;
    create.method = http::Method::kPut;
    create.target = "/v1/buckets/" + text::percent_encode(name);
    const std::string body = fmt::format(R"({{"backend": {{"url": "{}"}}}})", wire::backend_url(props.backend()));
    auto answer = co_await client_->call(*to, std::move(create), body, kMaxPropsBody);
    made = !answer ? answer.status()
           : answer->status == 200 ? Status::ok()
                                   : Status::unavailable("the primary answered {}: {}", answer->status, answer->body);
    // The new bucket map reaches this node with the primary's push; wait for it briefly.
    for (int i = 0; i < 50 && !maps_.find_bucket(name); ++i) {
      std::unique_ptr<boost::asio::steady_timer> timer;
      co_await async::pause(timer, std::chrono::milliseconds(20));
    }
  }
  bucket = maps_.find_bucket(name);  // made here, or by a concurrent first access
  if (!bucket) {
    SILO_LOG_WARN("bucket {} exists at {}://{} but could not be made a remote bucket: {}", name, provider, name, made);
  } else {
    SILO_LOG_INFO("bucket {} is the remote bucket {}://{} (first access)", name, provider, name);
  }
  co_return bucket;
}

http::Awaitable<Status> Proxy::check_backend(const wire::BackendProps& props) {
  if (!options_.backends) co_return Status::failed_precondition("this node has no backends for remote buckets");
  CO_ASSIGN_OR_RETURN(auto backend, options_.backends->make(props));
  const Status reached = co_await backend->check_bucket();
  if (!reached.is_ok()) {
    co_return Status(reached.code() == Code::kUnavailable ? Code::kUnavailable : Code::kInvalidArgument,
                     fmt::format("backend {} can not be used: {}", wire::backend_url(props), reached.message()));
  }
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::evict(http::Exchange& exchange, const std::string& name) {
  // The primary runs it: forgetting the bucket (keep_props false) is its to do.
  if (!is_primary()) co_return co_await relay_to_primary(exchange);
  const auto bucket = maps_.find_bucket(name);
  if (!bucket) co_return Status::not_found("The specified bucket does not exist: {}", name).with_reason("NoSuchBucket");
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxEvictBody));
  CO_ASSIGN_OR_RETURN(const wire::EvictRequest request, wire::parse_evict_request_json(body));
  uint64_t evicted = 0;
  if (request.keep_props) {
    CO_ASSIGN_OR_RETURN(evicted, co_await evict_everywhere(*bucket, request));
  } else {
    CO_ASSIGN_OR_RETURN(evicted, co_await delete_if_empty(name, /*evict_first=*/true));
  }
  const std::string answer = wire::evicted_json(evicted, request.keep_props);  // named beside co_await (adr/0003)
  co_await http::send_json(exchange, 200, answer);
  co_return Status::ok();
}

http::Awaitable<Result<uint64_t>> Proxy::evict_everywhere(const wire::Bucket& bucket,
                                                          const wire::EvictRequest& request) {
  if (!wire::is_remote(bucket.props())) {
    co_return Status::invalid_argument("bucket {} is not a remote bucket: evicting would lose its objects",
                                       bucket.name());
  }
  const std::string body = wire::evict_request_json(request);
  const std::string target = "/v1/internal/evict/" + text::percent_encode(bucket.name());
  std::vector<std::function<http::Awaitable<Result<uint64_t>>()>> calls;
  for (const auto& node : maps_.placement()->targets()) {
    calls.push_back([this, node, &body, &target]() -> http::Awaitable<Result<uint64_t>> {
      if (node.state() == wire::NODE_STATE_DOWN) {
        co_return Status::unavailable("target {} is down: its cached objects stay until it is back", node.id());
      }
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest call;
      call.method = http::Method::kPost;
      call.target = target;
      call.headers.set(http::kBucketMapVersionHeader, std::to_string(maps_.bucket_map()->version()));
      CO_ASSIGN_OR_RETURN(auto answer, co_await client_->call(to, std::move(call), body, kMaxPropsBody));
      if (answer.status != 200) {
        co_return Status::unavailable("target {} answered the evict with {}: {}", node.id(), answer.status, answer.body);
      }
      co_return wire::parse_evicted_json(answer.body);
    });
  }
  uint64_t evicted = 0;
  for (auto& one : co_await async::gather<Result<uint64_t>>(std::move(calls))) {
    CO_ASSIGN_OR_RETURN(const uint64_t n, std::move(one));
    evicted += n;
  }
  co_return evicted;
}

http::Awaitable<Status> Proxy::delete_bucket(http::Exchange& exchange, const std::string& name) {
  if (!is_primary()) co_return co_await relay_to_primary(exchange);
  // A remote bucket's objects are cached copies: deleting it evicts them (the backend
  // keeps everything) and forgets the bucket.
  const auto bucket = maps_.find_bucket(name);
  const bool is_remote = bucket && wire::is_remote(bucket->props());
  CO_RETURN_IF_ERROR((co_await delete_if_empty(name, is_remote)).status());
  http::ResponseHead head;
  head.status = 204;
  co_return co_await exchange.response().send(std::move(head), "");
}

http::Awaitable<Result<uint64_t>> Proxy::delete_if_empty(const std::string& name, bool evict_first) {
  // 1. Mark it deleting: from the moment a target has this bucket map it refuses to
  //    commit new objects into the bucket (store::Store::close_bucket, under the object lock).
  const Status marked = co_await primary_->set_bucket_deleting(name, true);
  if (marked.code() == Code::kNotFound) {
    co_return Status::not_found("The specified bucket does not exist: {}", name).with_reason("NoSuchBucket");
  }
  CO_RETURN_IF_ERROR(marked);
  const auto bucket = maps_.find_bucket(name);
  if (!bucket) co_return Status::not_found("The specified bucket does not exist: {}", name).with_reason("NoSuchBucket");
  // A remote bucket: its cached objects go first. No fetch or write commits into it any
  // more (it is marked), so what the evict leaves is what the check below sees.
  uint64_t evicted = 0;
  if (evict_first) {
    const wire::EvictRequest everything;  // named, not a temporary beside co_await (docs/adr/0003)
    auto dropped = co_await evict_everywhere(*bucket, everything);
    if (dropped) evicted = *dropped;
    if (!dropped) {
      const Status unmarked = co_await primary_->set_bucket_deleting(name, false);
      if (!unmarked.is_ok()) SILO_LOG_WARN("bucket {} stays marked deleting: {}", name, unmarked);
      co_return std::move(dropped).error();
    }
  }
  // 2. Check that it is empty. Each target first catches up to this bucket map version
  //    and waits for commits that passed the check before it to finish.
  auto page = co_await merged_page(*bucket, "", "", 1);
  if (!page || !page->first.empty()) {
    const Status unmarked = co_await primary_->set_bucket_deleting(name, false);
    if (!unmarked.is_ok()) SILO_LOG_WARN("bucket {} stays marked deleting: {}", name, unmarked);
    if (!page) co_return std::move(page).error();
    co_return Status::failed_precondition("The bucket you tried to delete is not empty").with_reason("BucketNotEmpty");
  }
  // 3. Delete it.
  CO_RETURN_IF_ERROR(co_await primary_->delete_bucket(name));
  SILO_LOG_INFO("bucket {} deleted", name);
  co_return evicted;
}

http::Awaitable<Result<std::pair<std::vector<wire::ListEntry>, bool>>> Proxy::merged_page(
    const wire::Bucket& bucket, const std::string& prefix, const std::string& start_after, size_t limit,
    bool with_backend) {
  // A round can end short of `limit` at a target's cutoff (rarely, with the 25 % margin);
  // another round from the last name fills the page, so pages stay full.
  std::vector<wire::ListEntry> page;
  bool is_truncated = true;
  std::string after = start_after;
  while (page.size() < limit && is_truncated) {
    CO_ASSIGN_OR_RETURN(auto round, co_await merged_round(bucket, prefix, after, limit - page.size(), with_backend));
    is_truncated = round.second;
    if (round.first.empty()) break;
    for (auto& entry : round.first) page.push_back(std::move(entry));
    after = page.back().name();
  }
  co_return std::make_pair(std::move(page), is_truncated);
}

http::Awaitable<Result<std::pair<std::vector<wire::ListEntry>, bool>>> Proxy::merged_round(
    const wire::Bucket& bucket, const std::string& prefix, const std::string& start_after, size_t limit,
    bool with_backend) {
  const auto placement = maps_.placement();
  if (placement->empty()) co_return Status::unavailable("the node map has no targets");
  // Names are spread evenly over the targets (HRW), so each is asked for its share plus
  // a margin rather than for `limit`: the page is cut at the smallest last name of the
  // targets that had more (every name up to there is known), which keeps the page near
  // `limit` while the targets read and send about 1.25x, not N x, what is returned.
  // Each object is on `copies` of them (the merge drops the duplicates).
  const size_t targets = placement->targets().size();
  // (erasure coded: at least parity + 1, a slice or a copy each).
  const size_t copies = std::min<size_t>(wire::full_copy_count(bucket.props()), targets);
  const size_t per_target =
      targets == 1 ? limit : std::min(limit, std::max<size_t>(limit * 5 * copies / (4 * targets) + 1, 16));
  // With several copies a listing can do without the down targets while another copy of
  // each object is up: fewer down than copies, and no rebalance copying objects to new
  // owners. Its cleanup phase moves nothing: every target finished copying before it
  // began, and a target that went down since (which it then waits for) keeps ownership.
  size_t down = 0;
  for (const auto& node : placement->targets()) down += node.state() == wire::NODE_STATE_DOWN ? 1 : 0;
  const bool skips_down =
      down < copies && maps_.node_map()->rebalance_phase() != wire::REBALANCE_PHASE_COPY;
  const std::string target = fmt::format("/v1/internal/list/{}?prefix={}&start_after={}&limit={}",
                                         text::percent_encode(bucket.name()),
                                         text::percent_encode(prefix),
                                         text::percent_encode(start_after), per_target);
  std::vector<std::function<http::Awaitable<Result<wire::ListPage>>()>> calls;
  for (const auto& node : placement->targets()) {
    calls.push_back([this, node, &target, skips_down]() -> http::Awaitable<Result<wire::ListPage>> {
      if (node.state() == wire::NODE_STATE_DOWN && skips_down) co_return wire::ListPage();
      if (node.state() == wire::NODE_STATE_DOWN) {
        co_return Status::unavailable("target {} is down: the listing would be incomplete", node.id());
      }
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest request;
      request.target = target;
      request.headers.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
      request.headers.set(http::kBucketMapVersionHeader, std::to_string(maps_.bucket_map()->version()));
      CO_ASSIGN_OR_RETURN(auto response, co_await client_->call(to, std::move(request), "", kMaxListPageBytes));
      if (response.status != 200) {
        co_return Status::unavailable("target {} answered the listing with {}: {}", node.id(), response.status,
                                      response.body);
      }
      co_return wire::decode<wire::ListPage>(response.body, wire::Source::kNetwork);
    });
  }
  if (with_backend) {
    calls.push_back([this, &bucket, &prefix, &start_after, limit]() -> http::Awaitable<Result<wire::ListPage>> {
      co_return co_await backend_page(bucket, prefix, start_after, limit);
    });
  }
  auto pages = co_await async::gather<Result<wire::ListPage>>(std::move(calls));
  co_return detail::merge_pages(pages, limit);
}

http::Awaitable<Result<wire::ListPage>> Proxy::backend_page(const wire::Bucket& bucket, const std::string& prefix,
                                                            const std::string& start_after, size_t limit) {
  if (!options_.backends) co_return Status::failed_precondition("this node has no backends for remote buckets");
  CO_ASSIGN_OR_RETURN(auto backend, options_.backends->get(bucket));
  CO_ASSIGN_OR_RETURN(const backend::RemotePage remote, co_await backend->list(prefix, start_after, limit));
  wire::ListPage page;
  for (const backend::RemoteObject& o : remote.objects) {
    wire::ListEntry& entry = *page.add_entries();
    entry.set_name(o.name);
    entry.set_size(o.size);
    entry.set_mtime_unix_nanos(o.mtime_unix_seconds * 1'000'000'000);
    entry.set_md5_hex(o.etag);
    entry.set_is_remote_only(true);
  }
  page.set_is_truncated(!remote.next_token.empty());
  co_return page;
}

http::Awaitable<Status> Proxy::list_objects(http::Exchange& exchange, const Caller& caller, const std::string& name) {
  list_requests_.add();
  const http::RequestHead& request = exchange.request();
  const auto bucket = co_await find_or_adopt(name, caller.subject);
  if (!bucket) co_return Status::not_found("bucket {} does not exist", name);
  size_t limit = kDefaultListLimit;
  if (auto text = request.query_param("limit")) {
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), limit);
    if (ec != std::errc() || end != text->data() + text->size() || limit == 0 || limit > kMaxListLimit) {
      co_return Status::invalid_argument("limit must be an integer in 1..{}", kMaxListLimit);
    }
  }
  std::string start_after;
  if (auto token = request.query_param("token"); token && !token->empty()) {
    auto after = detail::name_of_token(*token);
    if (!after) co_return Status::invalid_argument("malformed continuation token");
    start_after = std::move(*after);
  }
  // A remote bucket lists its backend too, unless ?cached=true asks for what Silo holds.
  const bool is_remote = wire::is_remote(bucket->props());
  const auto cached = request.query_param("cached");
  if (cached && *cached != "true" && *cached != "false") co_return Status::invalid_argument("cached must be true or false");
  const bool with_backend = is_remote && cached.value_or("") != "true";
  CO_ASSIGN_OR_RETURN(auto page, co_await merged_page(*bucket, request.query_param("prefix").value_or(""),
                                                      start_after, limit, with_backend));
  const std::string next =
      page.second && !page.first.empty() ? detail::token_of(page.first.back().name()) : "";
  co_await http::send_json(exchange, 200, wire::object_list_json(page.first, next, is_remote));
  co_return Status::ok();
}

http::Awaitable<void> Proxy::handle_object(http::Exchange& exchange, std::string bucket_name, std::string name,
                                           const access::Subject& subject) {
  object_requests_.add();
  const http::RequestHead& request = exchange.request();
  Status s = s3::validate_object_name(name);
  const auto bucket = co_await find_or_adopt(bucket_name, subject);
  if (s.is_ok() && !bucket) s = Status::not_found("bucket {} does not exist", bucket_name);
  if (s.is_ok()) {
    access::Request wanted;
    wanted.action = detail::is_read(request.method)             ? "s3:GetObject"
                    : request.method == http::Method::kDelete ? "s3:DeleteObject"
                                                              : "s3:PutObject";
    wanted.key = name;
    s = authorize(subject, *bucket, std::move(wanted));
  }
  const auto placement = maps_.placement();
  if (s.is_ok() && placement->empty()) s = Status::unavailable("the cluster has no targets yet");
  if (!s.is_ok()) {
    errors_.add();
    co_await http::send_error(exchange, s);
    co_return;
  }
  const std::vector<wire::NodeInfo> order = route_for(*bucket, name, request.method);
  const wire::NodeInfo& first = order.front();
  if (options_.local_target && detail::answers_here(order, options_.self.id(), request.method)) {
    co_await options_.local_target(exchange, std::move(bucket_name), std::move(name));
    co_return;
  }
  if (first.state() != wire::NODE_STATE_DOWN && live_config()->proxy_mode == config::ProxyMode::kRedirect) {
    redirects_.add();
    http::ResponseHead head;
    head.status = 307;
    head.headers.set("Location", first.url() + request.target);
    s = co_await exchange.response().send(std::move(head), "");
  } else {
    s = co_await relay_to_targets(exchange, order);
  }
  if (!s.is_ok()) {
    errors_.add();
    co_await http::send_error(exchange, s);
  }
}

std::vector<wire::NodeInfo> Proxy::route_for(const wire::Bucket& bucket, const std::string& name,
                                             http::Method method) {
  std::vector<wire::NodeInfo> holders = maps_.placement()->holders(
      ObjectRef{BucketId(bucket.id()), name}, wire::holder_count(bucket.props()));
  // Only reads of several copies take a turn: they alone spread.
  const uint64_t turn = detail::is_read(method) && holders.size() > 1
                            ? read_turn_.fetch_add(1, std::memory_order_relaxed)
                            : 0;
  return detail::target_order(std::move(holders), method, turn);
}

http::Awaitable<Status> Proxy::relay_to_targets(http::Exchange& exchange, const std::vector<wire::NodeInfo>& order) {
  const bool is_read = detail::is_read(exchange.request().method);
  Status last;
  for (const wire::NodeInfo& node : order) {
    last = co_await relay_to_owner(exchange, node);
    // Only a read that reached nobody may go on: nothing of a body was consumed then.
    if (last.is_ok() || !is_read || exchange.response().has_begun() || last.code() != Code::kUnavailable) break;
  }
  co_return last;
}

http::Awaitable<Status> Proxy::relay_to_owner(http::Exchange& exchange, const wire::NodeInfo& owner) {
  if (owner.state() == wire::NODE_STATE_DOWN) {
    co_return Status::unavailable("target {} that owns {} is down", owner.id(), exchange.request().path);
  }
  CO_RETURN_IF_ERROR(s3api::check_relayed_length(exchange.request(), live_config()->s3.max_object_size));
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(owner.url()));
  http::Headers extra;
  extra.set(http::kForwardedHeader, options_.self.id());
  extra.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
  // Holders depend on the bucket's layout too: a target behind on either map catches up.
  extra.set(http::kBucketMapVersionHeader, std::to_string(maps_.bucket_map()->version()));
  co_return co_await http::relay(exchange, *client_, to, extra);
}

}  // namespace silo::proxy
