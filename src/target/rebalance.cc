// A target's part in rebalance (docs/membership-and-rebalance.md): the walk that moves the
// objects it holds but no longer owns, the copies it receives, get-from-neighbor for
// objects not moved yet, and DELETEs that reach every copy while objects move.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <atomic>
#include <charconv>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "async/gather.h"
#include "cluster/primary.h"
#include "http/relay.h"
#include "http/reply.h"
#include "async/sleep.h"
#include "target/copy_wire.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace {

namespace asio = boost::asio;

constexpr size_t kWalkPage = 1000;
constexpr size_t kWalkParallelism = 8;  // objects in flight per walk
constexpr size_t kCopyChunk = 1024 * 1024;
constexpr std::chrono::milliseconds kRetryPause{1000};
constexpr size_t kMaxSmallBody = 64 * 1024;
constexpr uint32_t kMaxRecordBytes = 16 * 1024 * 1024;
constexpr std::string_view kInternalObjects = "/v1/internal/objects/";

uint64_t query_u64(const http::RequestHead& request, const char* name) {
  const auto text = request.query_param(name).value_or("");
  uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

}  // namespace

std::string internal_object_target(const ObjectRef& object) {
  return fmt::format("{}{}/{}", kInternalObjects, object.bucket_id.value(), text::percent_encode_path(object.name));
}

