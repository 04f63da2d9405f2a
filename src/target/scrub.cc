// A target's part of a scrub job (docs/data-protection.md "Scrub"): every copy here (of
// one bucket or all) is read and checked against its XXH3 at a bounded rate; a corrupt
// copy is replaced by a good one from another holder; the first holder that is up gives
// holders that lack their copy one.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <charconv>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "http/reply.h"
#include "async/sleep.h"
#include "target/detail/task.h"
#include "target/target.h"

namespace silo::target {
namespace {

namespace asio = boost::asio;

constexpr size_t kScrubPage = 1000;
constexpr size_t kMaxTasksKept = 16;
constexpr size_t kMaxTaskBody = 1 << 20;

}  // namespace

http::Awaitable<Result<Target::TaskStart>> Target::read_task_start(http::Exchange& exchange,
                                                                   const std::string& id) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxTaskBody));
  TaskStart start;
  CO_ASSIGN_OR_RETURN(start.request, wire::parse_job_request_json(body));
  if (!id.starts_with(start.request.kind + "-")) {
    co_return Status::invalid_argument("task {} is not of kind {}", id, start.request.kind);
  }
  if (!start.request.bucket.empty()) {
    CO_ASSIGN_OR_RETURN(start.bucket, co_await find_bucket(start.request.bucket));
  }
  co_return start;
}

http::Awaitable<void> Target::handle_task(http::Exchange& exchange, std::string id) {
  if (id.starts_with("prefetch-")) {
    // Prefetch tasks are the cache's (remote.cc).
    co_await handle_prefetch_task(exchange, id);
    co_return;
  }
  const http::RequestHead& request = exchange.request();
  std::shared_ptr<Task> task;
  {
    MutexLock lock(tasks_mutex_);
    if (auto it = tasks_.find(id); it != tasks_.end()) task = it->second;
  }
  Status s;
  if (request.method == http::Method::kPost) {
    auto start = co_await read_task_start(exchange, id);
    if (!start) {
      s = std::move(start).error();
    } else if (task) {
      co_await http::send_json(exchange, 200, R"({"started":false})");  // a retried start
      co_return;
    } else {
      task = std::make_shared<Task>();
      task->id = id;
      task->request = std::move(start->request);
      task->bucket = std::move(start->bucket);
      task->rate_bytes = task->request.rate_bytes;
      task->started_unix_nanos = Clock::real().unix_nanos();
      task->total = task->request.kind == "scrub" ? store_.object_count_estimate() : 0;
      if (s.is_ok()) {
        {
          MutexLock lock(tasks_mutex_);
          tasks_[id] = task;
          // The oldest finished ones go: the primary keeps the job's figures.
          for (auto it = tasks_.begin(); tasks_.size() > kMaxTasksKept && it != tasks_.end();) {
            it = it->second->finished ? tasks_.erase(it) : std::next(it);
          }
        }
        const auto executor = co_await asio::this_coro::executor;
        asio::co_spawn(executor, run_scrub(task), asio::detached);
        co_await http::send_json(exchange, 200, R"({"started":true})");
        co_return;
      }
    }
  } else if (!task) {
    s = Status::not_found("no task {} here", id);
  } else if (request.method == http::Method::kGet) {
    wire::RebalanceProgress p;
    p.set_finished(task->finished);
    p.set_objects_scanned(task->scanned);
    p.set_objects_total(task->total);
    p.set_objects_moved(task->repaired + task->restored);
    p.set_bytes_moved(task->bytes);
    p.set_started_unix_nanos(task->started_unix_nanos);
    p.set_finished_unix_nanos(task->finished_unix_nanos);
    p.set_corrupt_found(task->corrupt);
    p.set_corrupt_repaired(task->repaired);
    p.set_copies_restored(task->restored);
    task->failures.report(p);
    http::ResponseHead head;
    head.headers.set("Content-Type", "application/x-protobuf");
    std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(p)));
    co_return;
  } else if (request.method == http::Method::kDelete) {
    task->cancelled = true;
    async::cancel(task->timer);
    http::ResponseHead head;
    head.status = 204;
    std::ignore = co_await exchange.response().send(std::move(head), "");
    co_return;
  } else {
    s = Status::invalid_argument("{} is not supported on a task", request.method_text);
  }
  co_await http::send_error(exchange, s);
}

