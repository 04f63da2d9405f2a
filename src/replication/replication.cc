// Copies of objects on their holders (docs/data-protection.md): the first `copies` targets
// of an object's HRW ranking, made by the owner after a commit; reads checked against the
// XXH3 and repaired from another holder; the copy wire's two ends.
#include "replication/replication.h"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/hash.h"
#include "base/log.h"
#include "async/gather.h"
#include "async/sleep.h"
#include "http/relay.h"
#include "http/reply.h"
#include "wire/json.h"

namespace silo::replication {
namespace {

namespace asio = boost::asio;

constexpr size_t kMaxSmallBody = 64 * 1024;
constexpr size_t kMaxRecordBytes = 16 * 1024 * 1024;
constexpr size_t kCopyChunk = 1024 * 1024;

uint64_t query_u64(const http::RequestHead& request, const char* name) {
  const auto text = request.query_param(name).value_or("");
  uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// A holder's refusal of a copy, with the code its error body names: a rebalance retries a
// holder that is down or busy (kUnavailable) for as long as it takes, but gives up on an
// object that fails for another reason (rebalance.cc).
Status copy_refused(const ObjectRef& object, const http::Endpoint& to, int status, std::string_view body) {
  Code code = status == 503 ? Code::kUnavailable : Code::kInternal;
  if (auto answer = wire::parse_error_json(body); answer && answer->code) code = *answer->code;
  return Status(code, fmt::format("copy of {} to {} answered {}: {}", object.name, to.to_string(), status, body));
}

}  // namespace

Replication::Replication(Peers& peers, store::Store& store, std::shared_ptr<http::Client> client,
                         stats::Registry& stats)
    : peers_(peers),
      store_(store),
      client_(std::move(client)),
      bytes_sent_(stats.counter("silo_target_bytes_sent_total", "Object bytes sent by GETs.")),
      forwards_(stats.counter("silo_target_forwards_total", "Requests forwarded to the owner target.")),
      corrupt_found_(stats.counter("silo_target_corrupt_copies_total",
                                   "Copies whose bytes did not match their XXH3 (found by reads and scrubs).")),
      corrupt_repaired_(stats.counter("silo_target_corrupt_copies_repaired_total",
                                      "Corrupt copies replaced by a good copy from another target.")),
      copies_made_(stats.counter("silo_target_copies_made_total",
                                 "Copies of objects sent to or fetched from other holders (copies, repairs).")) {
  // The registry is the node's and outlives this object.
  stats.gauge("silo_target_receive_buffer_bytes",
              "Bytes held by the buffers of request bodies being received (PUTs, parts, copies).",
              [] { return static_cast<double>(receive_buffer_bytes()); });
  stats.gauge("silo_target_ec_slices_staged",
              "Slices of coded overwrites received here and waiting for their owner's commit (docs/adr/0014).",
              [this] {
                MutexLock lock(staged_mutex_);
                return static_cast<double>(staged_.size());
              });
}


Status Replication::check_holders_up(const wire::Bucket& bucket, const std::vector<wire::NodeInfo>& holders,
                                     const std::string& name) {
  if (bucket.props().write_mode() == wire::WRITE_MODE_ASYNC) return Status::ok();
  for (const auto& n : holders) {
    if (n.state() == wire::NODE_STATE_DOWN) {
      return Status::unavailable("target {}, which keeps a copy of {}, is down: a sync write cannot be acknowledged",
                                 n.id(), name);
    }
  }
  return Status::ok();
}



http::Awaitable<void> in_background(http::Awaitable<Status> work, std::string what) {
  const Status s = co_await std::move(work);
  if (!s.is_ok()) SILO_LOG_WARN("{}: {} (a scrub or the next rebalance repairs it)", what, s);
}

http::Awaitable<Status> Replication::push_copies(ObjectRef object, std::vector<wire::NodeInfo> to) {
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

http::Awaitable<Status> Replication::replicate_record(const ObjectRef& object,
                                                      const std::vector<wire::NodeInfo>& holders,
                                                      const wire::ObjectRecord& record) {
  const std::string encoded = wire::encode(record);
  std::vector<std::function<http::Awaitable<Status>()>> updates;
  for (const auto& node : peers_.others_than_self(holders)) {
    updates.push_back([this, node, &encoded, &object]() -> http::Awaitable<Status> {
      if (node.state() == wire::NODE_STATE_DOWN) co_return Status::unavailable("target {} is down", node.id());
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest put;
      put.method = http::Method::kPut;
      put.target = internal_object_target(object) + "?meta=1";
      CO_ASSIGN_OR_RETURN(auto answer, co_await client_->call(to, std::move(put), encoded, kMaxSmallBody));
      // 404 / 412: that holder lacks this version; the walk or scrub brings it the object.
      if (answer.status != 200 && answer.status != 404 && answer.status != 412) {
        co_return Status::unavailable("{} answered {} to the new record of {}", node.id(), answer.status,
                                      object.name);
      }
      co_return Status::ok();
    });
  }
  for (const Status& s : co_await async::gather<Status>(std::move(updates))) {
    if (!s.is_ok()) co_return s;
  }
  co_return Status::ok();
}

http::Awaitable<Result<uint64_t>> Replication::xxh3_of(const store::OpenObject& object) {
  const int fd = object.fd();
  const uint64_t size = object.record().size();
  co_return co_await reader_.run([fd, size] { return store::xxh3_of_fd(fd, size); });
}

http::Awaitable<Result<store::FileSums>> Replication::sums_of(const store::OpenObject& object) {
  const int fd = object.fd();
  const uint64_t size = object.record().size();
  co_return co_await reader_.run([fd, size] { return store::sums_of_fd(fd, size); });
}

http::Awaitable<Status> Replication::verify_read(const store::OpenObject& object) {
  const wire::ObjectRecord& record = object.record();
  const Result<uint64_t> xxh3 = co_await xxh3_of(object);
  if (xxh3 && *xxh3 == record.xxh3()) co_return Status::ok();
  corrupt_found_.add();
  const std::string why = xxh3 ? fmt::format("XXH3 {} instead of {}", hash::u64_hex(*xxh3), hash::u64_hex(record.xxh3()))
                               : xxh3.error().to_string();
  SILO_LOG_ERROR("corrupt copy of {} (generation {}) on {}: {}", record.name(), record.generation(),
                 peers_.self().id(), why);
  co_return Status::data_loss("the stored bytes of {} do not match their checksum ({})", record.name(), why);
}

http::Awaitable<Status> Replication::verify_block(store::BlockVerifier& verifier, const store::OpenObject& object,
                                                  uint64_t offset) {
  Status checked = co_await store::verify_block(verifier, reader_, offset);
  if (checked.is_ok()) co_return checked;
  corrupt_found_.add();
  const wire::ObjectRecord& record = object.record();
  SILO_LOG_ERROR("corrupt copy of {} (generation {}) on {}: {}", record.name(), record.generation(),
                 peers_.self().id(), checked.message());
  co_return checked;
}

http::Awaitable<Status> Replication::send_verified(http::Exchange& exchange, store::ReadCheck check,
                                                   const ObjectRef& object, const store::OpenObject& opened,
                                                   http::ResponseHead head, uint64_t offset, uint64_t length,
                                                   std::string_view prefix) {
  store::BlockVerifier verifier(opened, check);
  const uint64_t end = offset + length;
  // The first block before the head: a copy found corrupt now is served from another.
  if (length > 0 && verifier.verified_bytes(offset, length) == 0) {
    CO_RETURN_IF_ERROR(co_await verify_block(verifier, opened, offset));
  }
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), prefix.size() + length));
  if (!prefix.empty()) CO_RETURN_IF_ERROR(co_await exchange.response().write({prefix.data(), prefix.size()}));
  for (uint64_t at = offset; at < end;) {
    uint64_t ready = verifier.verified_bytes(at, end - at);
    if (ready == 0) {
      Status checked = co_await verify_block(verifier, opened, at);
      if (!checked.is_ok()) {
        co_await repair_later(object, opened.record().generation());
        co_return checked;
      }
      ready = verifier.verified_bytes(at, end - at);
    }
    CO_RETURN_IF_ERROR(co_await exchange.response().send_file(opened.fd(), at, ready));
    at += ready;
  }
  co_return Status::ok();
}