// [4-byte big-endian record length][record]: what precedes an object's bytes in a copy.
std::string copy_prefix(const wire::ObjectRecord& record) {
  const std::string encoded = wire::encode(record);
  std::string prefix(4, '\0');
  const auto n = static_cast<uint32_t>(encoded.size());
  for (int i = 0; i < 4; ++i) prefix[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return prefix + encoded;
}

http::Awaitable<Status> read_exact(http::BodyReader& body, std::span<char> out) {
  size_t filled = 0;
  while (filled < out.size()) {
    CO_ASSIGN_OR_RETURN(const size_t n, co_await body.read(out.subspan(filled)));
    if (n == 0) co_return Status::invalid_argument("copy ended after {} of {} header bytes", filled, out.size());
    filled += n;
  }
  co_return Status::ok();
}

http::Awaitable<Result<wire::ObjectRecord>> read_copy_record(http::BodyReader& body) {
  char length_bytes[4];
  CO_RETURN_IF_ERROR(co_await read_exact(body, {length_bytes, 4}));
  uint32_t length = 0;
  for (char c : length_bytes) length = (length << 8) | static_cast<unsigned char>(c);
  if (length > kMaxRecordBytes) co_return Status::invalid_argument("copy record of {} bytes is too large", length);
  std::string encoded(length, '\0');
  CO_RETURN_IF_ERROR(co_await read_exact(body, {encoded.data(), encoded.size()}));
  co_return wire::decode<wire::ObjectRecord>(encoded, wire::Source::kNetwork);
}

// Which of two versions of one object a copy keeps: the newer; equal times with other
// bytes (two PUTs in the same nanosecond on two targets) go to the larger XXH3, so every
// target decides alike.
uint64_t version_xxh3(const wire::ObjectRecord& record) {
  return record.has_ec() ? record.ec().object_xxh3() : record.xxh3();
}

bool incoming_wins(const wire::ObjectRecord* current, const wire::ObjectRecord& incoming) {
  if (current == nullptr) return true;
  if (current->mtime_unix_nanos() != incoming.mtime_unix_nanos()) {
    return incoming.mtime_unix_nanos() > current->mtime_unix_nanos();
  }
  return version_xxh3(incoming) > version_xxh3(*current);
}

bool same_version(const wire::ObjectRecord& a, const wire::ObjectRecord& b) {
  return a.mtime_unix_nanos() == b.mtime_unix_nanos() && version_xxh3(a) == version_xxh3(b);
}

std::string placed_json(const Placed& placed) {
  if (!placed.is_kept) return R"({"kept":"existing"})";
  return placed.replaced_same_version ? R"({"kept":"incoming","replaced":"same_version"})" : R"({"kept":"incoming"})";
}

Placed placed_of(std::string_view body) {
  Placed placed;
  placed.is_kept = body.find(R"("kept":"incoming")") != std::string_view::npos;
  placed.replaced_same_version = body.find(R"("replaced":"same_version")") != std::string_view::npos;
  return placed;
}

bool fits_layout(const wire::ObjectRecord& record, const wire::BucketProps& props) {
  if (!wire::is_erasure_coded(props)) return !record.has_ec();
  const wire::EcPolicy& policy = props.ec();
  if (!record.has_ec()) return record.size() == 0 || record.size() < policy.min_size();
  return record.ec().data() == policy.data() && record.ec().parity() == policy.parity() &&
         (record.ec().object_size() >= policy.min_size());
}

bool replaces(const wire::ObjectRecord* current, const wire::ObjectRecord& incoming, const wire::BucketProps& props) {
  if (incoming_wins(current, incoming)) return true;
  return same_version(*current, incoming) && fits_layout(incoming, props) && !fits_layout(*current, props);
}

// One walk of one phase of one rebalance; replaced when the node map moves on.
struct Target::Walk {
  uint64_t rebalance_id = 0;
  wire::RebalancePhase phase = wire::REBALANCE_PHASE_DONE;
  std::atomic<bool> cancelled{false};
  std::atomic<uint64_t> scanned{0};
  std::atomic<uint64_t> moved{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<bool> finished{false};
  uint64_t total = 0;
  int64_t started_unix_nanos = 0;
  std::atomic<int64_t> finished_unix_nanos{0};
  Mutex mutex;
  std::string last_error GUARDED_BY(mutex);
  // Copies this walk sent of objects deleted meanwhile, still to take back at their
  // owner (object, owner, mtime, xxh3): the walk is not finished until they are.
  struct Undo {
    ObjectRef object;
    http::Endpoint owner;
    int64_t mtime_unix_nanos = 0;
    uint64_t xxh3 = 0;
  };
  std::vector<Undo> undos GUARDED_BY(mutex);
  std::unique_ptr<asio::steady_timer> timer;  // the pause between attempts
  // The walk this one replaced: it must have exited (its last copies landed) first.
  std::shared_ptr<Walk> previous;
  std::atomic<bool> exited{false};

  void fail(const Status& s) {
    errors.fetch_add(1);
    MutexLock lock(mutex);
    last_error = s.to_string();
  }
};

bool Target::is_rebalancing() const {
  return maps_.node_map()->rebalance_phase() != wire::REBALANCE_PHASE_DONE;
}

std::optional<wire::Bucket> Target::bucket_by_id(uint64_t id) const {
  for (const auto& b : maps_.bucket_map()->buckets()) {
    if (b.id() == id) return b;
  }
  return std::nullopt;
}

http::Awaitable<void> Target::sync_rebalance() {
  const auto map = maps_.node_map();
  std::shared_ptr<Walk> started;
  {
    MutexLock lock(rebalance_mutex_);
    const bool is_current = walk_ && walk_->rebalance_id == map->rebalance_id() && walk_->phase == map->rebalance_phase();
    if (is_current) co_return;
    if (walk_ && !walk_->finished) {
      walk_->cancelled = true;
      async::cancel(walk_->timer);
      SILO_LOG_INFO("rebalance walk {} ({}) stops: node map v{} moved on", walk_->rebalance_id,
                    wire::phase_name(walk_->phase), map->version());
    }
    if (map->rebalance_phase() == wire::REBALANCE_PHASE_DONE) co_return;  // keep the last walk's figures
    started = std::make_shared<Walk>();
    started->rebalance_id = map->rebalance_id();
    started->phase = map->rebalance_phase();
    started->started_unix_nanos = Clock::real().unix_nanos();
    started->total = store_.object_count_estimate();
    started->previous = walk_;
    walk_ = started;
  }
  asio::co_spawn(co_await asio::this_coro::executor, walk(started), asio::detached);
}

void Target::stop_rebalance() {
  is_stopping_ = true;
  MutexLock lock(rebalance_mutex_);
  if (!walk_) return;
  walk_->cancelled = true;
  async::cancel(walk_->timer);
}

http::Awaitable<void> Target::drain_copies(Walk& walk) {
  std::unique_ptr<asio::steady_timer> timer;
  // Every walk this one replaced has exited (none of its copies or undos is on its way),
  // and its copies still to take back are this walk's to finish. A walk cancelled before
  // it got here keeps its own predecessors, so the chain is followed to its end.
  for (std::shared_ptr<Walk> p = walk.previous; p; p = p->previous) {
    while (!p->exited) {
      if (walk.cancelled) co_return;  // the walk that replaces this one takes the chain over
      co_await async::pause(timer, std::chrono::milliseconds(5));
    }
    // Only here are two walks locked at once, always the newer first.
    MutexLock lock(walk.mutex);
    MutexLock previous_lock(p->mutex);
    for (auto& undo : p->undos) walk.undos.push_back(std::move(undo));
    p->undos.clear();
  }
  walk.previous.reset();
  // Copies accepted here under the previous map have committed.
  while (!walk.cancelled) {
    {
      MutexLock lock(copies_mutex_);
      if (copies_in_flight_ == 0) co_return;
    }
    co_await async::pause(timer, std::chrono::milliseconds(5));
  }
}

http::Awaitable<Status> Target::retry_undos(Walk& walk) {
  std::vector<Walk::Undo> undos;
  {
    MutexLock lock(walk.mutex);
    undos.swap(walk.undos);
  }
  Status last;
  for (auto& undo : undos) {
    const Status s = co_await send_undo(undo.owner, undo.object, undo.mtime_unix_nanos, undo.xxh3);
    if (s.is_ok()) continue;
    last = s;
    MutexLock lock(walk.mutex);
    walk.undos.push_back(std::move(undo));
  }
  co_return last;
}

http::Awaitable<Status> Target::send_undo(const http::Endpoint& owner, const ObjectRef& object, int64_t mtime,
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

http::Awaitable<void> Target::walk(std::shared_ptr<Walk> walk) {
  // Marks the walk exited however it ends (a newer walk waits for that).
  struct Exit {
    Walk& walk;
    ~Exit() { walk.exited = true; }
  } exit{*walk};
  // The replaced walk and the copies it sent or we accepted under the previous map first.
  co_await drain_copies(*walk);
  SILO_LOG_INFO("rebalance walk {} ({}) starts over ~{} objects", walk->rebalance_id, wire::phase_name(walk->phase),
                walk->total);
  while (!walk->cancelled) {
    walk->scanned = 0;
    walk->errors = 0;
    if (const Status undone = co_await retry_undos(*walk); !undone.is_ok()) walk->fail(undone);
    Status s = co_await walk_once(*walk);
    // Copies taken back during this pass must be confirmed before the walk may finish.
    if (const Status undone = co_await retry_undos(*walk); !undone.is_ok()) walk->fail(undone);
    if (walk->cancelled) break;
    if (s.is_ok() && walk->errors == 0) {
      walk->finished_unix_nanos = Clock::real().unix_nanos();
      walk->finished = true;
      SILO_LOG_INFO("rebalance walk {} ({}) finished: {} objects, {} bytes", walk->rebalance_id,
                    wire::phase_name(walk->phase), walk->moved.load(), walk->bytes.load());
      co_return;
    }
    if (!s.is_ok()) walk->fail(s);
    std::string last_error;
    {
      MutexLock lock(walk->mutex);
      last_error = walk->last_error;
    }
    SILO_LOG_WARN("rebalance walk {} ({}): {} objects failed, the last: {}; walking again", walk->rebalance_id,
                  wire::phase_name(walk->phase), walk->errors.load(), last_error);
    co_await async::pause(walk->timer, kRetryPause);
  }
}

http::Awaitable<Status> Target::walk_once(Walk& walk) {
  CO_ASSIGN_OR_RETURN(const std::vector<BucketId> buckets, co_await store_.bucket_ids());
  for (const BucketId bucket : buckets) {
    if (!bucket_by_id(bucket.value())) continue;  // deleted: collect_deleted_buckets removes it
    store::ListOptions options;
    options.limit = kWalkPage;
    for (;;) {
      if (walk.cancelled) co_return Status::ok();
      CO_ASSIGN_OR_RETURN(const store::ListResult page, co_await store_.list(bucket, options));
      // Owners come from the current map: a newer one cancels this walk anyway.
      const auto placement = maps_.placement();
      if (placement->empty()) co_return Status::unavailable("the node map has no targets that own objects");
      std::vector<std::function<http::Awaitable<Status>()>> moves;
      for (const auto& entry : page.entries) {
        ++walk.scanned;
        ObjectRef object{bucket, entry.name()};
        std::vector<wire::NodeInfo> holders = holders_of(object);
        if (holders.empty()) continue;  // its bucket is gone
        if (holders.size() == 1 && holders[0].id() == options_.self.id()) continue;  // the one copy, here
        moves.push_back([this, &walk, object, holders = std::move(holders)]() {
          return move_object(walk, object, holders);
        });
        if (moves.size() == kWalkParallelism) {
          if (walk.cancelled) co_return Status::ok();
          for (const Status& s : co_await async::gather<Status>(std::move(moves))) {
            if (!s.is_ok()) walk.fail(s);
          }
          moves.clear();
        }
      }
      for (const Status& s : co_await async::gather<Status>(std::move(moves))) {
        if (!s.is_ok()) walk.fail(s);
      }
      if (!page.is_truncated || page.entries.empty()) break;
      options.start_after = page.entries.back().name();
    }
  }
  co_return Status::ok();
}

http::Awaitable<Status> Target::move_object(Walk& walk, const ObjectRef& object,
                                            const std::vector<wire::NodeInfo>& holders) {
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() == Code::kNotFound) co_return Status::ok();  // deleted meanwhile
  if (!opened) co_return std::move(opened).error();
  const wire::ObjectRecord& record = opened->record();
  const auto bucket = bucket_by_id(object.bucket_id.value());
  if (!bucket) co_return Status::ok();  // deleted meanwhile
  bool is_holder = false;
  const bool is_coded = record.has_ec() || (wire::is_erasure_coded(bucket->props()) && !fits_layout(record, bucket->props()));
  if (is_coded) {
    // Slices, and full copies that the layout wants as slices (erasure.cc).
    const Status s = co_await move_coded(object, holders, *opened, is_holder);
    if (s.code() == Code::kAborted) co_return co_await move_object(walk, object, holders);  // now another form
    CO_RETURN_IF_ERROR(s);
  }
  // Full copies live on the holders, or for an erasure-coded bucket's small objects on
  // its first parity + 1.
  std::vector<wire::NodeInfo> targets;  // named, not a temporary beside co_await (adr/0003)
  if (!is_coded) targets = replica_holders(object);
  for (const wire::NodeInfo& holder : targets) {
    if (holder.id() == options_.self.id()) {
      is_holder = true;
      continue;
    }
    CO_ASSIGN_OR_RETURN(const bool sent, co_await ensure_copy(holder, object, *opened));
    if (!sent) continue;
    CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(holder.url()));
    walk.bytes += record.size();
    // A DELETE that ran while the copy was on its way removed this copy but may have
    // missed the one just made: take that one away again.
    auto still_here = co_await store_.stat(object);
    if (!still_here && still_here.error().code() == Code::kNotFound) {
      const Status undone = co_await send_undo(to, object, record.mtime_unix_nanos(), record.xxh3());
      if (!undone.is_ok()) {
        // Kept until it succeeds: the walk will not see this object again to retry it.
        MutexLock lock(walk.mutex);
        walk.undos.push_back({object, to, record.mtime_unix_nanos(), record.xxh3()});
      }
      co_return undone;
    }
  }
  if (walk.phase == wire::REBALANCE_PHASE_CLEANUP && !is_holder) {
    const Status removed = co_await store_.remove_generation(object, record.generation());
    if (!removed.is_ok() && removed.code() != Code::kNotFound) co_return removed;  // rewritten: next walk
  }
  ++walk.moved;
  co_return Status::ok();
}

http::Awaitable<Result<bool>> Target::ensure_copy(const wire::NodeInfo& holder, const ObjectRef& object,
                                                  const store::OpenObject& source) {
  // What the holder has: nothing, this version, or a newer one (written there since).
  CO_ASSIGN_OR_RETURN(const std::optional<wire::ObjectRecord> theirs, co_await record_at(holder, object));
  const auto bucket = bucket_by_id(object.bucket_id.value());
  if (theirs && (!bucket || !replaces(&*theirs, source.record(), bucket->props()))) co_return false;
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(holder.url()));
  CO_ASSIGN_OR_RETURN(const Placed placed, co_await push_copy(to, object, source));
  co_return placed.is_kept;
}

