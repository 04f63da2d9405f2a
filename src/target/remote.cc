// Remote buckets: cold GETs with single-flight fetches, revalidation, write-through and
// deletes at the backend (docs/remote-buckets.md).
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <atomic>

#include "base/clock.h"
#include "base/log.h"
#include "cluster/gather.h"
#include "cluster/relay.h"
#include "cluster/reply.h"
#include "target/read_here_or_neighbor.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace asio = boost::asio;

// One object coming from its backend into the store. The fetch coroutine appends bytes to
// the work file and moves `written` on; readers send what is written so far from their
// own descriptor of that file and wait on `signal` for more.
struct Target::Fetch {
  explicit Fetch(ObjectRef o) : object(std::move(o)) {}
  ~Fetch() {
    if (read_fd >= 0) ::close(read_fd);
  }
  Fetch(const Fetch&) = delete;
  Fetch& operator=(const Fetch&) = delete;

  const ObjectRef object;
  cluster::Signal signal;  // notified on every change below
  std::mutex mutex;
  std::optional<wire::ObjectRecord> record;  // GUARDED_BY(mutex); set once the backend described it
  uint64_t written = 0;                      // GUARDED_BY(mutex); bytes in the work file
  bool is_done = false;                      // GUARDED_BY(mutex)
  Status failure;                            // GUARDED_BY(mutex); once done
  int read_fd = -1;                          // set before `record`; read-only
  // A DELETE of the object ran while it was being fetched: the commit is refused (checked
  // under the object lock), so a deleted object is never cached behind the delete.
  std::atomic<bool> is_deleted{false};

  void update(const std::function<void(Fetch&)>& change) {
    {
      std::lock_guard lock(mutex);
      change(*this);
    }
    signal.notify();
  }
};

namespace {

constexpr size_t kMaxEvictBody = 16 << 20;  // a list of names
constexpr uint64_t kPieceMemory = 256ull << 20;  // bytes of range-GET pieces in memory at once, per target

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

// The time one backend operation took, into the target's counters.
class BackendTimer {
 public:
  BackendTimer(stats::Counter& requests, stats::Counter& nanos) : nanos_(nanos), start_(Clock::real().unix_nanos()) {
    requests.add();
  }
  ~BackendTimer() { nanos_.add(static_cast<uint64_t>(Clock::real().unix_nanos() - start_)); }

 private:
  stats::Counter& nanos_;
  int64_t start_;
};

// `op`, counted and timed as one backend operation.
template <typename T>
http::Awaitable<T> timed(stats::Counter& requests, stats::Counter& nanos, http::Awaitable<T> op) {
  BackendTimer timer(requests, nanos);
  co_return co_await std::move(op);
}

}  // namespace

Result<std::shared_ptr<backend::ObjectBackend>> Target::backend_of(const wire::Bucket& bucket) {
  if (!options_.backends) {
    return Status::failed_precondition("bucket {} is remote but this node has no backends", bucket.name());
  }
  return options_.backends->get(bucket);
}

http::Awaitable<Status> Target::read_through(http::Exchange& exchange, const Resolved& r, CachedReadFn read) {
  const bool is_remote = wire::is_remote(r.bucket.props());
  const http::RequestHead& request = exchange.request();
  bool is_fresh = true;
  if (is_remote && r.bucket.props().backend().revalidate() && !is_local_only(request)) {
    auto cached = co_await store_.stat(r.object);
    if (cached) {
      CO_ASSIGN_OR_RETURN(const bool stale, co_await is_stale(r, *cached));
      is_fresh = !stale;
    }
  }
  Status s;
  if (is_fresh) {
    const CachedReadFn& read_here = read;
    s = co_await read_here_or_neighbor(exchange, r.object, [&read_here] { return read_here(nullptr); });
    if (!is_remote || s.code() != Code::kNotFound || exchange.response().has_begun() || is_local_only(request)) {
      if (is_remote && s.is_ok()) {
        cache_hits_.add();
        touch(r.object);
      }
      co_return s;
    }
  }
  // Not cached (or stale): the owner fetches it, so that concurrent misses share one fetch.
  if (!r.is_local && r.owner.state() != wire::NODE_STATE_DOWN) co_return co_await relay_to(exchange, r.owner);
  if (request.method == http::Method::kHead) {
    CO_ASSIGN_OR_RETURN(auto backend, backend_of(r.bucket));
    auto remote = co_await timed(backend_requests_, backend_nanos_, backend->head(r.object.name));
    if (!remote) {
      if (remote.error().code() != Code::kNotFound) backend_errors_.add();
      co_return std::move(remote).error();
    }
    ColdRead cold{record_of(r.object, *remote), nullptr};
    co_return co_await read(&cold);
  }
  CO_ASSIGN_OR_RETURN(std::shared_ptr<Fetch> fetch, co_await join_fetch(r));
  ColdRead cold{*fetch->record, fetch};
  co_return co_await read(&cold);
}

