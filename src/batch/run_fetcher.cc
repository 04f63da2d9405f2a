#include "batch/run_fetcher.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "async/signal.h"
#include "base/log.h"
#include "base/mutex.h"
#include "batch/owner_fetcher.h"
#include "batch/owner_reads.h"
#include "s3/names.h"
#include "wire/json.h"

namespace silo::batch {
namespace {

namespace asio = boost::asio;

// A second run to an owner starts while one is in flight once this many entries wait.
constexpr size_t kSecondRunEntries = 32;

// An entry's bytes, read whole from its run.
class BytesBody final : public EntryBody {
 public:
  BytesBody(std::string bytes, int64_t mtime)
      : EntryBody(bytes.size(), mtime, /*is_tar=*/false), bytes_(std::move(bytes)) {}

  std::optional<std::string> take_whole() override {
    if (at_ != 0) return std::nullopt;
    std::string whole = std::move(bytes_);
    bytes_.clear();  // read() answers 0 from now on
    return whole;
  }

  http::Awaitable<Result<size_t>> read(std::span<char> out) override {
    const size_t n = std::min(out.size(), bytes_.size() - at_);
    std::memcpy(out.data(), bytes_.data() + at_, n);
    at_ += n;
    co_return n;
  }

 private:
  std::string bytes_;
  size_t at_ = 0;
};

// One entry waiting for its run.
struct Pending {
  explicit Pending(const wire::BatchEntry& e) : entry(&e) {}
  const wire::BatchEntry* entry;  // valid while open() waits, which is until is_done
  bool is_done = false;           // guarded by State::mutex
  bool has_bytes = false;         // else: ask with a GET
  std::string bytes;
  int64_t mtime_unix_seconds = 0;
  async::Signal done;
};

struct OwnerQueue {
  http::Endpoint to;
  std::deque<std::shared_ptr<Pending>> waiting;
  size_t in_flight = 0;  // runs being sent or read
};

// A run's answer read in large pieces (a frame head and a 10 KiB sample each cost no
// read of their own).
class FrameReader {
 public:
  explicit FrameReader(http::BodyReader& body) : body_(body), buffer_(kStreamChunk) {}

  // Reads exactly out.size() bytes; kUnavailable when the answer ends first.
  http::Awaitable<Status> read_exact(std::span<char> out) {
    size_t got = 0;
    while (got < out.size()) {
      if (begin_ == end_) {
        Result<size_t> n = co_await body_.read(std::span<char>(buffer_.data(), buffer_.size()));
        if (!n) co_return std::move(n).error();
        if (*n == 0) co_return Status::unavailable("a run's answer ended after {} of {} bytes", got, out.size());
        begin_ = 0;
        end_ = *n;
      }
      const size_t take = std::min(end_ - begin_, out.size() - got);
      std::memcpy(out.data() + got, buffer_.data() + begin_, take);
      begin_ += take;
      got += take;
    }
    co_return Status::ok();
  }

  // Whether the answer ended exactly after what was read (its connection then goes back to
  // the pool); kUnavailable for bytes past the last frame.
  http::Awaitable<Status> expect_end() {
    if (begin_ != end_) co_return Status::unavailable("a run's answer has bytes past its last frame");
    char past = 0;
    Result<size_t> n = co_await body_.read(std::span<char>(&past, 1));
    if (!n) co_return std::move(n).error();
    if (*n != 0) co_return Status::unavailable("a run's answer has bytes past its last frame");
    co_return Status::ok();
  }

 private:
  http::BodyReader& body_;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace

struct RunFetcher::State {
  State(cluster::ClusterMaps& m, std::shared_ptr<http::Client> c) : maps(m), client(std::move(c)) {}

  // Hands `pending` its answer and wakes its open().
  void settle(Pending& pending, bool has_bytes) {
    {
      MutexLock lock(mutex);
      pending.has_bytes = has_bytes;
      pending.is_done = true;
    }
    pending.done.notify();
  }

