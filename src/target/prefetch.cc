// A target's part of a prefetch job (docs/remote-buckets.md "Prefetch"): the names come
// from the job (a list, a brace template) or from the backend's listing of a prefix; this
// target fetches those it owns, a number of workers at a time, through the same
// single-flight fetches as cold GETs. An object cached with the backend's current ETag
// is skipped, so a job that failed for some objects can simply run again.
#include "base/clock.h"
#include "base/log.h"
#include "cluster/gather.h"
#include "target/detail/task.h"
#include "target/target.h"

namespace silo::target {
namespace {

constexpr size_t kListPage = 1000;

}  // namespace

http::Awaitable<void> Target::run_prefetch(std::shared_ptr<Task> task) {
  const wire::JobRequest& request = task->request;
  SILO_LOG_INFO("{} starts (bucket {})", task->id, request.bucket);
  auto backend = task->bucket ? backend_of(*task->bucket) : Status::invalid_argument("a prefetch needs a bucket");
  if (!backend) {
    task->fail(backend.error());
  } else if (request.selection.lists_names()) {
    auto names = wire::selected_names(request.selection);
    std::vector<PrefetchItem> items;
    if (names) {
      for (auto& name : *names) items.push_back({std::move(name), std::nullopt});
    } else {
      task->fail(names.error());
    }
    co_await prefetch_batch(*task, items);
  } else {
    // The backend's listing of the prefix, a page at a time.
    std::string after;
    while (!task->cancelled && !is_stopping_) {
      auto page = co_await (*backend)->list(request.selection.prefix, after, kListPage);
      if (!page) {
        task->fail(page.error());
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
  task->finished = true;
  SILO_LOG_INFO("{} {}: {} objects fetched ({} bytes), {} cached already, {} failed", task->id,
                task->cancelled ? "stopped" : "finished", task->fetched.load(), task->bytes.load(),
                task->skipped.load(), task->errors.load());
}

http::Awaitable<void> Target::prefetch_batch(Task& task, const std::vector<PrefetchItem>& items) {
  std::vector<const PrefetchItem*> mine;
  for (const auto& item : items) {
    auto r = placed(*task.bucket, item.name);
    if (r && r->is_local) mine.push_back(&item);
  }
  task.total += mine.size();
  std::atomic<size_t> next{0};
  const size_t workers = task.request.workers > 0 ? task.request.workers : live_config()->cache.prefetch_workers;
  std::vector<cluster::Task<Status>> runs;
  for (size_t w = 0; w < std::min(workers, mine.size()); ++w) {
    runs.push_back([this, &task, &mine, &next]() -> http::Awaitable<Status> {
      for (size_t i = next++; i < mine.size() && !task.cancelled && !is_stopping_; i = next++) {
        const PrefetchItem& item = *mine[i];
        const Status s = co_await prefetch_one(task, item);
        if (!s.is_ok()) task.fail_object(item.name, s);
        ++task.scanned;
      }
      co_return Status::ok();
    });
  }
  std::ignore = co_await cluster::gather<Status>(std::move(runs));
}

http::Awaitable<Status> Target::prefetch_one(Task& task, const PrefetchItem& item) {
  CO_ASSIGN_OR_RETURN(const Resolved r, placed(*task.bucket, item.name));
  auto cached = co_await store_.stat(r.object);
  if (cached) {
    std::string etag;
    if (item.etag) {
      etag = *item.etag;
    } else {
      CO_ASSIGN_OR_RETURN(auto backend, backend_of(r.bucket));
      CO_ASSIGN_OR_RETURN(const backend::RemoteObject remote, co_await backend->head(item.name));
      etag = remote.etag;
    }
    if (cached->remote().etag() == etag) {
      ++task.skipped;
      co_return Status::ok();
    }
  }
  CO_ASSIGN_OR_RETURN(std::shared_ptr<Fetch> fetch, co_await join_fetch(r));
  CO_ASSIGN_OR_RETURN(const uint64_t bytes, co_await wait_fetched(*fetch));
  ++task.fetched;
  task.bytes += bytes;
  co_return Status::ok();
}

}  // namespace silo::target