http::Awaitable<Result<bool>> Target::is_stale(const Resolved& r, const wire::ObjectRecord& cached) {
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(r.bucket));
  auto remote = co_await timed(backend_requests_, backend_nanos_, backend->head(r.object.name));
  if (!remote && remote.error().code() == Code::kNotFound) {
    // Deleted at the backend: so here too.
    SILO_LOG_INFO("{} is gone from the backend of bucket {}; dropping the cached copy", r.object.name,
                  r.bucket.name());
    const Status removed = co_await remove_everywhere(r.object);
    if (!removed.is_ok() && removed.code() != Code::kNotFound) co_return removed;
    evictions_.add();
    co_return Status::not_found("The specified key does not exist: {}", r.object.name).with_reason("NoSuchKey");
  }
  if (!remote) {
    // The backend can not be asked: the cached copy is served (availability over
    // freshness; docs/remote-buckets.md).
    backend_errors_.add();
    SILO_LOG_WARN("revalidating {} in bucket {}: {}; serving the cached copy", r.object.name, r.bucket.name(),
                  remote.error());
    co_return false;
  }
  co_return remote->etag != cached.remote().etag();
}

http::Awaitable<Result<std::shared_ptr<Target::Fetch>>> Target::join_fetch(const Resolved& r) {
  std::shared_ptr<Fetch> fetch;
  bool is_new = false;
  {
    std::lock_guard lock(fetches_mutex_);
    auto& slot = fetches_[{r.object.bucket_id.value(), r.object.name}];
    if (!slot) {
      slot = std::make_shared<Fetch>(r.object);
      is_new = true;
    }
    fetch = slot;
  }
  if (is_new) {
    const auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, run_fetch(fetch, r), asio::detached);
  }
  for (;;) {
    const uint64_t seen = fetch->signal.count();
    {
      std::lock_guard lock(fetch->mutex);
      if (fetch->record) co_return fetch;
      if (fetch->is_done) co_return fetch->failure;
    }
    co_await fetch->signal.wait(seen);
  }
}

http::Awaitable<Result<uint64_t>> Target::wait_fetched(Fetch& fetch) {
  for (;;) {
    const uint64_t seen = fetch.signal.count();
    {
      std::lock_guard lock(fetch.mutex);
      if (fetch.is_done && !fetch.failure.is_ok()) co_return fetch.failure;
      if (fetch.is_done) co_return fetch.written;
    }
    co_await fetch.signal.wait(seen);
  }
}

http::Awaitable<void> Target::run_fetch(std::shared_ptr<Fetch> fetch, Resolved r) {
  cache_misses_.add();
  Status s = co_await timed(backend_requests_, backend_nanos_, fetch_into_store(*fetch, r));
  if (s.is_ok() && !fetch->record) s = Status::internal("fetch of {} ended without the object", r.object.name);
  fetch->update([&s](Fetch& f) {
    f.is_done = true;
    f.failure = s;
  });
  {
    std::lock_guard lock(fetches_mutex_);
    auto it = fetches_.find({r.object.bucket_id.value(), r.object.name});
    if (it != fetches_.end() && it->second == fetch) fetches_.erase(it);
  }
  if (!s.is_ok()) {
    if (s.code() != Code::kNotFound) {
      backend_errors_.add();
      SILO_LOG_WARN("fetching {} of bucket {} from {}: {}", r.object.name, r.bucket.name(),
                    wire::backend_url(r.bucket.props().backend()), s);
    }
    co_return;
  }
  // The other holders get their copies as after any write.
  const Status replicated = co_await replicate(r);
  if (!replicated.is_ok()) SILO_LOG_WARN("copies of fetched {}: {}", r.object.name, replicated);
}

