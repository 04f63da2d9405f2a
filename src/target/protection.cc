// A target's part in data protection (docs/data-protection.md): the copies of an object on
// its holders (the first `copies` targets of its HRW ranking), made by the owner after a
// commit; reads checked against the XXH3 and repaired from another holder.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>

#include "base/hash.h"
#include "base/log.h"
#include "async/gather.h"
#include "target/copy_wire.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace {

namespace asio = boost::asio;

constexpr size_t kMaxSmallBody = 64 * 1024;


}  // namespace

std::vector<wire::NodeInfo> Target::holders_of(const ObjectRef& object) const {
  const auto bucket = bucket_by_id(object.bucket_id.value());
  const auto placement = maps_.placement();
  if (!bucket || placement->empty()) return {};
  return placement->holders(object, wire::holder_count(bucket->props()));
}

Status Target::check_holders_up(const Resolved& r) const {
  if (r.bucket.props().write_mode() == wire::WRITE_MODE_ASYNC) return Status::ok();
  for (const auto& n : r.holders) {
    if (n.state() == wire::NODE_STATE_DOWN) {
      return Status::unavailable("target {}, which keeps a copy of {}, is down: a sync write cannot be acknowledged",
                                 n.id(), r.object.name);
    }
  }
  return Status::ok();
}

std::vector<wire::NodeInfo> Target::replica_holders(const ObjectRef& object) const {
  std::vector<wire::NodeInfo> holders = holders_of(object);
  const auto bucket = bucket_by_id(object.bucket_id.value());
  if (bucket) holders.resize(std::min<size_t>(holders.size(), wire::replica_count(bucket->props())));
  return holders;
}

http::Awaitable<Status> Target::replicate(const Resolved& r) {
  std::vector<wire::NodeInfo> to = others_than_self(r.holders);
  if (to.empty()) co_return Status::ok();
  const bool is_coded = wire::is_erasure_coded(r.bucket.props());
  if (r.bucket.props().write_mode() == wire::WRITE_MODE_ASYNC) {
    const auto executor = co_await asio::this_coro::executor;
    std::string what = fmt::format("async copies of {}", r.object.name);
    http::Awaitable<Status> work = is_coded ? encode_and_spread(r.object, r.holders) : push_copies(r.object, std::move(to));
    asio::co_spawn(executor, in_background(std::move(work), std::move(what)), asio::detached);
    co_return Status::ok();
  }
  Status s;
  if (is_coded) {
    s = co_await encode_and_spread(r.object, r.holders);
  } else {
    s = co_await push_copies(r.object, std::move(to));
  }
  if (!s.is_ok()) {
    co_return Status::unavailable("{} is stored but not on every holder yet: {}; retry the write", r.object.name,
                                  s.message());
  }
  co_return Status::ok();
}

http::Awaitable<void> Target::in_background(http::Awaitable<Status> work, std::string what) {
  const Status s = co_await std::move(work);
  if (!s.is_ok()) SILO_LOG_WARN("{}: {} (a scrub or the next rebalance repairs it)", what, s);
}

http::Awaitable<Status> Target::push_copies(ObjectRef object, std::vector<wire::NodeInfo> to) {
  // Whatever version is here now goes out: a newer write made since sends its own copies
  // too, and every holder keeps the newer of two.
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() == Code::kNotFound) co_return Status::ok();  // deleted since
  if (!opened) co_return std::move(opened).error();
  std::vector<std::function<http::Awaitable<Status>()>> pushes;
  for (const auto& node : to) {
    pushes.push_back([this, node, &object, &opened]() -> http::Awaitable<Status> {
      if (node.state() == wire::NODE_STATE_DOWN) co_return Status::unavailable("target {} is down", node.id());
      CO_ASSIGN_OR_RETURN(const http::Endpoint endpoint, http::Endpoint::parse(node.url()));
      auto placed = co_await push_copy(endpoint, object, *opened);
      if (!placed) co_return std::move(placed).error().annotate("copy on {}", node.id());
      if (placed->is_kept) copies_made_.add();  // else it has this version or a newer one
      co_return Status::ok();
    });
  }
  for (const Status& s : co_await async::gather<Status>(std::move(pushes))) {
    if (!s.is_ok()) co_return s;
  }
  co_return Status::ok();
}

http::Awaitable<Status> Target::replicate_record(const Resolved& r, const wire::ObjectRecord& record) {
  const std::string encoded = wire::encode(record);
  std::vector<std::function<http::Awaitable<Status>()>> updates;
  for (const auto& node : others_than_self(r.holders)) {
    updates.push_back([this, node, &encoded, &r]() -> http::Awaitable<Status> {
      if (node.state() == wire::NODE_STATE_DOWN) co_return Status::unavailable("target {} is down", node.id());
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest put;
      put.method = http::Method::kPut;
      put.target = internal_object_target(r.object) + "?meta=1";
      CO_ASSIGN_OR_RETURN(auto answer, co_await client_->call(to, std::move(put), encoded, kMaxSmallBody));
      // 404 / 412: that holder lacks this version; the walk or scrub brings it the object.
      if (answer.status != 200 && answer.status != 404 && answer.status != 412) {
        co_return Status::unavailable("{} answered {} to the new record of {}", node.id(), answer.status,
                                      r.object.name);
      }
      co_return Status::ok();
    });
  }
  for (const Status& s : co_await async::gather<Status>(std::move(updates))) {
    if (!s.is_ok()) co_return s;
  }
  co_return Status::ok();
}

http::Awaitable<Result<uint64_t>> Target::xxh3_of(const store::OpenObject& object) {
  const int fd = object.fd();
  const uint64_t size = object.record().size();
  co_return co_await reader_.run([fd, size] { return store::xxh3_of_fd(fd, size); });
}

bool Target::is_self_among(const std::vector<wire::NodeInfo>& nodes) const {
  return std::any_of(nodes.begin(), nodes.end(), [this](const wire::NodeInfo& n) { return n.id() == options_.self.id(); });
}

std::vector<wire::NodeInfo> Target::others_than_self(const std::vector<wire::NodeInfo>& nodes) const {
  std::vector<wire::NodeInfo> out;
  for (const auto& n : nodes) {
    if (n.id() != options_.self.id()) out.push_back(n);
  }
  return out;
}

http::Awaitable<Status> Target::verify_read(const wire::Bucket& bucket, const store::OpenObject& object) {
  if (bucket.props().skip_read_verify()) co_return Status::ok();
  const wire::ObjectRecord& record = object.record();
  const Result<uint64_t> xxh3 = co_await xxh3_of(object);
  if (xxh3 && *xxh3 == record.xxh3()) co_return Status::ok();
  corrupt_found_.add();
  const std::string why = xxh3 ? fmt::format("XXH3 {} instead of {}", hash::u64_hex(*xxh3), hash::u64_hex(record.xxh3()))
                               : xxh3.error().to_string();
  SILO_LOG_ERROR("corrupt copy of {} (generation {}) on {}: {}", record.name(), record.generation(),
                 options_.self.id(), why);
  co_return Status::data_loss("the stored bytes of {} do not match their checksum ({})", record.name(), why)
      .with_reason("InternalError");  // S3 has no code of its own for it
}

}  // namespace silo::target
