#include "target/target.h"

#include <strings.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <charconv>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "s3/names.h"
#include "http/relay.h"
#include "s3api/object_headers.h"
#include "http/reply.h"
#include "async/sleep.h"
#include "target/object_request.h"

namespace silo::target {
namespace {

constexpr size_t kMaxListLimit = 10000;
// How long a bucket delete's emptiness check waits for the commits in flight.
constexpr std::chrono::seconds kDrainTimeout{10};

uint64_t header_version(const http::RequestHead& request, const char* name) {
  const auto text = request.headers.get(name);
  uint64_t v = 0;
  if (text) std::from_chars(text->data(), text->data() + text->size(), v);
  return v;
}

}  // namespace

http::Awaitable<Result<uint64_t>> Target::receive(http::BodyReader& body, store::ObjectWriter& writer,
                                                 std::optional<uint64_t> expected_size,
                                                 std::vector<s3::Checksum*> checksums) {
  CO_ASSIGN_OR_RETURN(const uint64_t received,
                      co_await replication::receive_into(body, writer, expected_size, std::move(checksums)));
  bytes_received_.add(received);
  co_return received;
}

Target::Target(TargetOptions options, cluster::ClusterMaps& maps, store::Store& store,
               std::shared_ptr<http::Client> client, cluster::Member* member, stats::Registry& stats,
               Services services)
    : options_(std::move(options)),
      maps_(maps),
      store_(store),
      client_(std::move(client)),
      member_(member),
      peers_(services.peers),
      replication_(services.replication),
      erasure_(services.erasure),
      rebalance_(services.rebalance),
      scrub_(services.scrub),
      cache_(services.cache),
      shards_(services.shards),
      bytes_received_(stats.counter("silo_target_bytes_received_total", "Object bytes written by PUTs.")),
      bytes_sent_(stats.counter("silo_target_bytes_sent_total", "Object bytes sent by GETs.")),
      puts_(stats.counter("silo_target_requests_total", "Object requests served by the target.", R"(op="put")")),
      gets_(stats.counter("silo_target_requests_total", "Object requests served by the target.", R"(op="get")")),
      deletes_(stats.counter("silo_target_requests_total", "Object requests served by the target.", R"(op="delete")")),
      forwards_(stats.counter("silo_target_forwards_total", "Requests forwarded to the owner target.")),
      errors_(stats.counter("silo_target_errors_total", "Object requests that failed.")) {
  stats.gauge("silo_target_objects_lost",
              "Objects found without their bytes (file missing or torn) when a drive opened after an unclean "
              "shutdown: listed still, reads answer DataLoss.",
              [&store] {
                uint64_t lost = 0;
                for (const store::MountpathInfo& m : store.mountpaths()) lost += m.lost_objects;
                return static_cast<double>(lost);
              });
}

http::Awaitable<Result<wire::Bucket>> Target::find_bucket(const std::string& name) {
  auto bucket = maps_.find_bucket(name);
  if (!bucket && member_ != nullptr) {
    std::ignore = co_await member_->sync();  // the bucket may be newer than our bucket map
    bucket = maps_.find_bucket(name);
  }
  if (!bucket) co_return Status::not_found("The specified bucket does not exist: {}", name).with_reason("NoSuchBucket");
  co_return std::move(*bucket);
}

http::Awaitable<Result<Target::Resolved>> Target::resolve(const http::RequestHead& request,
                                                          const std::string& bucket_name,
                                                          const std::string& name) {
  CO_RETURN_IF_ERROR(s3::validate_object_name(name));
  // The sender's maps are newer than ours (a push has not arrived yet): catch up first. The
  // primary may route with maps a moment before it hands them out: ask again, briefly.
  const auto is_stale = [this, &request] {
    return header_version(request, http::kNodeMapVersionHeader) > maps_.node_map()->version() ||
           header_version(request, http::kBucketMapVersionHeader) > maps_.bucket_map()->version();
  };
  // The sender's version proves the newer map exists, so waiting for it is worth up to 2 s
  // (200 ms was not always enough under load: a GET during a copies change then failed
  // with "node maps are converging"); only requests from a sender ahead of us wait.
  std::unique_ptr<boost::asio::steady_timer> timer;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int attempt = 0; is_stale() && member_ != nullptr && std::chrono::steady_clock::now() < give_up; ++attempt) {
    if (attempt > 0) co_await async::pause(timer, std::chrono::milliseconds(std::min(20 * attempt, 100)));
    std::ignore = co_await member_->sync();  // best effort: the sender's answer says what is left
  }
  CO_ASSIGN_OR_RETURN(const wire::Bucket bucket, co_await find_bucket(bucket_name));
  co_return placed(bucket, name);
}