http::Awaitable<void> Replication::repair_later(const ObjectRef& object, uint64_t generation) {
  if (peers_.holders_of(object).size() < 2 && !peers_.is_rebalancing()) co_return;  // no other copy to take
  const auto executor = co_await boost::asio::this_coro::executor;
  std::string what = fmt::format("repairing the corrupt copy of {}", object.name);
  boost::asio::co_spawn(executor, in_background(repair_copy(object, generation), std::move(what)),
                        boost::asio::detached);
}

http::Awaitable<Status> Replication::repair_copy(ObjectRef object, uint64_t generation) {
  // Another read may have repaired it meanwhile: only a copy still broken is counted.
  const std::optional<BrokenCopy> broken = co_await broken_copy(object);
  if (!broken || broken->generation != generation) co_return Status::ok();
  CO_RETURN_IF_ERROR(co_await pull_copy(object, generation));
  const std::optional<BrokenCopy> still = co_await broken_copy(object);
  if (still) co_return Status::data_loss("no good copy of {} was found", object.name);
  corrupt_repaired_.add();
  SILO_LOG_INFO("corrupt copy of {} replaced by a good one from another target", object.name);
  co_return Status::ok();
}

http::Awaitable<Result<bool>> Replication::ensure_copy(const wire::NodeInfo& holder, const ObjectRef& object,
                                                  const store::OpenObject& source) {
  // What the holder has: nothing, this version, or a newer one (written there since).
  CO_ASSIGN_OR_RETURN(const std::optional<wire::ObjectRecord> theirs, co_await record_at(holder, object));
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (theirs && (!bucket || !replaces(&*theirs, source.record(), bucket->props()))) co_return false;
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(holder.url()));
  CO_ASSIGN_OR_RETURN(const Placed placed, co_await push_copy(to, object, source));
  co_return placed.is_kept;
}