http::Awaitable<Result<Placed>> Target::push_copy(const http::Endpoint& to, const ObjectRef& object,
                                                  const store::OpenObject& source) {
  const wire::ObjectRecord& record = source.record();
  const std::string prefix = copy_prefix(record);
  http::ClientRequest put;
  put.method = http::Method::kPut;
  put.target = internal_object_target(object);
  put.headers.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
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
  if (head.status != 200) {
    co_return Status::unavailable("copy of {} to {} answered {}: {}", object.name, to.to_string(), head.status, body);
  }
  co_return placed_of(body);
}

http::Awaitable<Result<Placed>> Target::store_copy(http::BodyReader& body, const ObjectRef& object,
                                                   std::optional<uint64_t> replacing) {
  const auto bucket = bucket_by_id(object.bucket_id.value());
  if (!bucket) {
    co_return Status::not_found("bucket id {} does not exist", object.bucket_id.value()).with_reason("NoSuchBucket");
  }
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await read_copy_record(body));
  if (record.name() != object.name) {
    co_return Status::invalid_argument("copy record names {}, the path {}", record.name(), object.name);
  }
  store::PutOptions options;
  options.durability = store::Durability::kFsync;  // the sender removes its copy on our word
  options.attributes = record;
  options.original = record;
  options.expected_size = record.size();
  bool is_counted = false;
  Placed placed;
  options.precondition = [this, &record, &object, &is_counted, &placed, &bucket,
                          replacing](const wire::ObjectRecord* current) {
    // Only a holder under this node's current map takes a copy: one sent by a walk that a
    // newer map cancelled must not land where the new walk has looked already.
    MutexLock lock(copies_mutex_);
    const bool is_holder = is_self_among(holders_of(object));
    if (!is_holder) {
      return Status::failed_precondition("{} does not hold copies of {} under node map v{}", options_.self.id(),
                                         object.name, maps_.node_map()->version());
    }
    // A broken copy is replaced only by the same version (a rebuilt slice, a good copy).
    const bool replaces_corrupt = current != nullptr && replacing && current->generation() == *replacing &&
                                  !incoming_wins(&record, *current);
    if (!replaces_corrupt && !replaces(current, record, bucket->props())) {
      return Status::already_exists("a copy as new or newer is here");
    }
    ++copies_in_flight_;
    is_counted = true;
    placed.replaced_same_version = current != nullptr && same_version(*current, record);
    return Status::ok();
  };
  WriteTicket ticket(*this);
  guard_bucket(options, *bucket, ticket);
  CO_ASSIGN_OR_RETURN(auto writer, co_await store_.create(object, std::move(options)));
  CO_RETURN_IF_ERROR((co_await receive(body, *writer, {})).status());
  auto committed = co_await writer->commit();
  if (is_counted) {
    MutexLock lock(copies_mutex_);
    --copies_in_flight_;
  }
  if (!committed && committed.error().code() == Code::kAlreadyExists) co_return Placed{};
  if (!committed) co_return std::move(committed).error();
  placed.is_kept = true;
  co_return placed;
}

