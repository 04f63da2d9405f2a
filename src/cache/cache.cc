// Cold reads with single-flight fetches, revalidation, write-through, deletes at the
// backend and evicts (docs/remote-buckets.md).
#include "cache/cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>

#include "base/clock.h"
#include "base/log.h"
#include "async/gather.h"

namespace silo::cache {
namespace asio = boost::asio;

namespace {

constexpr uint64_t kChunkMemory = 256ull << 20;  // bytes of range-GET chunks in memory at once, per node

// How a cold read describes an object before its bytes are here (and what the cached
// copy's record remembers of the backend).
wire::ObjectRecord record_of(const ObjectRef& object, const backend::RemoteObject& remote) {
  wire::ObjectRecord record;
  record.set_name(object.name);
  record.set_size(remote.size);
  record.set_mtime_unix_nanos(remote.mtime_unix_seconds * 1'000'000'000);
  record.set_content_type(remote.content_type);
  record.mutable_remote()->set_etag(remote.etag);
  record.mutable_remote()->set_mtime_unix_seconds(remote.mtime_unix_seconds);
  return record;
}

// The time one backend operation took, into the cache's counters.
class BackendTimer {
 public:
  BackendTimer(stats::Counter& operations, stats::Counter& nanos)
      : nanos_(nanos), start_(Clock::real().unix_nanos()) {
    operations.add();
  }
  ~BackendTimer() { nanos_.add(static_cast<uint64_t>(Clock::real().unix_nanos() - start_)); }
  BackendTimer(const BackendTimer&) = delete;
  BackendTimer& operator=(const BackendTimer&) = delete;

 private:
  stats::Counter& nanos_;
  int64_t start_;
};

}  // namespace

BackendFinder backends_of(std::shared_ptr<backend::BackendPool> pool) {
  return [pool = std::move(pool)](const wire::Bucket& bucket) -> Result<std::shared_ptr<backend::ObjectBackend>> {
    if (!pool) {
      return Status::failed_precondition("bucket {} is remote but this node has no backends", bucket.name());
    }
    return pool->get(bucket);
  };
}

Cache::Cache(CacheOptions options, const cluster::ClusterMaps& maps, store::Store& store,
             stats::Registry& stats)
    : options_(std::move(options)),
      maps_(maps),
      store_(store),
      // The metric names are the ones the target registered before the cache was a module
      // of its own: dashboards and tests read them.
      hits_(stats.counter("silo_target_cache_hits_total", "GETs of remote buckets' objects served from the cache.")),
      misses_(stats.counter("silo_target_cache_misses_total",
                            "Objects of remote buckets fetched from their backend (cold GETs and prefetch).")),
      backend_bytes_(stats.counter("silo_target_backend_bytes_received_total", "Object bytes fetched from backends.")),
      backend_errors_(stats.counter("silo_target_backend_errors_total", "Backend operations that failed.")),
      backend_operations_(stats.counter("silo_target_backend_operations_total",
                                        "Backend operations (fetch, head, put, delete) started by this target.")),
      backend_nanos_(stats.counter("silo_target_backend_operation_nanoseconds_total",
                                   "Time spent in backend operations (divide by operations for the mean).")),
      evictions_(stats.counter("silo_target_evicted_objects_total",
                               "Cached objects of remote buckets evicted (by request or by the watermarks).")),
      // Shared with the target's GETs (the registry returns the same counter).
      bytes_sent_(stats.counter("silo_target_bytes_sent_total", "Object bytes sent by GETs.")) {}

Cache::~Cache() = default;

Result<std::shared_ptr<backend::ObjectBackend>> Cache::backend_of(const wire::Bucket& bucket) const {
  if (!options_.backend_of) {
    return Status::failed_precondition("bucket {} is remote but this node has no backends", bucket.name());
  }
  return options_.backend_of(bucket);
}

template <typename T>
http::Awaitable<T> Cache::timed(http::Awaitable<T> op) {
  BackendTimer timer(backend_operations_, backend_nanos_);
  co_return co_await std::move(op);
}

void Cache::note_hit(const ObjectRef& object) {
  hits_.add();
  MutexLock lock(atimes_mutex_);
  atimes_[key_of(object)] = Clock::real().unix_nanos();
}

void Cache::note_gone(const ObjectRef& object) {
  evictions_.add();
  MutexLock lock(atimes_mutex_);
  atimes_.erase(key_of(object));
}

http::Awaitable<Result<wire::ObjectRecord>> Cache::describe(const wire::Bucket& bucket, const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(bucket));
  auto remote = co_await timed(backend->head(object.name));
  if (!remote) {
    if (remote.error().code() != Code::kNotFound) backend_errors_.add();
    co_return std::move(remote).error();
  }
  co_return record_of(object, *remote);
}

http::Awaitable<Result<Freshness>> Cache::freshness(const wire::Bucket& bucket, const ObjectRef& object,
                                                    const wire::ObjectRecord& cached) {
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(bucket));
  auto remote = co_await timed(backend->head(object.name));
  if (!remote && remote.error().code() == Code::kNotFound) {
    SILO_LOG_INFO("{} is gone from the backend of bucket {}; dropping the cached copy", object.name, bucket.name());
    co_return Freshness::kGone;
  }
  if (!remote) {
    // The backend can not be asked: the cached copy is served (availability over
    // freshness; docs/remote-buckets.md).
    backend_errors_.add();
    SILO_LOG_WARN("revalidating {} in bucket {}: {}; serving the cached copy", object.name, bucket.name(),
                  remote.error());
    co_return Freshness::kFresh;
  }
  co_return remote->etag != cached.remote().etag() ? Freshness::kStale : Freshness::kFresh;
}