http::Awaitable<Result<Placed>> Replication::push_copy(const http::Endpoint& to, const ObjectRef& object,
                                                  const store::OpenObject& source) {
  const wire::ObjectRecord& record = source.record();
  const std::string prefix = copy_prefix(record);
  http::ClientRequest put;
  put.method = http::Method::kPut;
  put.target = internal_object_target(object);
  put.headers.set(http::kNodeMapVersionHeader, std::to_string(peers_.maps().node_map()->version()));
  CO_ASSIGN_OR_RETURN(auto call, co_await client_->start(to, std::move(put), prefix.size() + record.size()));
  CO_RETURN_IF_ERROR(co_await call->write({prefix.data(), prefix.size()}));
  std::vector<char> buffer(std::min<uint64_t>(kCopyChunk, std::max<uint64_t>(record.size(), 1)));
  uint64_t offset = 0;
  const int fd = source.fd();
  while (offset < record.size()) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), record.size() - offset));
    const ssize_t n = co_await reader_.run([fd, &buffer, want, offset] {
      return ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    });
    if (n <= 0) co_return Status::data_loss("reading {} at {} for rebalance: {}", object.name, offset,
                                            n < 0 ? std::strerror(errno) : "file is shorter than its record");
    CO_RETURN_IF_ERROR(co_await call->write({buffer.data(), static_cast<size_t>(n)}));
    offset += static_cast<uint64_t>(n);
  }
  CO_ASSIGN_OR_RETURN(const http::ClientResponse head, co_await call->finish());
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(call->body(), kMaxSmallBody));
  if (head.status != 200) co_return copy_refused(object, to, head.status, body);
  co_return placed_of(body);
}