http::Awaitable<Result<std::optional<Target::Holder>>> Target::newest_holder(const ObjectRef& object) {
  std::optional<Holder> newest;
  bool is_unsure = false;
  for (const wire::NodeInfo& node : maps_.placement()->ranked_holders(object)) {
    if (node.id() == options_.self.id()) continue;
    if (node.state() == wire::NODE_STATE_DOWN) {
      is_unsure = true;
      continue;
    }
    auto to = http::Endpoint::parse(node.url());
    if (!to) continue;
    http::ClientRequest ask;
    ask.target = internal_object_target(object) + "?meta=1";
    auto answer = co_await client_->call(*to, std::move(ask), "", kMaxRecordBytes);
    if (!answer || (answer->status != 200 && answer->status != 404)) {
      is_unsure = true;
      continue;
    }
    if (answer->status == 404) continue;
    auto record = wire::decode<wire::ObjectRecord>(answer->body, wire::Source::kNetwork);
    if (!record) {
      is_unsure = true;
      continue;
    }
    // Every holder is asked: an older version may sit on a better-ranked one (two
    // rebalances in a row), and the newest is the object.
    if (!newest || incoming_wins(&newest->record, *record)) newest = Holder{node, *to, std::move(*record)};
  }
  if (!newest && is_unsure) {
    co_return Status::unavailable("object {} is being rebalanced and a target that may hold it is down or unreachable",
                                  object.name);
  }
  co_return newest;
}

