// A target's part of a scrub job (docs/data-protection.md "Scrub"): every copy here (of
// one bucket or all) is read and checked against its XXH3 at a bounded rate; a corrupt
// copy is replaced by a good one from another holder; the first holder that is up gives
// holders that lack their copy one.
#include "scrub/scrub.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <vector>

#include "async/sleep.h"
#include "base/clock.h"
#include "base/log.h"
#include "cluster/task_failures.h"
#include "store/block_sums.h"

namespace silo::scrub {
namespace {

namespace asio = boost::asio;

constexpr size_t kScrubPage = 1000;
constexpr size_t kMaxTasksKept = 16;

// Whether the record of a good copy should get `sums` (it was written before block sums,
// or the ones it has are wrong). A slice keeps none; nor does an object over kMaxBlocks.
bool needs_block_sums(const wire::ObjectRecord& record, const store::FileSums& sums) {
  if (record.has_ec() || (sums.blocks.empty() && record.size() > 0)) return false;
  if (record.block_size() != sums.block_size ||
      static_cast<size_t>(record.block_xxh3_size()) != sums.blocks.size()) {
    return true;
  }
  return !std::equal(sums.blocks.begin(), sums.blocks.end(), record.block_xxh3().begin());
}

}  // namespace

struct Scrub::Task {
  std::string id;
  std::optional<wire::Bucket> bucket;  // only this bucket; all when unset
  uint64_t rate_bytes = 0;            // bytes checked per second at most; 0: no bound
  std::atomic<bool> cancelled{false};
  std::atomic<bool> finished{false};
  std::atomic<uint64_t> scanned{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> corrupt{0};
  std::atomic<uint64_t> repaired{0};
  std::atomic<uint64_t> restored{0};
  std::atomic<uint64_t> sums_added{0};  // records given block sums
  std::atomic<uint64_t> total{0};
  int64_t started_unix_nanos = 0;
  std::atomic<int64_t> finished_unix_nanos{0};
  cluster::TaskFailures failures;
  std::unique_ptr<asio::steady_timer> timer;
};

bool Scrub::start(const asio::any_io_executor& executor, std::string id, wire::JobRequest request,
                  std::optional<wire::Bucket> bucket) {
  auto task = std::make_shared<Task>();
  task->id = id;
  task->bucket = std::move(bucket);
  task->rate_bytes = request.rate_bytes;
  task->started_unix_nanos = Clock::real().unix_nanos();
  task->total = store_.object_count_estimate();
  {
    MutexLock lock(mutex_);
    if (tasks_.contains(id)) return false;
    tasks_[id] = task;
    // The oldest finished ones go: the primary keeps the job's figures.
    for (auto it = tasks_.begin(); tasks_.size() > kMaxTasksKept && it != tasks_.end();) {
      it = it->second->finished ? tasks_.erase(it) : std::next(it);
    }
  }
  asio::co_spawn(executor, run(task), asio::detached);
  return true;
}

std::optional<wire::RebalanceProgress> Scrub::progress(const std::string& id) {
  std::shared_ptr<Task> task;
  {
    MutexLock lock(mutex_);
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return std::nullopt;
    task = it->second;
  }
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
  return p;
}

bool Scrub::stop(const std::string& id) {
  MutexLock lock(mutex_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return false;
  it->second->cancelled = true;
  async::cancel(it->second->timer);
  return true;
}

http::Awaitable<void> Scrub::run(std::shared_ptr<Task> task) {
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
    if (!peers_.bucket_by_id(bucket.value())) continue;  // deleted: the target's collector removes it
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
        const Status s = co_await check_object(*task, object);
        if (!s.is_ok()) task->failures.fail(s);
        // The bound on the rate: never ahead of rate_bytes per second since the start. A
        // stop asked for while this object was checked (no pause to cancel then) ends the
        // task now, not after the pause.
        if (task->rate_bytes > 0 && !task->cancelled && !is_stopping_) {
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
  SILO_LOG_INFO(
      "{} {}: {} objects, {} bytes checked; {} corrupt, {} repaired, {} copies restored, {} given block sums, {} "
      "errors",
      task->id, task->cancelled ? "stopped" : "finished", task->scanned.load(), task->bytes.load(),
      task->corrupt.load(), task->repaired.load(), task->restored.load(), task->sums_added.load(),
      task->failures.count());
}

http::Awaitable<Status> Scrub::check_object(Task& task, const ObjectRef& object) {
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() == Code::kNotFound) co_return Status::ok();  // deleted meanwhile
  if (!opened && opened.error().code() == Code::kDataLoss) {
    co_return co_await restore_lost(task, object, std::move(opened).error());
  }
  if (!opened) co_return std::move(opened).error();
  const wire::ObjectRecord& record = opened->record();
  // One read gives the whole XXH3 and the block sums (store/block_sums.h).
  Result<store::FileSums> sums = co_await replication_.sums_of(*opened);
  task.bytes += record.size();
  if (!sums || sums->xxh3 != record.xxh3()) {
    SILO_LOG_ERROR("{}: corrupt copy of {} (generation {}) on {}: {}", task.id, object.name, record.generation(),
                   peers_.self().id(), sums ? "XXH3 mismatch" : sums.error().to_string());
    co_return co_await repair_corrupt(task, object, record);
  }
  if (needs_block_sums(record, *sums)) {
    // A good copy written before block sums gets them, so reads check only what they send.
    const uint64_t generation = record.generation();
    const uint64_t block_size = sums->block_size;
    std::vector<uint64_t> blocks = std::move(sums->blocks);
    const Status kept = co_await store_.set_block_sums(object, generation, block_size, std::move(blocks));
    if (kept.is_ok()) {
      ++task.sums_added;
    } else if (kept.code() != Code::kAborted && kept.code() != Code::kNotFound) {
      SILO_LOG_WARN("{}: {}", task.id, kept);  // rewritten or deleted meanwhile: nothing to do
    }
  }
  // The first holder that is up makes sure the others have their copy (slices: the first
  // holder with a slice, that every slice exists).
  if (record.has_ec()) {
    CO_ASSIGN_OR_RETURN(const bool rebuilt, co_await erasure_.restore_slices(object, record));
    if (rebuilt) ++task.restored;
    co_return Status::ok();
  }
  const std::vector<wire::NodeInfo> copy_holders = peers_.copy_holders(object);
  const auto first_up = std::find_if(copy_holders.begin(), copy_holders.end(),
                                     [](const wire::NodeInfo& n) { return n.state() != wire::NODE_STATE_DOWN; });
  if (first_up == copy_holders.end() || !peers_.is_self(*first_up)) co_return Status::ok();
  for (const wire::NodeInfo& holder : copy_holders) {
    if (peers_.is_self(holder)) continue;
    CO_ASSIGN_OR_RETURN(const bool sent, co_await replication_.ensure_copy(holder, object, *opened));
    if (!sent) continue;
    ++task.restored;
    replication_.note_copy_made();
  }
  co_return Status::ok();
}

http::Awaitable<Status> Scrub::restore_lost(Task& task, const ObjectRef& object, Status lost) {
  // The record names a file that is gone: a slice is rebuilt from the others, a copy
  // fetched from another holder.
  auto record = co_await store_.stat(object);
  if (!record || (!record->has_ec() && peers_.holders_of(object).size() < 2)) co_return lost;
  if (record->has_ec()) {
    CO_ASSIGN_OR_RETURN(const size_t rebuilt, co_await erasure_.rebuild_slices(object, {}));
    if (rebuilt > 0) ++task.restored;
    co_return Status::ok();
  }
  const uint64_t lost_generation = record->generation();
  CO_RETURN_IF_ERROR(co_await replication_.pull_copy(object, lost_generation));
  // Counted only when a good copy is here now (pull_copy finds none on a lone copy).
  const std::optional<replication::Replication::BrokenCopy> still = co_await replication_.broken_copy(object);
  if (still) co_return Status::data_loss("{}: no good copy of the lost file was found", object.name);
  ++task.restored;
  co_return Status::ok();
}

http::Awaitable<Status> Scrub::repair_corrupt(Task& task, const ObjectRef& object, const wire::ObjectRecord& record) {
  ++task.corrupt;
  replication_.note_corrupt();
  if (record.has_ec()) {
    // Rebuilds the one here too (and counts it in silo_target_corrupt_copies_repaired_total),
    // named unreadable: a bucket that does not verify reads would otherwise take it as good
    // and rebuild nothing (issue #23 F1).
    std::vector<uint32_t> corrupt_slice = {record.ec().index()};
    CO_ASSIGN_OR_RETURN(const size_t rebuilt, co_await erasure_.rebuild_slices(object, std::move(corrupt_slice)));
    if (rebuilt > 0) ++task.repaired;
    co_return Status::ok();
  }
  if (peers_.holders_of(object).size() < 2 && !peers_.is_rebalancing()) {
    co_return Status::data_loss("{}: the only copy is corrupt", object.name);
  }
  const uint64_t bad_generation = record.generation();
  CO_RETURN_IF_ERROR(co_await replication_.pull_copy(object, bad_generation));
  ++task.repaired;
  replication_.note_repaired();
  co_return Status::ok();
}

}  // namespace silo::scrub