http::Awaitable<Result<Placed>> Replication::store_copy(http::BodyReader& body, const ObjectRef& object,
                                                   std::optional<uint64_t> replacing) {
  CO_ASSIGN_OR_RETURN(std::unique_ptr<Incoming> incoming, co_await receive_copy(body, object, replacing));
  co_return co_await commit_incoming(*incoming);
}

http::Awaitable<Result<std::unique_ptr<Replication::Incoming>>> Replication::receive_copy(
    http::BodyReader& body, const ObjectRef& object, std::optional<uint64_t> replacing) {
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket) {
    co_return Status::not_found("bucket id {} does not exist", object.bucket_id.value()).with_reason("NoSuchBucket");
  }
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await read_copy_record(body));
  if (record.name() != object.name) {
    co_return Status::invalid_argument("copy record names {}, the path {}", record.name(), object.name);
  }
  auto incoming = std::make_unique<Incoming>();
  incoming->object = object;
  incoming->record = record;
  store::PutOptions options;
  options.durability = store::Durability::kFsync;  // the sender removes its copy on our word
  options.attributes = record;
  options.original = record;
  options.expected_size = record.size();
  options.precondition = [this, in = incoming.get(), props = bucket->props(),
                          replacing](const wire::ObjectRecord* current) {
    // Only a holder under this node's current map takes a copy: one sent by a walk that a
    // newer map cancelled must not land where the new walk has looked already.
    MutexLock lock(copies_mutex_);
    const bool is_holder = peers_.is_self_among(peers_.holders_of(in->object));
    if (!is_holder) {
      return Status::failed_precondition("{} does not hold copies of {} under node map v{}", peers_.self().id(),
                                         in->object.name, peers_.maps().node_map()->version());
    }
    // A broken copy is replaced only by the same version (a rebuilt slice, a good copy).
    const bool replaces_corrupt = current != nullptr && replacing && current->generation() == *replacing &&
                                  !incoming_wins(&in->record, *current);
    if (!replaces_corrupt && !replaces(current, in->record, props)) {
      return Status::already_exists("a copy as new or newer is here");
    }
    ++copies_in_flight_;
    in->is_counted = true;
    in->placed.replaced_same_version = current != nullptr && same_version(*current, in->record);
    return Status::ok();
  };
  CO_ASSIGN_OR_RETURN(incoming->writer, co_await store_.create(object, std::move(options)));
  CO_RETURN_IF_ERROR((co_await receive_into(body, *incoming->writer, record.size())).status());
  co_return incoming;
}

http::Awaitable<Result<Placed>> Replication::commit_incoming(Incoming& incoming) {
  auto committed = co_await incoming.writer->commit();
  if (incoming.is_counted) {
    MutexLock lock(copies_mutex_);
    --copies_in_flight_;
    incoming.is_counted = false;
  }
  if (!committed && committed.error().code() == Code::kAlreadyExists) co_return Placed{};
  if (!committed) co_return std::move(committed).error();
  incoming.placed.is_kept = true;
  co_return incoming.placed;
}

http::Awaitable<Result<std::optional<Replication::Holder>>> Replication::newest_holder(const ObjectRef& object) {
  std::optional<Holder> newest;
  std::optional<Status> unsure;  // why a holder that may have it did not say
  std::unique_ptr<boost::asio::steady_timer> timer;
  for (const wire::NodeInfo& node : peers_.maps().placement()->ranked_holders(object)) {
    if (node.id() == peers_.self().id()) continue;
    auto to = http::Endpoint::parse(node.url());
    if (!to) continue;
    // A holder that fails to answer is asked once more: one lost connection or busy
    // moment must not turn a missing object into a 503.
    auto record = co_await record_at(node, object);
    if (!record && node.state() != wire::NODE_STATE_DOWN) {
      SILO_LOG_WARN("asking {} for {} again: {}", node.id(), object.name, record.error());
      co_await async::pause(timer, std::chrono::milliseconds(50));
      record = co_await record_at(node, object);
    }
    if (!record) {
      if (!unsure) unsure = std::move(record).error();
      continue;
    }
    if (!*record) continue;
    // Every holder is asked: an older version may sit on a better-ranked one (two
    // rebalances in a row), and the newest is the object.
    if (!newest || incoming_wins(&newest->record, **record)) newest = Holder{node, *to, std::move(**record)};
  }
  if (!newest && unsure) {
    co_return Status::unavailable("a target that may hold object {} did not answer: {}", object.name,
                                  unsure->message());
  }
  co_return newest;
}