Result<Target::Resolved> Target::placed(const wire::Bucket& bucket, const std::string& name) const {
  const auto placement = maps_.placement();
  if (placement->empty()) return Status::unavailable("the node map has no targets");
  Resolved r;
  r.bucket = bucket;
  r.object = ObjectRef{BucketId(bucket.id()), name};
  r.holders = placement->holders(r.object, wire::holder_count(bucket.props()));
  r.owner = r.holders.front();
  r.is_local = r.owner.id() == options_.self.id();
  r.is_holder = peers_.is_self_among(r.holders);
  return r;
}

http::Awaitable<void> Target::handle_object(http::Exchange& exchange, std::string bucket, std::string name) {
  const http::RequestHead& request = exchange.request();
  auto resolved = co_await resolve(request, bucket, name);
  Status s;
  if (!resolved) {
    s = std::move(resolved).error();
  } else if (!serves_here(request, *resolved, request.method == http::Method::kGet || request.method == http::Method::kHead)) {
    s = co_await forward(exchange, *resolved);
  } else {
    // The same bound as S3's PutObject (cluster.s3.max_object_size, settable at run time).
    auto parsed = parse_native_request(request, std::move(bucket), std::move(name), live_config()->s3.max_object_size);
    if (parsed) {
      s = co_await serve_object(exchange, *parsed, *resolved);
    } else {
      s = std::move(parsed).error();
    }
  }
  if (!s.is_ok()) {
    errors_.add();
    if (s.code() != Code::kNotFound) SILO_LOG_DEBUG("{} {}: {}", request.method_text, request.path, s);
    co_await http::send_error(exchange, s);
  }
}

bool Target::serves_here(const http::RequestHead& request, const Resolved& r, bool is_read) const {
  return r.is_local || (is_read && r.is_holder) || replication::is_local_only(request);
}

http::Awaitable<Status> Target::forward(http::Exchange& exchange, const Resolved& r) {
  // A forwarded request that lands on a node which does not serve it: the two node maps
  // differ. When the sender's is older than ours, ours decides (one more hop; versions
  // rise along the way, so no loop). Otherwise the client retries once the maps have
  // converged (a keepalive interval at most).
  const http::RequestHead& request = exchange.request();
  const bool is_sender_behind =
      header_version(request, http::kNodeMapVersionHeader) < maps_.node_map()->version() ||
      header_version(request, http::kBucketMapVersionHeader) < maps_.bucket_map()->version();
  if (request.headers.has(http::kForwardedHeader) && !is_sender_behind) {
    co_return Status::unavailable("object {} is owned by {} per node map v{}; node maps are converging, retry",
                                  r.object.name, r.owner.id(), maps_.node_map()->version());
  }
  // A read may go to any holder that is up; everything else to the owner.
  const http::Method method = request.method;
  const bool is_read = method == http::Method::kGet || method == http::Method::kHead;
  const wire::NodeInfo* to_node = &r.owner;
  for (const auto& n : r.holders) {
    if (!is_read || n.state() != wire::NODE_STATE_DOWN) {
      to_node = &n;
      break;
    }
  }
  if (to_node->state() == wire::NODE_STATE_DOWN) {
    co_return Status::unavailable("target {} that owns {} is down", to_node->id(), r.object.name);
  }
  co_return co_await relay_to(exchange, *to_node);
}

http::Awaitable<Status> Target::relay_to(http::Exchange& exchange, const wire::NodeInfo& node) {
  const http::RequestHead& request = exchange.request();
  CO_RETURN_IF_ERROR(s3api::check_relayed_length(request, live_config()->s3.max_object_size));
  forwards_.add();
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
  http::Headers extra;
  extra.set(http::kForwardedHeader, options_.self.id());
  // The newest versions either side has seen: the next node never finds this sender
  // behind on a map it passed on (no ping-pong while maps converge).
  const uint64_t node_map_version =
      std::max(header_version(request, http::kNodeMapVersionHeader), maps_.node_map()->version());
  const uint64_t bucket_map_version =
      std::max(header_version(request, http::kBucketMapVersionHeader), maps_.bucket_map()->version());
  extra.set(http::kNodeMapVersionHeader, std::to_string(node_map_version));
  extra.set(http::kBucketMapVersionHeader, std::to_string(bucket_map_version));
  co_return co_await http::relay(exchange, *client_, to, extra);
}