http::Awaitable<Status> Target::fetch_into_store(Fetch& fetch, const Resolved& r) {
  CO_RETURN_IF_ERROR(check_space());
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(r.bucket));
  store::PutOptions options;
  options.durability = durability_of(r.bucket);
  options.skips_md5 = true;  // the ETag is the backend's; the XXH3 guards the bytes from here on
  options.precondition = [&fetch](const wire::ObjectRecord*) {
    if (!fetch.is_deleted) return Status::ok();
    return Status::not_found("{} was deleted while being fetched", fetch.object.name).with_reason("NoSuchKey");
  };
  WriteTicket ticket(*this);
  guard_bucket(options, r.bucket, ticket);
  CO_ASSIGN_OR_RETURN(std::unique_ptr<store::ObjectWriter> writer, co_await store_.create(r.object, std::move(options)));
  const Status fetched = co_await fetch_into(fetch, r, *writer, std::move(backend));
  if (!fetched.is_ok()) co_await writer->discard();  // gone before anyone hears of the failure
  co_return fetched;
}

http::Awaitable<Status> Target::fetch_into(Fetch& fetch, const Resolved& r, store::ObjectWriter& out,
                                           std::shared_ptr<backend::ObjectBackend> backend) {
  CO_ASSIGN_OR_RETURN(fetch.read_fd, out.open_reader());
  const backend::Sink sink = [this, &fetch, &out](std::span<const char> bytes) -> http::Awaitable<Status> {
    CO_RETURN_IF_ERROR(co_await out.write(bytes));
    backend_bytes_.add(bytes.size());
    fetch.update([n = bytes.size()](Fetch& f) { f.written += n; });
    co_return Status::ok();
  };
  const auto describe = [&fetch, &out](const backend::RemoteObject& remote) {
    wire::ObjectRecord record = record_of(fetch.object, remote);
    out.attributes().set_content_type(record.content_type());
    *out.attributes().mutable_remote() = record.remote();
    fetch.update([&record](Fetch& f) { f.record = std::move(record); });
  };
  // The first piece tells the size: a small object is whole after it, a large one comes
  // in pieces of range_get_size, range_get_streams at a time, written in order.
  const auto snapshot = live_config();
  const uint64_t piece = snapshot->cache.range_get_size;
  backend::GetOptions first{.range = backend::RemoteRange{0, piece}, .if_match = "", .on_object = describe};
  auto got = co_await backend->get(r.object.name, first, sink);
  if (!got && got.error().code() == Code::kOutOfRange) {
    // An empty object has no byte 0 to ask for.
    backend::GetOptions whole{.range = std::nullopt, .if_match = "", .on_object = describe};
    got = co_await backend->get(r.object.name, whole, sink);
  }
  if (!got) co_return std::move(got).error();
  const uint64_t size = got->size;
  const std::string etag = got->etag;
  const size_t streams = snapshot->cache.range_get_streams;
  for (uint64_t at = std::min(size, piece); at < size;) {
    // One batch: up to `streams` pieces fetched at once (of the version the first piece
    // came from), then written in order.
    std::vector<backend::RemoteRange> ranges;
    for (size_t i = 0; i < streams && at < size; ++i) {
      const uint64_t n = std::min(piece, size - at);
      ranges.push_back({at, n});
      at += n;
    }
    co_await take_pieces(ranges.size());
    // Given back however this batch ends (named: no temporary beside co_await).
    const auto given_back = std::shared_ptr<void>(nullptr, [this, n = ranges.size()](void*) { give_back_pieces(n); });
    std::vector<std::string> buffers(ranges.size());
    std::vector<cluster::Task<Status>> tasks;
    for (size_t i = 0; i < ranges.size(); ++i) {
      tasks.push_back([&backend, &r, &etag, &ranges, &buffers, i]() -> http::Awaitable<Status> {
        std::string& buffer = buffers[i];
        buffer.reserve(ranges[i].length);
        const backend::Sink fill = [&buffer](std::span<const char> bytes) -> http::Awaitable<Status> {
          buffer.append(bytes.data(), bytes.size());
          co_return Status::ok();
        };
        const backend::GetOptions ranged{.range = ranges[i], .if_match = etag, .on_object = {}};
        auto part = co_await backend->get(r.object.name, ranged, fill);
        if (!part) co_return std::move(part).error();
        co_return Status::ok();
      });
    }
    for (const Status& s : co_await cluster::gather<Status>(std::move(tasks))) CO_RETURN_IF_ERROR(s);
    for (const std::string& buffer : buffers) {
      const std::span<const char> bytes(buffer.data(), buffer.size());
      CO_RETURN_IF_ERROR(co_await sink(bytes));
    }
  }
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await out.commit());
  if (record.size() != size) {
    co_return Status::data_loss("fetched {} bytes of {}, the backend said {}", record.size(), r.object.name, size);
  }
  co_return Status::ok();
}