http::Awaitable<void> Target::run_scrub(std::shared_ptr<Task> task) {
  SILO_LOG_INFO("{} starts over ~{} objects", task->id, task->total.load());
  const auto started = std::chrono::steady_clock::now();
  auto listed = co_await store_.bucket_ids();
  std::vector<BucketId> buckets;
  if (listed) {
    buckets = std::move(*listed);
  } else {
    task->failures.fail(listed.error());
  }
  for (const BucketId bucket : buckets) {
    if (task->bucket && task->bucket->id() != bucket.value()) continue;
    if (!bucket_by_id(bucket.value())) continue;  // deleted: collect_deleted_buckets removes it
    store::ListOptions options;
    options.limit = kScrubPage;
    while (!task->cancelled && !is_stopping_) {
      auto page = co_await store_.list(bucket, options);
      if (!page) {
        task->failures.fail(page.error());
        break;
      }
      for (const auto& entry : page->entries) {
        if (task->cancelled || is_stopping_) break;
        ++task->scanned;
        const ObjectRef object{bucket, entry.name()};  // named: no temporary beside co_await (adr/0003)
        const Status s = co_await scrub_object(*task, object);
        if (!s.is_ok()) task->failures.fail(s);
        // The bound on the rate: never ahead of rate_bytes per second since the start.
        if (task->rate_bytes > 0) {
          const auto due = started + std::chrono::microseconds(task->bytes * 1000000 / task->rate_bytes);
          const auto now = std::chrono::steady_clock::now();
          if (due > now) {
            co_await async::pause(task->timer, std::chrono::duration_cast<std::chrono::milliseconds>(due - now));
          }
        }
      }
      if (!page->is_truncated || page->entries.empty()) break;
      options.start_after = page->entries.back().name();
    }
  }
  task->finished_unix_nanos = Clock::real().unix_nanos();
  task->finished = true;
  SILO_LOG_INFO("{} {}: {} objects, {} bytes checked; {} corrupt, {} repaired, {} copies restored, {} errors",
                task->id, task->cancelled ? "stopped" : "finished", task->scanned.load(), task->bytes.load(),
                task->corrupt.load(), task->repaired.load(), task->restored.load(), task->failures.count());
}

http::Awaitable<Status> Target::scrub_object(Task& task, const ObjectRef& object) {
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() == Code::kNotFound) co_return Status::ok();  // deleted meanwhile
  if (!opened && opened.error().code() == Code::kDataLoss) {
    // The record names a file that is gone: a slice is rebuilt from the others, a copy
    // fetched from another holder.
    auto record = co_await store_.stat(object);
    if (!record || (!record->has_ec() && holders_of(object).size() < 2)) co_return std::move(opened).error();
    if (record->has_ec()) {
      CO_ASSIGN_OR_RETURN(const size_t rebuilt, co_await rebuild_slices(object, {}));
      if (rebuilt > 0) ++task.restored;
      co_return Status::ok();
    }
    const uint64_t lost_generation = record->generation();
    CO_RETURN_IF_ERROR(co_await pull_copy(object, lost_generation));
    // Counted only when a good copy is here now (pull_copy finds none on a lone copy).
    const std::optional<BrokenCopy> still = co_await broken_copy(object);
    if (still) co_return Status::data_loss("{}: no good copy of the lost file was found", object.name);
    ++task.restored;
    co_return Status::ok();
  }
  if (!opened) co_return std::move(opened).error();
  const wire::ObjectRecord& record = opened->record();
  const Result<uint64_t> xxh3 = co_await xxh3_of(*opened);
  task.bytes += record.size();
  const std::vector<wire::NodeInfo> holders = holders_of(object);
  if (!xxh3 || *xxh3 != record.xxh3()) {
    ++task.corrupt;
    corrupt_found_.add();
    SILO_LOG_ERROR("{}: corrupt copy of {} (generation {}) on {}: {}", task.id, object.name, record.generation(),
                   options_.self.id(), xxh3 ? "XXH3 mismatch" : xxh3.error().to_string());
    if (record.has_ec()) {
      // Rebuilds the one here too (and counts it in silo_target_corrupt_copies_repaired_total).
      CO_ASSIGN_OR_RETURN(const size_t rebuilt, co_await rebuild_slices(object, {}));
      if (rebuilt > 0) ++task.repaired;
      co_return Status::ok();
    } else if (holders.size() < 2 && !is_rebalancing()) {
      co_return Status::data_loss("{}: the only copy is corrupt", object.name);
    } else {
      const uint64_t bad_generation = record.generation();
      CO_RETURN_IF_ERROR(co_await pull_copy(object, bad_generation));
    }
    ++task.repaired;
    corrupt_repaired_.add();
    co_return Status::ok();
  }
  // The first holder that is up makes sure the others have their copy (slices: the first
  // holder with a slice, that every slice exists).
  if (record.has_ec()) {
    CO_ASSIGN_OR_RETURN(const bool rebuilt, co_await restore_slices(object, record));
    if (rebuilt) ++task.restored;
    co_return Status::ok();
  }
  const std::vector<wire::NodeInfo> replicas = replica_holders(object);
  const auto first_up = std::find_if(replicas.begin(), replicas.end(),
                                     [](const wire::NodeInfo& n) { return n.state() != wire::NODE_STATE_DOWN; });
  if (first_up == replicas.end() || first_up->id() != options_.self.id()) co_return Status::ok();
  for (const wire::NodeInfo& holder : replicas) {
    if (holder.id() == options_.self.id()) continue;
    CO_ASSIGN_OR_RETURN(const bool sent, co_await ensure_copy(holder, object, *opened));
    if (!sent) continue;
    ++task.restored;
    copies_made_.add();
  }
  co_return Status::ok();
}

}  // namespace silo::target