http::Awaitable<Result<ColdRead>> Cache::fetch(const wire::Bucket& bucket, const ObjectRef& object) {
  std::shared_ptr<Fetch> fetch;
  bool is_new = false;
  {
    MutexLock lock(fetches_mutex_);
    auto& slot = fetches_[key_of(object)];
    if (!slot) {
      slot = std::make_shared<Fetch>(bucket, object);
      is_new = true;
    }
    fetch = slot;
  }
  if (is_new) {
    const auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, run_fetch(fetch), asio::detached);
  }
  for (;;) {
    const uint64_t seen = fetch->signal().count();
    Fetch::Progress now = fetch->progress();
    if (now.record) co_return ColdRead{std::move(*now.record), fetch};
    if (now.is_done) co_return now.failure;
    co_await fetch->signal().wait(seen);
  }
}

http::Awaitable<Result<uint64_t>> Cache::wait_fetched(Fetch& fetch) {
  for (;;) {
    const uint64_t seen = fetch.signal().count();
    const Fetch::Progress now = fetch.progress();
    if (now.is_done && !now.failure.is_ok()) co_return now.failure;
    if (now.is_done) co_return now.written;
    co_await fetch.signal().wait(seen);
  }
}

http::Awaitable<std::optional<Fetched>> Cache::next_fetched() {
  for (;;) {
    const uint64_t seen = fetched_signal_.count();
    {
      MutexLock lock(fetched_mutex_);
      if (!fetched_.empty()) {
        Fetched next = std::move(fetched_.front());
        fetched_.pop_front();
        co_return next;
      }
    }
    if (is_stopping_) co_return std::nullopt;
    co_await fetched_signal_.wait(seen);
  }
}