  cluster::ClusterMaps& maps;
  std::shared_ptr<http::Client> client;
  std::atomic<uint64_t> turn{0};
  Mutex mutex;
  std::map<std::string, OwnerQueue> owners GUARDED_BY(mutex);
};

namespace {

// Sends one run and hands each of its entries what its owner answered, in order; on any
// failure the rest are left to GETs.
http::Awaitable<void> send_run(RunFetcher::State& state, const http::Endpoint& to,
                               std::vector<std::shared_ptr<Pending>>& run) {
  wire::BatchRequest request;
  request.entries.reserve(run.size());
  for (const auto& pending : run) request.entries.push_back(*pending->entry);
  const std::string document = wire::batch_request_json(request);
  http::ClientRequest post;
  post.method = http::Method::kPost;
  post.target = "/v1/internal/batch";
  post.headers.set("Content-Type", "application/json");
  size_t settled = 0;
  Status failed;
  Result<std::unique_ptr<http::Call>> started = co_await state.client->start(to, std::move(post), document.size());
  if (started) {
    std::unique_ptr<http::Call> call = std::move(*started);
    failed = co_await call->write(document);
    if (failed.is_ok()) {
      Result<http::ClientResponse> head = co_await call->finish();
      if (!head) {
        failed = std::move(head).error();
      } else if (head->status != 200) {
        failed = Status::unavailable("{} answered a run with {}", to.to_string(), head->status);
      }
    }
    FrameReader frames(call->body());
    for (; failed.is_ok() && settled < run.size(); ++settled) {
      Pending& pending = *run[settled];
      RunFrame frame;
      failed = co_await frames.read_exact(std::span<char>(reinterpret_cast<char*>(&frame), sizeof frame));
      if (!failed.is_ok()) break;
      const bool has_bytes = frame.answer == static_cast<uint32_t>(RunAnswer::kBytes);
      const bool is_ask = frame.answer == static_cast<uint32_t>(RunAnswer::kAsk) && frame.size == 0;
      if (!has_bytes && !is_ask) {
        failed = Status::internal("{} answered a run with a frame of kind {}", to.to_string(), frame.answer);
        break;
      }
      if (has_bytes) {
        if (frame.size > kMaxRunEntryBytes) {
          failed = Status::internal("{} answered a run's entry of {} bytes", to.to_string(), frame.size);
          break;
        }
        pending.bytes.resize(frame.size);
        failed = co_await frames.read_exact(std::span<char>(pending.bytes.data(), pending.bytes.size()));
        if (!failed.is_ok()) break;
        pending.mtime_unix_seconds = frame.mtime_unix_seconds;
      }
      state.settle(pending, has_bytes);
    }
    if (failed.is_ok()) failed = co_await frames.expect_end();
  } else {
    failed = std::move(started).error();
  }
  if (!failed.is_ok() && settled < run.size()) {
    SILO_LOG_INFO("a run of {} batch entries to {} failed after {}: {}; GETs ask for the rest", run.size(),
                  to.to_string(), settled, failed);
  }
  for (; settled < run.size(); ++settled) {
    run[settled]->bytes.clear();
    state.settle(*run[settled], false);
  }
}

// Sends runs to `owner` while entries wait for it. A named coroutine holding the state
// (docs/adr/0003): the batch may end while it reads.
http::Awaitable<void> send_runs(std::shared_ptr<RunFetcher::State> state, std::string owner) {
  while (true) {
    std::vector<std::shared_ptr<Pending>> run;
    http::Endpoint to;
    {
      MutexLock lock(state->mutex);
      OwnerQueue& queue = state->owners[owner];
      if (queue.waiting.empty()) {
        --queue.in_flight;
        co_return;
      }
      const size_t take = std::min(queue.waiting.size(), kMaxRunEntries);
      run.assign(queue.waiting.begin(), queue.waiting.begin() + static_cast<std::ptrdiff_t>(take));
      queue.waiting.erase(queue.waiting.begin(), queue.waiting.begin() + static_cast<std::ptrdiff_t>(take));
      to = queue.to;
    }
    co_await send_run(*state, to, run);
  }
}

}  // namespace

RunFetcher::RunFetcher(cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client, Fetcher& fallback)
    : state_(std::make_shared<State>(maps, std::move(client))), fallback_(fallback) {}

http::Awaitable<Result<std::unique_ptr<EntryBody>>> RunFetcher::open(const wire::BatchEntry& entry) {
  std::optional<wire::Bucket> bucket;
  if (!entry.archmode) bucket = state_->maps.find_bucket(entry.bucket);
  const bool may_run = bucket && !wire::is_remote(bucket->props()) && s3::validate_object_name(entry.name).is_ok();
  const auto placement = state_->maps.placement();
  std::optional<wire::NodeInfo> owner;
  if (may_run && !placement->empty()) {
    std::vector<wire::NodeInfo> holders = holders_to_ask(*placement, *bucket, entry.name, state_->turn.fetch_add(1));
    if (!holders.empty() && holders.front().state() != wire::NODE_STATE_DOWN) owner = std::move(holders.front());
  }
  std::optional<http::Endpoint> to;
  if (owner) {
    auto parsed = http::Endpoint::parse(owner->url());
    if (parsed) to = std::move(*parsed);
  }
  if (!to) co_return co_await fallback_.open(entry);

  auto pending = std::make_shared<Pending>(entry);
  bool starts_run = false;
  {
    MutexLock lock_queue(state_->mutex);
    OwnerQueue& queue = state_->owners[owner->id()];
    queue.to = *to;
    queue.waiting.push_back(pending);
    if (queue.in_flight == 0 || (queue.in_flight == 1 && queue.waiting.size() >= kSecondRunEntries)) {
      ++queue.in_flight;
      starts_run = true;
    }
  }
  if (starts_run) {
    const auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, send_runs(state_, owner->id()), asio::detached);
  }
  while (true) {
    const uint64_t seen = pending->done.count();
    {
      MutexLock lock_done(state_->mutex);
      if (pending->is_done) break;
    }
    co_await pending->done.wait(seen);
  }
  if (pending->has_bytes) {
    co_return std::unique_ptr<EntryBody>(
        std::make_unique<BytesBody>(std::move(pending->bytes), pending->mtime_unix_seconds));
  }
  co_return co_await fallback_.open(entry);
}

}  // namespace silo::batch