http::Awaitable<Status> Target::pull_if_missing(const ObjectRef& object) {
  if (!is_rebalancing()) co_return Status::ok();
  auto here = co_await store_.stat(object);
  if (here || here.error().code() != Code::kNotFound) co_return Status::ok();  // the caller sees the same
  co_return co_await pull_copy(object, std::nullopt);
}

http::Awaitable<Status> Target::pull_copy(const ObjectRef& object, std::optional<uint64_t> replacing) {
  CO_ASSIGN_OR_RETURN(const std::optional<Holder> holder, co_await newest_holder(object));
  if (!holder) co_return Status::ok();  // nowhere: the caller's own lookup answers NoSuchKey
  // A slice is not a copy: a missing one is rebuilt from the others (rebuild_slices).
  if (holder->record.has_ec()) co_return Status::ok();
  http::ClientRequest get;
  get.target = internal_object_target(object);
  CO_ASSIGN_OR_RETURN(auto call, co_await client_->start(holder->to, std::move(get), uint64_t{0}));
  CO_ASSIGN_OR_RETURN(const http::ClientResponse head, co_await call->finish());
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

bool Target::is_local_only(const http::RequestHead& request) {
  return request.headers.has(http::kLocalOnlyHeader) && request.headers.has(http::kForwardedHeader);
}

http::Awaitable<Status> Target::read_from_neighbor(http::Exchange& exchange, const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(const std::optional<Holder> holder, co_await newest_holder(object));
  if (!holder) co_return Status::not_found("The specified key does not exist: {}", object.name).with_reason("NoSuchKey");
  co_return co_await relay_local_only(exchange, holder->to);
}

http::Awaitable<Status> Target::relay_local_only(http::Exchange& exchange, const http::Endpoint& to) {
  forwards_.add();
  http::Headers extra;
  extra.set(http::kForwardedHeader, options_.self.id());
  extra.set(http::kLocalOnlyHeader, "1");
  extra.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
  co_return co_await http::relay(exchange, *client_, to, extra);
}

http::Awaitable<Status> Target::remove_everywhere(const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(const bool was_elsewhere, co_await remove_elsewhere(object));
  const Status removed = co_await store_.remove(object);
  if (removed.code() == Code::kNotFound && was_elsewhere) co_return Status::ok();
  co_return removed;
}

http::Awaitable<Result<bool>> Target::remove_elsewhere(const ObjectRef& object) {
  // While objects move any target may hold a copy; otherwise only the object's holders.
  const std::vector<wire::NodeInfo> candidates =
      is_rebalancing() ? maps_.placement()->ranked_holders(object) : holders_of(object);
  std::vector<std::function<http::Awaitable<Result<bool>>()>> removals;
  for (const wire::NodeInfo& node : candidates) {
    if (node.id() == options_.self.id()) continue;
    if (node.state() == wire::NODE_STATE_DOWN) {
      co_return Status::unavailable("target {}, which may hold a copy of {}, is down", node.id(), object.name);
    }
    removals.push_back([this, node, object]() -> http::Awaitable<Result<bool>> {
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest del;
      del.method = http::Method::kDelete;
      del.target = internal_object_target(object);
      CO_ASSIGN_OR_RETURN(auto answer, co_await client_->call(to, std::move(del), "", kMaxSmallBody));
      if (answer.status == 204) co_return true;
      if (answer.status == 404) co_return false;
      co_return Status::unavailable("{} answered {} to removing its copy of {}", node.id(), answer.status,
                                    object.name);
    });
  }
  bool found = false;
  for (auto& r : co_await async::gather<Result<bool>>(std::move(removals))) {
    if (!r) co_return std::move(r).error();
    found = found || *r;
  }
  co_return found;
}

http::Awaitable<void> Target::handle_rebalance_progress(http::Exchange& exchange) {
  wire::RebalanceProgress p;
  {
    MutexLock lock(rebalance_mutex_);
    if (walk_) {
      p.set_rebalance_id(walk_->rebalance_id);
      p.set_phase(walk_->phase);
      p.set_finished(walk_->finished);
      p.set_objects_scanned(walk_->scanned);
      p.set_objects_total(walk_->total);
      p.set_objects_moved(walk_->moved);
      p.set_bytes_moved(walk_->bytes);
      p.set_errors(walk_->errors);
      p.set_started_unix_nanos(walk_->started_unix_nanos);
      p.set_finished_unix_nanos(walk_->finished_unix_nanos);
      MutexLock walk_lock(walk_->mutex);
      p.set_last_error(walk_->last_error);
    }
  }
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/x-protobuf");
  std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(p)));
}