http::Awaitable<Status> Replication::pull_copy(ObjectRef object, std::optional<uint64_t> replacing) {
  CO_ASSIGN_OR_RETURN(const std::optional<Holder> holder, co_await newest_holder(object));
  if (!holder) co_return Status::ok();  // nowhere: the caller's own lookup answers NoSuchKey
  // A slice is not a copy: a missing one is rebuilt from the others (rebuild_slices).
  if (holder->record.has_ec()) co_return Status::ok();
  http::ClientRequest get;
  get.target = internal_object_target(object);
  CO_ASSIGN_OR_RETURN(auto call, co_await client_->start(holder->to, std::move(get), uint64_t{0}));
  CO_ASSIGN_OR_RETURN(const http::ClientResponse head, co_await call->finish());
  if (head.status == 500) {
    // The holder would not serve its copy: it is corrupt or unreadable there too. Said as
    // it is (issue #23 F5), not as a move to retry after.
    co_return Status::data_loss("no good copy of {} to repair from: the copy on {} is corrupt or unreadable too",
                                object.name, holder->node.id());
  }
  if (head.status != 200) {
    co_return Status::unavailable("object {} moved away from {} while being read; retry", object.name,
                                  holder->node.id());
  }
  auto stored = co_await store_copy(call->body(), object, replacing);
  if (!stored && stored.error().code() == Code::kFailedPrecondition) {
    co_return Status::unavailable("object {} changed holders while being read (node maps converging); retry",
                                  object.name);
  }
  if (!stored) {
    Status failed = std::move(stored).error();
    co_return failed.annotate("copying {} from {}", object.name, holder->node.id());
  }
  SILO_LOG_DEBUG("{} copied here from {}", object.name, holder->node.id());
  copies_made_.add();
  co_return Status::ok();
}

bool is_local_only(const http::RequestHead& request) {
  return request.headers.has(http::kLocalOnlyHeader) && request.headers.has(http::kForwardedHeader);
}

http::Awaitable<Status> Replication::relay_local_only(http::Exchange& exchange, const http::Endpoint& to) {
  forwards_.add();
  http::Headers extra;
  extra.set(http::kForwardedHeader, peers_.self().id());
  extra.set(http::kLocalOnlyHeader, "1");
  extra.set(http::kNodeMapVersionHeader, std::to_string(peers_.maps().node_map()->version()));
  co_return co_await http::relay(exchange, *client_, to, extra);
}

http::Awaitable<Status> Replication::send_undo(const http::Endpoint& owner, const ObjectRef& object, int64_t mtime,
                                          uint64_t xxh3) {
  http::ClientRequest undo;
  undo.method = http::Method::kDelete;
  undo.target = fmt::format("{}?mtime={}&xxh3={}", internal_object_target(object), mtime, xxh3);
  CO_ASSIGN_OR_RETURN(auto undone, co_await client_->call(owner, std::move(undo), "", kMaxSmallBody));
  if (undone.status != 204 && undone.status != 404 && undone.status != 412) {
    co_return Status::unavailable("{} did not take back the copy of deleted {}: HTTP {}", owner.to_string(),
                                  object.name, undone.status);
  }
  co_return Status::ok();
}