http::Awaitable<void> Cache::run_fetch(std::shared_ptr<Fetch> fetch) {
  misses_.add();
  const ObjectRef& object = fetch->object();
  Status s = co_await timed(fetch_into_store(*fetch));
  if (s.is_ok() && !fetch->progress().record) {
    s = Status::internal("fetch of {} ended without the object", object.name);
  }
  fetch->finish(s);
  {
    MutexLock lock(fetches_mutex_);
    auto it = fetches_.find(key_of(object));
    if (it != fetches_.end() && it->second == fetch) fetches_.erase(it);
  }
  if (!s.is_ok()) {
    if (s.code() != Code::kNotFound) {
      backend_errors_.add();
      SILO_LOG_WARN("fetching {} of bucket {} from {}: {}", object.name, fetch->bucket().name(),
                    wire::backend_url(fetch->bucket().props().backend()), s);
    }
    co_return;
  }
  {
    MutexLock lock(fetched_mutex_);
    fetched_.push_back({fetch->bucket(), object});
  }
  fetched_signal_.notify();
}

http::Awaitable<Status> Cache::fetch_into_store(Fetch& fetch) {
  CO_RETURN_IF_ERROR(co_await make_room());
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(fetch.bucket()));
  store::PutOptions options;
  options.durability = cluster::durability_of(fetch.bucket(), *live_config());
  options.skips_md5 = true;  // the ETag is the backend's; the XXH3 guards the bytes from here on
  options.precondition = [&fetch](const wire::ObjectRecord*) {
    if (!fetch.is_deleted()) return Status::ok();
    return Status::not_found("{} was deleted while being fetched", fetch.object().name).with_reason("NoSuchKey");
  };
  CO_ASSIGN_OR_RETURN(std::unique_ptr<store::ObjectWriter> writer,
                      co_await store_.create(fetch.object(), std::move(options)));
  const Status fetched = co_await fetch_into(fetch, *writer, std::move(backend));
  if (!fetched.is_ok()) co_await writer->discard();  // gone before anyone hears of the failure
  co_return fetched;
}

http::Awaitable<Status> Cache::fetch_into(Fetch& fetch, store::ObjectWriter& out,
                                          std::shared_ptr<backend::ObjectBackend> backend) {
  CO_ASSIGN_OR_RETURN(const int read_fd, out.open_reader());
  fetch.set_read_fd(read_fd);
  const std::string& name = fetch.object().name;
  const backend::Sink sink = [this, &fetch, &out](std::span<const char> bytes) -> http::Awaitable<Status> {
    CO_RETURN_IF_ERROR(co_await out.write(bytes));
    backend_bytes_.add(bytes.size());
    fetch.add_written(bytes.size());
    co_return Status::ok();
  };
  const auto describe_object = [&fetch, &out](const backend::RemoteObject& remote) {
    wire::ObjectRecord record = record_of(fetch.object(), remote);
    out.attributes().set_content_type(record.content_type());
    *out.attributes().mutable_remote() = record.remote();
    fetch.set_record(std::move(record));
  };
  // The first chunk tells the size: a small object is whole after it, a large one comes
  // in chunks of range_get_size, range_get_streams at a time, written in order.
  const auto snapshot = live_config();
  const uint64_t chunk = snapshot->cache.range_get_size;
  backend::GetOptions first{.range = backend::RemoteRange{0, chunk}, .if_match = "", .on_object = describe_object};
  auto got = co_await backend->get(name, first, sink);
  if (!got && got.error().code() == Code::kOutOfRange) {
    // An empty object has no byte 0 to ask for.
    backend::GetOptions whole{.range = std::nullopt, .if_match = "", .on_object = describe_object};
    got = co_await backend->get(name, whole, sink);
  }
  if (!got) co_return std::move(got).error();
  const uint64_t size = got->size;
  CO_RETURN_IF_ERROR(co_await fetch_rest(*backend, name, *got, *snapshot, sink));
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await out.commit());
  if (record.size() != size) {
    co_return Status::data_loss("fetched {} bytes of {}, the backend said {}", record.size(), name, size);
  }
  co_return Status::ok();
}