http::Awaitable<void> Target::handle_internal_object(http::Exchange& exchange, std::string_view rest) {
  const http::RequestHead& request = exchange.request();
  const size_t slash = rest.find('/');
  uint64_t bucket_id = 0;
  Status s;
  const bool is_valid = slash != std::string_view::npos && slash + 1 < rest.size() &&
                        std::from_chars(rest.data(), rest.data() + slash, bucket_id).ptr == rest.data() + slash;
  if (!is_valid) {
    s = Status::invalid_argument("expected /v1/internal/objects/<bucket id>/<name>");
  } else {
    const ObjectRef object{BucketId(bucket_id), std::string(rest.substr(slash + 1))};
    switch (request.method) {
      case http::Method::kGet: {
        auto opened = co_await store_.open(object);
        if (!opened) {
          s = std::move(opened).error();
          break;
        }
        http::ResponseHead head;
        head.headers.set("Content-Type", "application/octet-stream");
        if (request.query_param("meta")) {
          std::ignore = co_await exchange.response().send(std::move(head), wire::encode(opened->record()));
          co_return;
        }
        // ?offset=&length=: only those bytes (an erasure-coded read of part of a slice).
        const uint64_t file_size = opened->record().size();
        const uint64_t offset = std::min(query_u64(request, "offset"), file_size);
        const uint64_t length =
            request.query_param("length") ? std::min(query_u64(request, "length"), file_size - offset) : file_size - offset;
        // A corrupt copy never leaves (the reader goes elsewhere or reconstructs).
        if (const auto bucket = bucket_by_id(bucket_id)) {
          s = co_await verify_read(*bucket, *opened);
          if (!s.is_ok()) break;
        }
        const std::string prefix = copy_prefix(opened->record());
        s = co_await exchange.response().begin(std::move(head), prefix.size() + length);
        if (s.is_ok()) s = co_await exchange.response().write({prefix.data(), prefix.size()});
        if (s.is_ok() && length > 0) s = co_await exchange.response().send_file(opened->fd(), offset, length);
        if (s.is_ok()) bytes_sent_.add(length);
        co_return;  // a failure here is the peer's connection: nothing more to answer
      }
      case http::Method::kPut: {
        if (request.query_param("meta")) {
          // The owner changed the record of a version this copy has (tags): take its
          // descriptive fields; another version here is left alone (412).
          auto body = co_await http::read_all(exchange.body(), kMaxRecordBytes);
          auto incoming = body ? wire::decode<wire::ObjectRecord>(*body, wire::Source::kNetwork)
                               : Result<wire::ObjectRecord>(body.error());
          if (!incoming) {
            s = std::move(incoming).error();
            break;
          }
          std::function<Status(wire::ObjectRecord&)> take = [&incoming](wire::ObjectRecord& current) {
            if (!same_version(current, *incoming)) {
              return Status::failed_precondition("{} here is another version", current.name());
            }
            current = *incoming;  // update() keeps the fields that describe the bytes
            return Status::ok();
          };
          auto updated = co_await store_.update(object, std::move(take), store::Durability::kFsync);
          if (!updated) {
            s = std::move(updated).error();
            break;
          }
          co_await http::send_json(exchange, 200, R"({"kept":"incoming"})");
          co_return;
        }
        // ?repair=1: a rebuilt slice for a holder whose own is missing or corrupt.
        std::optional<BrokenCopy> broken;
        if (request.query_param("repair")) broken = co_await broken_copy(object);
        std::optional<uint64_t> replacing;
        if (broken) replacing = broken->generation;
        auto stored = co_await store_copy(exchange.body(), object, replacing);
        if (stored && stored->is_kept && broken && broken->is_corrupt) corrupt_repaired_.add();
        if (!stored) {
          s = std::move(stored).error();
          break;
        }
        co_await http::send_json(exchange, 200, placed_json(*stored));
        co_return;
      }
      case http::Method::kDelete: {
        const uint64_t mtime = query_u64(request, "mtime");
        const uint64_t xxh3 = query_u64(request, "xxh3");
        if (mtime != 0) {
          // Only that version: a newer one written since must stay.
          auto record = co_await store_.stat(object);
          if (!record) {
            s = std::move(record).error();
            break;
          }
          if (static_cast<uint64_t>(record->mtime_unix_nanos()) != mtime || record->xxh3() != xxh3) {
            s = Status::failed_precondition("{} here is another version", object.name);
            break;
          }
          s = co_await store_.remove_generation(object, record->generation());
        } else {
          s = co_await store_.remove(object);
        }
        if (s.is_ok()) {
          http::ResponseHead head;
          head.status = 204;
          std::ignore = co_await exchange.response().send(std::move(head), "");
          co_return;
        }
        break;
      }
      default: s = Status::invalid_argument("{} is not supported on an internal object", request.method_text);
    }
  }
  co_await http::send_error(exchange, s);
}

}  // namespace silo::target