http::Awaitable<void> Replication::handle_internal_object(http::Exchange& exchange, std::string_view rest) {
  const http::RequestHead& request = exchange.request();
  const size_t slash = rest.find('/');
  uint64_t bucket_id = 0;
  const bool is_valid = slash != std::string_view::npos && slash + 1 < rest.size() &&
                        std::from_chars(rest.data(), rest.data() + slash, bucket_id).ptr == rest.data() + slash;
  Status s;
  if (!is_valid) {
    s = Status::invalid_argument("expected /v1/internal/objects/<bucket id>/<name>");
  } else {
    const ObjectRef object{BucketId(bucket_id), std::string(rest.substr(slash + 1))};
    const std::optional<std::string> stage = request.query_param("stage");
    const std::optional<std::string> commit = request.query_param("commit");
    switch (request.method) {
      case http::Method::kGet: s = co_await serve_copy(exchange, object); break;
      case http::Method::kPut:
        if (request.query_param("meta")) {
          s = co_await take_record(exchange, object);
        } else if (stage) {
          s = co_await stage_copy(exchange, object, *stage);
        } else {
          s = co_await take_copy(exchange, object);
        }
        break;
      case http::Method::kPost:
        if (commit) {
          s = co_await commit_staged(exchange, object, *commit);
        } else {
          s = Status::invalid_argument("POST on an internal object needs ?commit=TOKEN");
        }
        break;
      case http::Method::kDelete:
        if (stage) {
          s = co_await drop_staged(exchange, object, *stage);
        } else {
          s = co_await drop_copy(exchange, object);
        }
        break;
      default: s = Status::invalid_argument("{} is not supported on an internal object", request.method_text);
    }
  }
  // Once the answer has begun a failure is the peer's connection: nothing more to answer.
  if (s.is_ok() || exchange.response().has_begun()) co_return;
  // Another version here, or not a holder here: 412 on this wire (docs/wire-format.md),
  // which senders take as "nothing to do here" (send_undo, replicate_record).
  if (s.code() == Code::kFailedPrecondition) {
    co_await http::send_json(exchange, 412, wire::error_json(s));
  } else {
    co_await http::send_error(exchange, s);
  }
}

http::Awaitable<Status> Replication::serve_copy(http::Exchange& exchange, const ObjectRef& object) {
  const http::RequestHead& request = exchange.request();
  CO_ASSIGN_OR_RETURN(const store::OpenObject opened, co_await store_.open(object));
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/octet-stream");
  if (request.query_param("meta")) co_return co_await exchange.response().send(std::move(head), wire::encode(opened.record()));
  // ?offset=&length=: only those bytes (an erasure-coded read of part of a slice).
  const uint64_t file_size = opened.record().size();
  const uint64_t offset = std::min(query_u64(request, "offset"), file_size);
  const uint64_t length =
      request.query_param("length") ? std::min(query_u64(request, "length"), file_size - offset) : file_size - offset;
  // A corrupt copy never leaves (the reader goes elsewhere or reconstructs): checked block
  // by block as it is sent (a slice, which has no block sums: whole, first).
  const std::string prefix = copy_prefix(opened.record());
  CO_RETURN_IF_ERROR(co_await send_verified(exchange, store::ReadCheck::kVerify, object, opened, std::move(head), offset, length, prefix));
  bytes_sent_.add(length);
  co_return Status::ok();
}

http::Awaitable<Status> Replication::take_record(http::Exchange& exchange, const ObjectRef& object) {
  // The owner changed the record of a version this copy has (tags): take its descriptive
  // fields; another version here is left alone (412).
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxRecordBytes));
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord incoming,
                      wire::decode<wire::ObjectRecord>(body, wire::Source::kNetwork));
  std::function<Status(wire::ObjectRecord&)> take = [&incoming](wire::ObjectRecord& current) {
    if (!same_version(current, incoming)) {
      return Status::failed_precondition("{} here is another version", current.name());
    }
    current = incoming;  // update() keeps the fields that describe the bytes
    return Status::ok();
  };
  CO_RETURN_IF_ERROR((co_await store_.update(object, std::move(take), store::Durability::kFsync)).status());
  co_await http::send_json(exchange, 200, R"({"kept":"incoming"})");
  co_return Status::ok();
}