http::Awaitable<void> Target::take_pieces(size_t n) {
  // At least one batch always fits, so a fetch never waits for memory it can not get.
  const auto snapshot = live_config();
  const size_t budget = std::max<size_t>(snapshot->cache.range_get_streams,
                                         kPieceMemory / snapshot->cache.range_get_size);
  for (;;) {
    const uint64_t seen = pieces_signal_.count();
    {
      std::lock_guard lock(pieces_mutex_);
      if (pieces_in_use_ + n <= budget) {
        pieces_in_use_ += n;
        co_return;
      }
    }
    co_await pieces_signal_.wait(seen);
  }
}

void Target::give_back_pieces(size_t n) {
  {
    std::lock_guard lock(pieces_mutex_);
    pieces_in_use_ -= n;
  }
  pieces_signal_.notify();
}

http::Awaitable<Status> Target::send_fetching(http::Exchange& exchange, Fetch& fetch, http::ResponseHead head,
                                              uint64_t offset, uint64_t length) {
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
  const uint64_t end = offset + length;
  uint64_t at = offset;
  while (at < end) {
    const uint64_t seen = fetch.signal.count();
    uint64_t written = 0;
    uint64_t size = 0;
    bool is_done = false;
    Status failure;
    {
      std::lock_guard lock(fetch.mutex);
      written = fetch.written;
      size = fetch.record->size();
      is_done = fetch.is_done;
      failure = fetch.failure;
    }
    // The object's last byte waits for the commit: once an answer that reaches the end is
    // complete, the object is cached (a request right after finds it), and a fetch whose
    // commit fails cuts the answer.
    const uint64_t sendable = end == size && !(is_done && failure.is_ok()) ? std::min(written, end - 1) : written;
    if (sendable > at) {
      const uint64_t n = std::min(sendable, end) - at;
      CO_RETURN_IF_ERROR(co_await exchange.response().send_file(fetch.read_fd, at, n));
      bytes_sent_.add(n);
      at += n;
      continue;
    }
    if (is_done) {
      // The fetch failed (nothing of it stays in the store): the client's answer is cut.
      if (!failure.is_ok()) co_return failure;
      co_return Status::data_loss("the fetch of {} ended at byte {} of {}", fetch.object.name, written, end);
    }
    co_await fetch.signal.wait(seen);
  }
  co_return Status::ok();
}

