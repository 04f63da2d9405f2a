// Capacity of a node's mountpaths (docs/remote-buckets.md "Capacity"): past the high
// watermark the cached objects of remote buckets are evicted, least recently used first,
// down to the low watermark; local buckets' objects are never evicted; past out-of-space,
// writes of new objects are refused with 507 InsufficientStorage before they fill the disk.
#include <algorithm>

#include "base/log.h"
#include "cache/cache.h"
#include "async/sleep.h"

namespace silo::cache {
namespace {

constexpr size_t kEvictBatch = 2;  // objects removed between two looks at the mountpaths
constexpr size_t kListPage = 1000;

struct Candidate {
  int64_t atime = 0;
  ObjectRef object;
};

}  // namespace

double Cache::fullest_mountpath_percent() const {
  if (options_.fullest_mountpath_percent) return options_.fullest_mountpath_percent();
  double worst = 0;
  for (const auto& m : store_.mountpaths()) {
    if (m.state != store::MountpathState::kInService || m.capacity_bytes == 0) continue;
    const uint64_t used = m.capacity_bytes - std::min(m.available_bytes, m.capacity_bytes);
    worst = std::max(worst, 100.0 * static_cast<double>(used) / static_cast<double>(m.capacity_bytes));
  }
  return worst;
}

Status Cache::check_space() const {
  // The watcher's word, and a look of our own: on a busy machine the watcher may run late,
  // and a new object must be refused before the drive is full, not fail with ENOSPC in
  // the middle of its bytes (a statvfs per mountpath: microseconds beside a write).
  if (!is_out_of_space_ && fullest_mountpath_percent() < live_config()->cache.oos_wm) return Status::ok();
  return Status::resource_exhausted("target {} is out of space (a mountpath is past {}% full); free space or add "
                                    "mountpaths",
                                    options_.node_id, live_config()->cache.oos_wm)
      .with_reason("InsufficientStorage");
}

http::Awaitable<Status> Cache::make_room() {
  if (check_space().is_ok()) co_return Status::ok();
  // Past out-of-space, but cached objects may be evictable now (the watcher has not
  // looked yet): a cache does not refuse a fill it can make room for.
  std::ignore = co_await evict_lru();  // how many is logged by the watcher's next round
  co_return check_space();
}

http::Awaitable<void> Cache::watch_space() {
  std::unique_ptr<boost::asio::steady_timer> timer;
  while (!is_stopping_) {
    // Each round reads the watermarks and interval anew: they may change at run time.
    const std::chrono::milliseconds interval = live_config()->cache.space_check_interval;
    co_await async::pause(timer, interval);
    if (is_stopping_) break;
    const auto snapshot = live_config();
    const config::CacheConfig& cache = snapshot->cache;
    double worst = fullest_mountpath_percent();
    if (worst >= cache.high_wm) {
      const uint64_t evicted = co_await evict_lru();
      const double after = fullest_mountpath_percent();
      SILO_LOG_INFO("space: the fullest mountpath was {:.1f}% full (high watermark {}%): {} cached objects evicted, "
                    "now {:.1f}%",
                    worst, cache.high_wm, evicted, after);
      worst = after;
    }
    const bool is_full = worst >= cache.oos_wm;
    if (is_full != is_out_of_space_.exchange(is_full)) {
      SILO_LOG_WARN("space: the fullest mountpath is {:.1f}% full: {}", worst,
                    is_full ? "new objects are refused" : "new objects are taken again");
    }
  }
}

http::Awaitable<uint64_t> Cache::evict_lru() {
  // Every cached object of every remote bucket here, by last access: a read since start,
  // else when it was fetched or written.
  std::vector<Candidate> candidates;
  for (const auto& bucket : maps_.bucket_map()->buckets()) {
    if (!wire::is_remote(bucket.props())) continue;
    const BucketId id(bucket.id());
    store::ListOptions options;
    options.limit = kListPage;
    for (;;) {
      auto page = co_await store_.list(id, options);
      if (!page) {
        SILO_LOG_WARN("space: listing bucket {}: {}", bucket.name(), page.error());
        break;
      }
      for (const auto& entry : page->entries) candidates.push_back({entry.mtime_unix_nanos(), {id, entry.name()}});
      if (!page->is_truncated || page->entries.empty()) break;
      options.start_after = page->entries.back().name();
    }
  }
  {
    MutexLock lock(atimes_mutex_);
    for (auto& c : candidates) {
      const auto it = atimes_.find(key_of(c.object));
      if (it != atimes_.end()) c.atime = std::max(c.atime, it->second);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.atime < b.atime; });
  uint64_t evicted = 0;
  for (size_t i = 0; i < candidates.size() && !is_stopping_;) {
    if (fullest_mountpath_percent() < live_config()->cache.low_wm) break;
    for (const size_t end = std::min(candidates.size(), i + kEvictBatch); i < end; ++i) {
      const Status removed = co_await store_.remove(candidates[i].object);
      if (removed.is_ok()) ++evicted;
      MutexLock lock(atimes_mutex_);
      atimes_.erase(key_of(candidates[i].object));
    }
  }
  evictions_.add(evicted);
  co_return evicted;
}

}  // namespace silo::cache
