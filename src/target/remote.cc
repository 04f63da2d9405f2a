// Remote buckets (docs/remote-buckets.md): the target's side. The cache (src/cache) fetches,
// writes through, deletes at the backend, evicts and prefetches; the target decides once
// per request whether a bucket goes through it, relays misses to the owner, removes
// copies everywhere and replicates what the cache committed.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include "archive/members.h"
#include "base/log.h"
#include "http/reply.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace asio = boost::asio;

namespace {

constexpr size_t kMaxEvictBody = 16 << 20;  // a list of names

}  // namespace

http::Awaitable<Status> Target::read_object(http::Exchange& exchange, const Resolved& r, CachedReadFn read) {
  // The one check of the request: a local bucket's read never touches the cache.
  if (wire::is_remote(r.bucket.props())) co_return co_await read_remote(exchange, r, std::move(read));
  const CachedReadFn& read_here = read;
  co_return co_await rebalance_.read_here_or_neighbor(exchange, r.object, [&read_here] { return read_here(nullptr); });
}

http::Awaitable<Status> Target::read_remote(http::Exchange& exchange, const Resolved& r, CachedReadFn read) {
  const http::RequestHead& request = exchange.request();
  bool is_fresh = true;
  if (r.bucket.props().backend().revalidate() && !replication::is_local_only(request)) {
    auto cached = co_await store_.stat(r.object);
    if (cached) {
      CO_ASSIGN_OR_RETURN(const cache::Freshness freshness, co_await cache_.freshness(r.bucket, r.object, *cached));
      if (freshness == cache::Freshness::kGone) {
        // Deleted at the backend: so here too.
        const Status removed = co_await rebalance_.remove_everywhere(r.object);
        if (!removed.is_ok() && removed.code() != Code::kNotFound) co_return removed;
        cache_.note_gone(r.object);
        co_return Status::not_found("The specified key does not exist: {}", r.object.name).with_reason("NoSuchKey");
      }
      is_fresh = freshness == cache::Freshness::kFresh;
    }
  }
  if (is_fresh) {
    const CachedReadFn& read_here = read;
    const Status s = co_await rebalance_.read_here_or_neighbor(exchange, r.object, [&read_here] { return read_here(nullptr); });
    if (s.code() != Code::kNotFound || archive::is_member_miss(s) || exchange.response().has_begun() ||
        replication::is_local_only(request)) {
      if (s.is_ok()) cache_.note_hit(r.object);
      co_return s;
    }
  }
  // Not cached (or stale): the owner fetches it, so that concurrent misses share one fetch.
  if (!r.is_local && r.owner.state() != wire::NODE_STATE_DOWN) co_return co_await relay_to(exchange, r.owner);
  if (request.method == http::Method::kHead) {
    CO_ASSIGN_OR_RETURN(wire::ObjectRecord record, co_await cache_.describe(r.bucket, r.object));
    const ColdRead cold{std::move(record), nullptr};
    co_return co_await read(&cold);
  }
  CO_ASSIGN_OR_RETURN(const ColdRead cold, co_await cache_.fetch(r.bucket, r.object));
  co_return co_await read(&cold);
}

http::Awaitable<void> Target::replicate_fetched() {
  for (;;) {
    std::optional<cache::Fetched> fetched = co_await cache_.next_fetched();
    if (!fetched) co_return;
    // The holders under the maps of now (they may have changed during the fetch).
    auto r = placed(fetched->bucket, fetched->object.name);
    if (!r) {
      SILO_LOG_WARN("copies of fetched {}: {}", fetched->object.name, r.error());
      continue;
    }
    // Each in the background, as each fetch did before: one slow holder holds up no other.
    const auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, replicate_fetched_object(std::move(*r)), asio::detached);
  }
}

http::Awaitable<void> Target::replicate_fetched_object(Resolved r) {
  const Status replicated = co_await replicate(r);
  if (!replicated.is_ok()) SILO_LOG_WARN("copies of fetched {}: {}", r.object.name, replicated);
}

http::Awaitable<Status> Target::replicate(const Resolved& r) {
  std::vector<wire::NodeInfo> to = peers_.others_than_self(r.holders);
  if (to.empty()) co_return Status::ok();
  const bool is_coded = wire::is_erasure_coded(r.bucket.props());
  if (r.bucket.props().write_mode() == wire::WRITE_MODE_ASYNC) {
    const auto executor = co_await asio::this_coro::executor;
    std::string what = fmt::format("async copies of {}", r.object.name);
    http::Awaitable<Status> work = is_coded ? erasure_.encode_and_spread(r.object, r.holders) : replication_.push_copies(r.object, std::move(to));
    asio::co_spawn(executor, replication::in_background(std::move(work), std::move(what)), asio::detached);
    co_return Status::ok();
  }
  Status s;
  if (is_coded) {
    s = co_await erasure_.encode_and_spread(r.object, r.holders);
  } else {
    s = co_await replication_.push_copies(r.object, std::move(to));
  }
  if (!s.is_ok()) {
    co_return Status::unavailable("{} is stored but not on every holder yet: {}; retry the write", r.object.name,
                                  s.message());
  }
  co_return Status::ok();
}

http::Awaitable<Status> Target::publish(const Resolved& r) {
  if (wire::is_remote(r.bucket.props())) CO_RETURN_IF_ERROR(co_await cache_.write_through(r.bucket, r.object));
  co_return co_await replicate(r);
}

http::Awaitable<Status> Target::remove_remote(const Resolved& r) {
  CO_RETURN_IF_ERROR(co_await cache_.remove_at_backend(r.bucket, r.object));
  const Status here = co_await rebalance_.remove_everywhere(r.object);
  if (!here.is_ok() && here.code() != Code::kNotFound) co_return here;
  co_return Status::ok();
}

http::Awaitable<void> Target::handle_evict(http::Exchange& exchange, std::string bucket_name) {
  const auto evict = [&]() -> http::Awaitable<Result<uint64_t>> {
    CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxEvictBody));
    CO_ASSIGN_OR_RETURN(const wire::EvictRequest request, wire::parse_evict_request_json(body));
    CO_ASSIGN_OR_RETURN(const wire::Bucket bucket, co_await bucket_as_sender_sees_it(exchange.request(), bucket_name));
    if (!wire::is_remote(bucket.props())) {
      co_return Status::invalid_argument("bucket {} is not a remote bucket: evicting would lose its objects",
                                         bucket.name());
    }
    co_return co_await cache_.evict(bucket, request.selection);
  };
  auto evicted = co_await evict();
  if (!evicted) {
    co_await http::send_error(exchange, evicted.error());
    co_return;
  }
  const std::string answer = wire::evicted_json(*evicted);  // named beside co_await (adr/0003)
  co_await http::send_json(exchange, 200, answer);
}

}  // namespace silo::target