http::Awaitable<Status> Cache::fetch_rest(backend::ObjectBackend& backend, const std::string& name,
                                          const backend::RemoteObject& first, const config::ClusterConfig& config,
                                          const backend::Sink& sink) {
  const uint64_t size = first.size;
  const std::string& etag = first.etag;
  const uint64_t chunk = config.cache.range_get_size;
  const size_t streams = config.cache.range_get_streams;
  // At least one batch always fits, so a fetch never waits for memory it can not get.
  const size_t budget = std::max<size_t>(streams, kChunkMemory / chunk);
  for (uint64_t at = std::min(size, chunk); at < size;) {
    // One batch: up to `streams` chunks fetched at once (of the version the first chunk
    // came from), then written in order.
    std::vector<backend::RemoteRange> ranges;
    for (size_t i = 0; i < streams && at < size; ++i) {
      const uint64_t n = std::min(chunk, size - at);
      ranges.push_back({at, n});
      at += n;
    }
    co_await chunks_.take(ranges.size(), budget);
    // Given back however this batch ends (named: no temporary beside co_await).
    const auto given_back =
        std::shared_ptr<void>(nullptr, [this, n = ranges.size()](void*) { chunks_.give_back(n); });
    std::vector<std::string> buffers(ranges.size());
    std::vector<async::Task<Status>> tasks;
    for (size_t i = 0; i < ranges.size(); ++i) {
      tasks.push_back([&backend, &name, &etag, &ranges, &buffers, i]() -> http::Awaitable<Status> {
        std::string& buffer = buffers[i];
        buffer.reserve(ranges[i].length);
        const backend::Sink fill = [&buffer](std::span<const char> bytes) -> http::Awaitable<Status> {
          buffer.append(bytes.data(), bytes.size());
          co_return Status::ok();
        };
        const backend::GetOptions ranged{.range = ranges[i], .if_match = etag, .on_object = {}};
        auto part = co_await backend.get(name, ranged, fill);
        if (!part) co_return std::move(part).error();
        co_return Status::ok();
      });
    }
    for (const Status& s : co_await async::gather<Status>(std::move(tasks))) CO_RETURN_IF_ERROR(s);
    for (const std::string& buffer : buffers) {
      const std::span<const char> bytes(buffer.data(), buffer.size());
      CO_RETURN_IF_ERROR(co_await sink(bytes));
    }
  }
  co_return Status::ok();
}

http::Awaitable<Status> Cache::send_fetching(http::Exchange& exchange, Fetch& fetch, http::ResponseHead head,
                                             uint64_t offset, uint64_t length) {
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
  const uint64_t end = offset + length;
  uint64_t at = offset;
  while (at < end) {
    const uint64_t seen = fetch.signal().count();
    const Fetch::Progress now = fetch.progress();
    const uint64_t size = now.record ? now.record->size() : 0;
    // The object's last byte waits for the commit: once an answer that reaches the end is
    // complete, the object is cached (a request right after finds it), and a fetch whose
    // commit fails cuts the answer.
    const bool is_committed = now.is_done && now.failure.is_ok();
    const uint64_t sendable = end == size && !is_committed ? std::min(now.written, end - 1) : now.written;
    if (sendable > at) {
      const uint64_t n = std::min(sendable, end) - at;
      CO_RETURN_IF_ERROR(co_await exchange.response().send_file(fetch.read_fd(), at, n));
      bytes_sent_.add(n);
      at += n;
      continue;
    }
    if (now.is_done) {
      // The fetch failed (nothing of it stays in the store): the client's answer is cut.
      if (!now.failure.is_ok()) co_return now.failure;
      co_return Status::data_loss("the fetch of {} ended at byte {} of {}", fetch.object().name, now.written, end);
    }
    co_await fetch.signal().wait(seen);
  }
  co_return Status::ok();
}