http::Awaitable<Status> Replication::take_copy(http::Exchange& exchange, const ObjectRef& object) {
  // ?repair=1: a rebuilt slice for a holder whose own is missing or corrupt.
  std::optional<BrokenCopy> broken;
  if (exchange.request().query_param("repair")) broken = co_await broken_copy(object);
  std::optional<uint64_t> replacing;
  if (broken) replacing = broken->generation;
  CO_ASSIGN_OR_RETURN(const Placed stored, co_await store_copy(exchange.body(), object, replacing));
  if (stored.is_kept && broken && broken->is_corrupt) corrupt_repaired_.add();
  co_await http::send_json(exchange, 200, placed_json(stored));
  co_return Status::ok();
}

http::Awaitable<Status> Replication::drop_copy(http::Exchange& exchange, const ObjectRef& object) {
  const http::RequestHead& request = exchange.request();
  const uint64_t mtime = query_u64(request, "mtime");
  const uint64_t xxh3 = query_u64(request, "xxh3");
  if (mtime != 0) {
    // Only that version: a newer one written since must stay.
    CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await store_.stat(object));
    if (static_cast<uint64_t>(record.mtime_unix_nanos()) != mtime || record.xxh3() != xxh3) {
      co_return Status::failed_precondition("{} here is another version", object.name);
    }
    CO_RETURN_IF_ERROR(co_await store_.remove_generation(object, record.generation()));
  } else {
    CO_RETURN_IF_ERROR(co_await store_.remove(object));
  }
  http::ResponseHead head;
  head.status = 204;
  std::ignore = co_await exchange.response().send(std::move(head), "");
  co_return Status::ok();
}

http::Awaitable<void> Replication::drain_copies(const std::function<bool()>& cancelled) {
  std::unique_ptr<asio::steady_timer> timer;
  while (!cancelled()) {
    {
      MutexLock lock(copies_mutex_);
      if (copies_in_flight_ == 0) co_return;
    }
    co_await async::pause(timer, std::chrono::milliseconds(5));
  }
}

http::Awaitable<Result<std::optional<wire::ObjectRecord>>> Replication::record_at(
    const wire::NodeInfo& node, const ObjectRef& object) {
  if (node.state() == wire::NODE_STATE_DOWN)
    co_return Status::unavailable("target {} is down", node.id());
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
  http::ClientRequest ask;
  ask.target = internal_object_target(object) + "?meta=1";
  CO_ASSIGN_OR_RETURN(auto answer, co_await client_->call(to, std::move(ask), "", kMaxRecordBytes));
  if (answer.status == 404) co_return std::nullopt;
  if (answer.status != 200) {
    co_return Status::unavailable("{} answered {} for {}: {}", node.id(), answer.status,
                                  object.name, answer.body);
  }
  CO_ASSIGN_OR_RETURN(wire::ObjectRecord record,
                      wire::decode<wire::ObjectRecord>(answer.body, wire::Source::kNetwork));
  co_return std::optional<wire::ObjectRecord>(std::move(record));
}

http::Awaitable<std::optional<Replication::BrokenCopy>> Replication::broken_copy(const ObjectRef& object) {
  auto opened = co_await store_.open(object);
  if (!opened) {
    if (opened.error().code() != Code::kDataLoss) co_return std::nullopt;
    auto record = co_await store_.stat(object);  // the file is gone, the record is not
    if (!record) co_return std::nullopt;
    co_return BrokenCopy{record->generation(), false};
  }
  const Result<uint64_t> xxh3 = co_await xxh3_of(*opened);
  if (xxh3 && *xxh3 == opened->record().xxh3()) co_return std::nullopt;
  co_return BrokenCopy{opened->record().generation(), true};
}

}  // namespace silo::replication
