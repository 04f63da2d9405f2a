// A target's part in rebalance (docs/membership-and-rebalance.md): the walk that moves the
// objects it holds but no longer owns, the copies it receives, get-from-neighbor for
// objects not moved yet, and DELETEs that reach every copy while objects move.
#include "rebalance/rebalance.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <atomic>

#include "async/gather.h"
#include "async/sleep.h"
#include "base/clock.h"
#include "base/log.h"
#include "http/reply.h"
#include "replication/copy_wire.h"
#include "wire/json.h"

namespace silo::rebalance {
namespace {

namespace asio = boost::asio;
using replication::fits_layout;

constexpr size_t kWalkPage = 1000;
constexpr size_t kWalkParallelism = 8;  // objects in flight per walk
constexpr int kMaxPauseDoublings = 4;  // 1 s, 2 s, 4 s, 8 s, then 16 s
constexpr size_t kMaxSmallBody = 64 * 1024;

}  // namespace
Rebalance::Rebalance(replication::Peers& peers, store::Store& store, std::shared_ptr<http::Client> client,
                     replication::Replication& replication, erasure::Erasure& erasure, WalkOptions options)
    : peers_(peers),
      store_(store),
      client_(std::move(client)),
      replication_(replication),
      erasure_(erasure),
      options_(options) {}

// One walk of one phase of one rebalance; replaced when the node map moves on.
struct Rebalance::Walk {
  uint64_t rebalance_id = 0;
  wire::RebalancePhase phase = wire::REBALANCE_PHASE_DONE;
  std::atomic<bool> cancelled{false};
  std::atomic<uint64_t> scanned{0};
  std::atomic<uint64_t> moved{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  // Of this pass's errors, those a retry will not cure by waiting for a target that is
  // down or busy: the walk gives up after WalkOptions::max_failing_passes passes with some.
  std::atomic<uint64_t> lasting_errors{0};
  std::atomic<bool> finished{false};
  std::atomic<bool> failed{false};  // gave up: last_error says why
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
    const Code code = s.code();
    if (code != Code::kUnavailable && code != Code::kDeadlineExceeded) lasting_errors.fetch_add(1);
    MutexLock lock(mutex);
    last_error = s.to_string();
  }
};


http::Awaitable<void> Rebalance::sync() {
  const auto map = peers_.maps().node_map();
  std::shared_ptr<Walk> started;
  {
    MutexLock lock(mutex_);
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

void Rebalance::stop() {
  is_stopping_ = true;
  MutexLock lock(mutex_);
  if (!walk_) return;
  walk_->cancelled = true;
  async::cancel(walk_->timer);
}

http::Awaitable<void> Rebalance::drain_previous(Walk& walk) {
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
  co_await replication_.drain_copies([&walk] { return walk.cancelled.load(); });
}

http::Awaitable<Status> Rebalance::retry_undos(Walk& walk) {
  std::vector<Walk::Undo> undos;
  {
    MutexLock lock(walk.mutex);
    undos.swap(walk.undos);
  }
  Status last;
  for (auto& undo : undos) {
    const Status s = co_await replication_.send_undo(undo.owner, undo.object, undo.mtime_unix_nanos, undo.xxh3);
    if (s.is_ok()) continue;
    last = s;
    MutexLock lock(walk.mutex);
    walk.undos.push_back(std::move(undo));
  }
  co_return last;
}

http::Awaitable<void> Rebalance::walk(std::shared_ptr<Walk> walk) {
  // Marks the walk exited however it ends (a newer walk waits for that).
  struct Exit {
    Walk& walk;
    ~Exit() { walk.exited = true; }
  } exit{*walk};
  // The replaced walk and the copies it sent or we accepted under the previous map first.
  co_await drain_previous(*walk);
  SILO_LOG_INFO("rebalance walk {} ({}) starts over ~{} objects", walk->rebalance_id, wire::phase_name(walk->phase),
                walk->total);
  int failing_passes = 0;  // in a row
  auto failing_since = std::chrono::steady_clock::now();
  auto pause = options_.retry_pause;
  while (!walk->cancelled) {
    walk->scanned = 0;
    walk->errors = 0;
    walk->lasting_errors = 0;
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
    if (walk->lasting_errors == 0) {
      failing_passes = 0;
    } else if (failing_passes++ == 0) {
      failing_since = std::chrono::steady_clock::now();
    }
    const bool gives_up = failing_passes >= options_.max_failing_passes &&
                          std::chrono::steady_clock::now() - failing_since >= options_.give_up_after;
    std::string last_error;
    {
      MutexLock lock(walk->mutex);
      if (gives_up) {
        walk->last_error = fmt::format("{} objects still failed after {} passes; the last: {}", walk->errors.load(),
                                       failing_passes, walk->last_error);
      }
      last_error = walk->last_error;
    }
    if (gives_up) {
      // Objects not moved stay where they are, readable through get-from-neighbor while
      // the node map keeps this phase; a new rebalance tries them again.
      walk->finished_unix_nanos = Clock::real().unix_nanos();
      walk->failed = true;
      SILO_LOG_ERROR("rebalance walk {} ({}) gives up: {}", walk->rebalance_id, wire::phase_name(walk->phase),
                     last_error);
      co_return;
    }
    SILO_LOG_WARN("rebalance walk {} ({}): {} objects failed, the last: {}; walking again in {} ms",
                  walk->rebalance_id, wire::phase_name(walk->phase), walk->errors.load(), last_error, pause.count());
    co_await async::pause(walk->timer, pause);
    if (pause < options_.retry_pause * (1 << kMaxPauseDoublings)) pause *= 2;
  }
}

http::Awaitable<Status> Rebalance::walk_once(Walk& walk) {
  CO_ASSIGN_OR_RETURN(const std::vector<BucketId> buckets, co_await store_.bucket_ids());
  for (const BucketId bucket : buckets) {
    if (!peers_.bucket_by_id(bucket.value())) continue;  // deleted: the target's apply_bucket_map removes it
    store::ListOptions options;
    options.limit = kWalkPage;
    for (;;) {
      if (walk.cancelled) co_return Status::ok();
      CO_ASSIGN_OR_RETURN(const store::ListResult page, co_await store_.list(bucket, options));
      // Owners come from the current map: a newer one cancels this walk anyway.
      const auto placement = peers_.maps().placement();
      if (placement->empty()) co_return Status::unavailable("the node map has no targets that own objects");
      std::vector<std::function<http::Awaitable<Status>()>> moves;
      for (const auto& entry : page.entries) {
        ++walk.scanned;
        ObjectRef object{bucket, entry.name()};
        std::vector<wire::NodeInfo> holders = peers_.holders_of(object);
        if (holders.empty()) continue;  // its bucket is gone
        if (holders.size() == 1 && holders[0].id() == peers_.self().id()) continue;  // the one copy, here
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

http::Awaitable<Status> Rebalance::move_object(Walk& walk, const ObjectRef& object,
                                            const std::vector<wire::NodeInfo>& holders) {
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() == Code::kNotFound) co_return Status::ok();  // deleted meanwhile
  if (!opened) co_return std::move(opened).error();
  const wire::ObjectRecord& record = opened->record();
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket) co_return Status::ok();  // deleted meanwhile
  bool is_holder = false;
  const bool is_coded = record.has_ec() || (wire::is_erasure_coded(bucket->props()) && !fits_layout(record, bucket->props()));
  if (is_coded) {
    // Slices, and full copies that the layout wants as slices (erasure.cc).
    const Status s = co_await erasure_.move_coded(object, holders, *opened, is_holder);
    if (s.code() == Code::kAborted) co_return co_await move_object(walk, object, holders);  // now another form
    CO_RETURN_IF_ERROR(s);
  }
  // Full copies live on the holders, or for an erasure-coded bucket's small objects on
  // its first parity + 1.
  std::vector<wire::NodeInfo> targets;  // named, not a temporary beside co_await (adr/0003)
  if (!is_coded) targets = peers_.copy_holders(object);
  for (const wire::NodeInfo& holder : targets) {
    if (holder.id() == peers_.self().id()) {
      is_holder = true;
      continue;
    }
    CO_ASSIGN_OR_RETURN(const bool sent, co_await replication_.ensure_copy(holder, object, *opened));
    if (!sent) continue;
    CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(holder.url()));
    walk.bytes += record.size();
    // A DELETE that ran while the copy was on its way removed this copy but may have
    // missed the one just made: take that one away again.
    auto still_here = co_await store_.stat(object);
    if (!still_here && still_here.error().code() == Code::kNotFound) {
      const Status undone = co_await replication_.send_undo(to, object, record.mtime_unix_nanos(), record.xxh3());
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



http::Awaitable<Status> Rebalance::pull_if_missing(const ObjectRef& object) {
  if (!peers_.is_rebalancing()) co_return Status::ok();
  auto here = co_await store_.stat(object);
  if (here || here.error().code() != Code::kNotFound) co_return Status::ok();  // the caller sees the same
  co_return co_await replication_.pull_copy(object, std::nullopt);
}


http::Awaitable<Status> Rebalance::read_from_neighbor(http::Exchange& exchange, const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(const std::optional<replication::Replication::Holder> holder, co_await replication_.newest_holder(object));
  if (!holder) co_return Status::not_found("The specified key does not exist: {}", object.name).with_reason("NoSuchKey");
  co_return co_await replication_.relay_local_only(exchange, holder->to);
}

http::Awaitable<Status> Rebalance::remove_everywhere(const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(const bool was_elsewhere, co_await remove_elsewhere(object));
  const Status removed = co_await store_.remove(object);
  if (removed.code() == Code::kNotFound && was_elsewhere) co_return Status::ok();
  co_return removed;
}

http::Awaitable<Result<bool>> Rebalance::remove_elsewhere(const ObjectRef& object) {
  // While objects move any target may hold a copy; otherwise only the object's holders.
  const std::vector<wire::NodeInfo> candidates = peers_.candidates_of(object);
  std::vector<std::function<http::Awaitable<Result<bool>>()>> removals;
  for (const wire::NodeInfo& node : candidates) {
    if (node.id() == peers_.self().id()) continue;
    if (node.state() == wire::NODE_STATE_DOWN) {
      co_return Status::unavailable("target {}, which may hold a copy of {}, is down", node.id(), object.name);
    }
    removals.push_back([this, node, object]() -> http::Awaitable<Result<bool>> {
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest del;
      del.method = http::Method::kDelete;
      del.target = replication::internal_object_target(object);
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

http::Awaitable<void> Rebalance::handle_progress(http::Exchange& exchange) {
  wire::RebalanceProgress p;
  {
    MutexLock lock(mutex_);
    if (walk_) {
      p.set_rebalance_id(walk_->rebalance_id);
      p.set_phase(walk_->phase);
      p.set_finished(walk_->finished);
      p.set_failed(walk_->failed);
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

}  // namespace silo::rebalance