http::Awaitable<Status> Cache::write_through(const wire::Bucket& bucket, const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(bucket));
  CO_ASSIGN_OR_RETURN(store::OpenObject opened, co_await store_.open(object));
  const int fd = opened.fd();
  const backend::Source source = [this, fd](uint64_t offset, std::span<char> out) -> http::Awaitable<Result<size_t>> {
    co_return co_await reader_.run([fd, offset, out]() -> Result<size_t> {
      const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
      if (n < 0) return Status::from_errno(errno, "pread");
      return static_cast<size_t>(n);
    });
  };
  auto put = co_await timed(backend->put(object.name, opened.record().size(), source));
  if (!put) {
    // Not at the backend: the write did not happen (the copy here is taken back).
    backend_errors_.add();
    const Status undone = co_await store_.remove_generation(object, opened.record().generation());
    if (!undone.is_ok() && undone.code() != Code::kFailedPrecondition) {
      SILO_LOG_WARN("taking back {} after the backend refused it: {}", object.name, undone);
    }
    co_return Status::unavailable("writing {} through to {}: {}", object.name,
                                  wire::backend_url(bucket.props().backend()), put.error().message());
  }
  const backend::RemoteObject remote = *put;
  const auto remember = [&remote](wire::ObjectRecord& record) {
    record.mutable_remote()->set_etag(remote.etag);
    record.mutable_remote()->set_mtime_unix_seconds(remote.mtime_unix_seconds > 0
                                                        ? remote.mtime_unix_seconds
                                                        : record.mtime_unix_nanos() / 1'000'000'000);
    return Status::ok();
  };
  const store::Durability durability = cluster::durability_of(bucket, *live_config());
  CO_RETURN_IF_ERROR((co_await store_.update(object, remember, durability)).status());
  co_return Status::ok();
}

http::Awaitable<Status> Cache::remove_at_backend(const wire::Bucket& bucket, const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(bucket));
  const Status removed = co_await timed(backend->remove(object.name));
  if (!removed.is_ok()) {
    backend_errors_.add();
    co_return removed;
  }
  // A fetch of the object in flight must not cache it behind this delete: marked before
  // the caller removes the copies, its commit either came first (and is removed then) or
  // is refused.
  MutexLock lock(fetches_mutex_);
  if (auto it = fetches_.find(key_of(object)); it != fetches_.end()) it->second->mark_deleted();
  co_return Status::ok();
}

http::Awaitable<Result<uint64_t>> Cache::evict(const wire::Bucket& bucket, const wire::ObjectSelection& selection) {
  const BucketId id(bucket.id());
  uint64_t count = 0;
  // Every piece here goes (copies and slices alike): the backend keeps the object.
  const auto drop = [this, &count](const ObjectRef& object) -> http::Awaitable<Status> {
    const Status removed = co_await store_.remove(object);
    if (removed.is_ok()) ++count;
    if (!removed.is_ok() && removed.code() != Code::kNotFound) co_return removed;
    co_return Status::ok();
  };
  if (selection.lists_names()) {
    CO_ASSIGN_OR_RETURN(const std::vector<std::string> names, wire::selected_names(selection));
    for (const auto& name : names) {
      const ObjectRef object{id, name};
      CO_RETURN_IF_ERROR(co_await drop(object));
    }
  } else {
    store::ListOptions options;
    options.prefix = selection.prefix;
    for (;;) {
      CO_ASSIGN_OR_RETURN(const store::ListResult page, co_await store_.list(id, options));
      for (const auto& entry : page.entries) {
        const ObjectRef object{id, entry.name()};
        CO_RETURN_IF_ERROR(co_await drop(object));
      }
      if (!page.is_truncated || page.entries.empty()) break;
      options.start_after = page.entries.back().name();
    }
  }
  evictions_.add(count);
  if (count > 0) SILO_LOG_INFO("evicted {} objects of bucket {}", count, bucket.name());
  co_return count;
}

void Cache::stop() {
  // Prefetch workers and the space watcher look at the flag between two objects or rounds.
  is_stopping_ = true;
  fetched_signal_.notify();
}

}  // namespace silo::cache
