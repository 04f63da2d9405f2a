// A node's part of a prefetch job (docs/remote-buckets.md "Prefetch"): the names come from
// the job (a list, a brace template) or from the backend's listing of a prefix; this node
// fetches those it owns, a number of workers at a time, through the same single-flight
// fetches as cold GETs. An object cached with the backend's current ETag is skipped, so a
// job that failed for some objects can simply run again.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "async/gather.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mutex.h"
#include "cache/cache.h"
#include "cluster/task_failures.h"

namespace silo::cache {
namespace {

constexpr size_t kListPage = 1000;
constexpr size_t kMaxTasksKept = 16;

}  // namespace

// One prefetch task: its request and progress. Shared by the task table, the task's
// coroutine and its workers.
struct Cache::PrefetchTask {
  std::string id;
  wire::JobRequest request;
  std::optional<wire::Bucket> bucket;
  std::atomic<bool> is_cancelled{false};
  std::atomic<bool> is_finished{false};
  std::atomic<uint64_t> done{0};  // fetched, skipped or failed
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> fetched{0};
  std::atomic<uint64_t> skipped{0};  // cached and unchanged
  std::atomic<uint64_t> bytes{0};
  int64_t started_unix_nanos = 0;
  std::atomic<int64_t> finished_unix_nanos{0};
  cluster::TaskFailures failures;
};

struct Cache::PrefetchItem {
  std::string name;
  std::optional<std::string> etag;  // the backend's, when a listing told it
};

bool Cache::start_prefetch(const boost::asio::any_io_executor& executor, std::string id, wire::JobRequest request,
                           std::optional<wire::Bucket> bucket) {
  auto task = std::make_shared<PrefetchTask>();
  task->id = id;
  task->request = std::move(request);
  task->bucket = std::move(bucket);
  task->started_unix_nanos = Clock::real().unix_nanos();
  {
    MutexLock lock(tasks_mutex_);
    if (tasks_.contains(id)) return false;
    tasks_[id] = task;
    // The oldest finished ones go: the primary keeps the job's figures.
    for (auto it = tasks_.begin(); tasks_.size() > kMaxTasksKept && it != tasks_.end();) {
      it = it->second->is_finished ? tasks_.erase(it) : std::next(it);
    }
  }
  boost::asio::co_spawn(executor, run_prefetch(std::move(task)), boost::asio::detached);
  return true;
}

std::optional<wire::RebalanceProgress> Cache::prefetch_progress(const std::string& id) {
  std::shared_ptr<PrefetchTask> task;
  {
    MutexLock lock(tasks_mutex_);
    if (auto it = tasks_.find(id); it != tasks_.end()) task = it->second;
  }
  if (!task) return std::nullopt;
  wire::RebalanceProgress p;
  p.set_finished(task->is_finished);
  p.set_objects_scanned(task->done);
  p.set_objects_total(task->total);
  p.set_objects_moved(task->fetched);
  p.set_bytes_moved(task->bytes);
  p.set_started_unix_nanos(task->started_unix_nanos);
  p.set_finished_unix_nanos(task->finished_unix_nanos);
  p.set_objects_skipped(task->skipped);
  task->failures.report(p);
  return p;
}

bool Cache::stop_prefetch(const std::string& id) {
  MutexLock lock(tasks_mutex_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return false;
  it->second->is_cancelled = true;
  return true;
}

bool Cache::owns(const ObjectRef& object) const {
  const auto placement = maps_.placement();
  return !placement->empty() && placement->owner(object).id() == options_.node_id;
}

http::Awaitable<void> Cache::run_prefetch(std::shared_ptr<PrefetchTask> task) {
  const wire::JobRequest& request = task->request;
  SILO_LOG_INFO("{} starts (bucket {})", task->id, request.bucket);
  auto backend = task->bucket ? backend_of(*task->bucket) : Status::invalid_argument("a prefetch needs a bucket");
  if (!backend) {
    task->failures.fail(backend.error());
  } else if (request.selection.lists_names()) {
    auto names = wire::selected_names(request.selection);
    std::vector<PrefetchItem> items;
    if (names) {
      for (auto& name : *names) items.push_back({std::move(name), std::nullopt});
    } else {
      task->failures.fail(names.error());
    }
    co_await prefetch_batch(*task, items);
  } else {
    // The backend's listing of the prefix, a page at a time.
    std::string after;
    while (!task->is_cancelled && !is_stopping_) {
      auto page = co_await (*backend)->list(request.selection.prefix, after, kListPage);
      if (!page) {
        task->failures.fail(page.error());
        break;
      }
      std::vector<PrefetchItem> items;
      for (auto& o : page->objects) items.push_back({std::move(o.name), std::move(o.etag)});
      co_await prefetch_batch(*task, items);
      if (page->next_token.empty()) break;
      after = page->next_token;
    }
  }
  task->finished_unix_nanos = Clock::real().unix_nanos();
  task->is_finished = true;
  SILO_LOG_INFO("{} {}: {} objects fetched ({} bytes), {} cached already, {} failed", task->id,
                task->is_cancelled ? "stopped" : "finished", task->fetched.load(), task->bytes.load(),
                task->skipped.load(), task->failures.count());
}

http::Awaitable<void> Cache::prefetch_batch(PrefetchTask& task, const std::vector<PrefetchItem>& items) {
  const BucketId id(task.bucket->id());
  std::vector<const PrefetchItem*> mine;
  for (const auto& item : items) {
    if (owns(ObjectRef{id, item.name})) mine.push_back(&item);
  }
  task.total += mine.size();
  std::atomic<size_t> next{0};
  const size_t workers = task.request.workers > 0 ? task.request.workers : live_config()->cache.prefetch_workers;
  std::vector<async::Task<Status>> runs;
  for (size_t w = 0; w < std::min(workers, mine.size()); ++w) {
    runs.push_back([this, &task, &mine, &next]() -> http::Awaitable<Status> {
      for (size_t i = next++; i < mine.size() && !task.is_cancelled && !is_stopping_; i = next++) {
        const PrefetchItem& item = *mine[i];
        const Status s = co_await prefetch_one(task, item);
        if (!s.is_ok()) task.failures.fail_object(item.name, s);
        ++task.done;
      }
      co_return Status::ok();
    });
  }
  std::ignore = co_await async::gather<Status>(std::move(runs));
}

http::Awaitable<Status> Cache::prefetch_one(PrefetchTask& task, const PrefetchItem& item) {
  const wire::Bucket& bucket = *task.bucket;
  const ObjectRef object{BucketId(bucket.id()), item.name};
  auto cached = co_await store_.stat(object);
  if (cached) {
    std::string etag;
    if (item.etag) {
      etag = *item.etag;
    } else {
      CO_ASSIGN_OR_RETURN(auto backend, backend_of(bucket));
      CO_ASSIGN_OR_RETURN(const backend::RemoteObject remote, co_await backend->head(item.name));
      etag = remote.etag;
    }
    if (cached->remote().etag() == etag) {
      ++task.skipped;
      co_return Status::ok();
    }
  }
  CO_ASSIGN_OR_RETURN(const ColdRead cold, co_await fetch(bucket, object));
  CO_ASSIGN_OR_RETURN(const uint64_t bytes, co_await wait_fetched(*cold.fetch));
  ++task.fetched;
  task.bytes += bytes;
  co_return Status::ok();
}

}  // namespace silo::cache