http::Awaitable<Result<wire::Bucket>> Target::bucket_as_sender_sees_it(const http::RequestHead& request,
                                                                      const std::string& bucket_name) {
  // The sender's bucket map is newer (a bucket being deleted): catch up first.
  const uint64_t wanted_version = header_version(request, http::kBucketMapVersionHeader);
  if (wanted_version > maps_.bucket_map()->version() && member_ != nullptr) {
    std::ignore = co_await member_->sync();
    if (wanted_version > maps_.bucket_map()->version()) {
      co_return Status::unavailable("could not catch up to bucket map version {}", wanted_version);
    }
  }
  CO_ASSIGN_OR_RETURN(wire::Bucket bucket, co_await find_bucket(bucket_name));
  if (bucket.is_deleting()) {
    // No commit into it passes from here on; those that passed are in the listing.
    store_.close_bucket(BucketId(bucket.id()));
    CO_RETURN_IF_ERROR(co_await store_.drain_bucket(BucketId(bucket.id()), kDrainTimeout));
  }
  co_return bucket;
}

http::Awaitable<void> Target::handle_list(http::Exchange& exchange, std::string bucket_name) {
  const http::RequestHead& request = exchange.request();
  auto bucket = co_await bucket_as_sender_sees_it(request, bucket_name);
  if (!bucket) {
    co_await http::send_error(exchange, bucket.error());
    co_return;
  }
  store::ListOptions options;
  options.prefix = request.query_param("prefix").value_or("");
  options.start_after = request.query_param("start_after").value_or("");
  const std::string limit_text = request.query_param("limit").value_or("1000");
  size_t limit = 0;
  const auto [end, ec] = std::from_chars(limit_text.data(), limit_text.data() + limit_text.size(), limit);
  if (ec != std::errc() || end != limit_text.data() + limit_text.size() || limit == 0 || limit > kMaxListLimit) {
    co_await http::send_error(exchange, Status::invalid_argument("limit must be 1..{}", kMaxListLimit));
    co_return;
  }
  options.limit = limit;
  auto page = co_await store_.list(BucketId(bucket->id()), std::move(options));
  if (!page) {
    co_await http::send_error(exchange, page.error());
    co_return;
  }
  wire::ListPage out;
  out.mutable_entries()->Reserve(static_cast<int>(page->entries.size()));
  for (auto& e : page->entries) *out.add_entries() = std::move(e);
  out.set_is_truncated(page->is_truncated);
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/x-protobuf");
  std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(out)));
}

http::Awaitable<void> Target::apply_bucket_map() {
  const auto buckets = maps_.bucket_map();
  std::unordered_set<uint64_t> live;
  for (const auto& b : buckets->buckets()) live.insert(b.id());
  {
    // Calls for two map changes may run at once: the newer map's fences win.
    MutexLock lock(fences_mutex_);
    if (buckets->version() >= fenced_version_) {
      fenced_version_ = buckets->version();
      for (const auto& b : buckets->buckets()) {
        if (b.is_deleting()) {
          store_.close_bucket(BucketId(b.id()));
        } else {
          store_.open_bucket(BucketId(b.id()));  // a delete that found objects called itself off
        }
      }
    }
  }
  auto present = co_await store_.bucket_ids();
  if (!present) {
    SILO_LOG_WARN("listing bucket ids for cleanup failed: {}", present.error());
    co_return;
  }
  for (const BucketId id : *present) {
    // Only ids the primary has handed out and since dropped are deleted buckets; an id at
    // or past next_bucket_id means this node knows more than the map (never delete then).
    if (live.contains(id.value()) || id.value() >= buckets->next_bucket_id()) continue;
    SILO_LOG_INFO("removing the objects of deleted bucket id {}", id.value());
    const Status s = co_await store_.remove_bucket(id);
    if (!s.is_ok()) SILO_LOG_WARN("removing deleted bucket id {}: {}", id.value(), s);
  }
}

}  // namespace silo::target

namespace silo::target {

http::Awaitable<void> Target::sweep_uploads(std::chrono::milliseconds period) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  for (;;) {
    // Read each round: a change at run time applies from the next sweep.
    const int64_t ttl_nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(live_config()->s3.multipart_upload_ttl).count();
    auto removed = co_await store_.remove_uploads_initiated_before(Clock::real().unix_nanos() - ttl_nanos);
    if (!removed) {
      SILO_LOG_WARN("sweeping abandoned multipart uploads: {}", removed.error());
    } else if (*removed > 0) {
      SILO_LOG_INFO("removed {} abandoned multipart uploads", *removed);
    }
    timer.expires_after(period);
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) co_return;
  }
}

}  // namespace silo::target