http::Awaitable<Status> Target::publish(const Resolved& r) {
  if (wire::is_remote(r.bucket.props())) {
    CO_ASSIGN_OR_RETURN(auto backend, backend_of(r.bucket));
    CO_ASSIGN_OR_RETURN(store::OpenObject object, co_await store_.open(r.object));
    const int fd = object.fd();
    const backend::Source source = [this, fd](uint64_t offset, std::span<char> out) -> http::Awaitable<Result<size_t>> {
      co_return co_await reader_.run([fd, offset, out]() -> Result<size_t> {
        const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
        if (n < 0) return Status::from_errno(errno, "pread");
        return static_cast<size_t>(n);
      });
    };
    auto put = co_await timed(backend_requests_, backend_nanos_,
                              backend->put(r.object.name, object.record().size(), source));
    if (!put) {
      // Not at the backend: the write did not happen (the copy here is taken back).
      backend_errors_.add();
      const Status undone = co_await store_.remove_generation(r.object, object.record().generation());
      if (!undone.is_ok() && undone.code() != Code::kFailedPrecondition) {
        SILO_LOG_WARN("taking back {} after the backend refused it: {}", r.object.name, undone);
      }
      co_return Status::unavailable("writing {} through to {}: {}", r.object.name,
                                    wire::backend_url(r.bucket.props().backend()), put.error().message());
    }
    const backend::RemoteObject remote = *put;
    const auto remember = [&remote](wire::ObjectRecord& record) {
      record.mutable_remote()->set_etag(remote.etag);
      record.mutable_remote()->set_mtime_unix_seconds(remote.mtime_unix_seconds > 0 ? remote.mtime_unix_seconds
                                                                                      : record.mtime_unix_nanos() / 1'000'000'000);
      return Status::ok();
    };
    CO_RETURN_IF_ERROR((co_await store_.update(r.object, remember, durability_of(r.bucket))).status());
  }
  co_return co_await replicate(r);
}

http::Awaitable<void> Target::handle_evict(http::Exchange& exchange, std::string bucket_name) {
  auto evicted = co_await evict(exchange, bucket_name);
  if (!evicted) {
    co_await cluster::send_error(exchange, evicted.error());
    co_return;
  }
  co_await cluster::send_json(exchange, 200, fmt::format(R"({{"evicted":{}}})", *evicted));
}

http::Awaitable<Result<uint64_t>> Target::evict(http::Exchange& exchange, const std::string& bucket_name) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxEvictBody));
  CO_ASSIGN_OR_RETURN(const wire::EvictRequest request, wire::parse_evict_request_json(body));
  CO_ASSIGN_OR_RETURN(const wire::Bucket bucket, co_await bucket_as_sender_sees_it(exchange.request(), bucket_name));
  if (!wire::is_remote(bucket.props())) {
    co_return Status::invalid_argument("bucket {} is not a remote bucket: evicting would lose its objects",
                                       bucket.name());
  }
  const BucketId id(bucket.id());
  uint64_t count = 0;
  // Every piece here goes (copies and slices alike): the backend keeps the object.
  const auto drop = [this, &count](const ObjectRef& object) -> http::Awaitable<Status> {
    const Status removed = co_await store_.remove(object);
    if (removed.is_ok()) ++count;
    if (!removed.is_ok() && removed.code() != Code::kNotFound) co_return removed;
    co_return Status::ok();
  };
  if (request.selection.lists_names()) {
    CO_ASSIGN_OR_RETURN(const std::vector<std::string> names, wire::selected_names(request.selection));
    for (const auto& name : names) {
      const ObjectRef object{id, name};
      CO_RETURN_IF_ERROR(co_await drop(object));
    }
  } else {
    store::ListOptions options;
    options.prefix = request.selection.prefix;
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

http::Awaitable<Status> Target::remove_remote(const Resolved& r) {
  CO_ASSIGN_OR_RETURN(auto backend, backend_of(r.bucket));
  const Status removed = co_await timed(backend_requests_, backend_nanos_, backend->remove(r.object.name));
  if (!removed.is_ok()) {
    backend_errors_.add();
    co_return removed;
  }
  // A fetch of the object in flight must not cache it behind this delete: marked before
  // the copies here go, its commit either came first (and is removed below) or is refused.
  {
    std::lock_guard lock(fetches_mutex_);
    if (auto it = fetches_.find({r.object.bucket_id.value(), r.object.name}); it != fetches_.end()) {
      it->second->is_deleted = true;
    }
  }
  const Status here = co_await remove_everywhere(r.object);
  if (!here.is_ok() && here.code() != Code::kNotFound) co_return here;
  co_return Status::ok();
}

}  // namespace silo::target
