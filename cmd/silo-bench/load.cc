// get / put / mixed / list: `concurrency` workers, each a coroutine on one of the io
// threads, each keeping one request in flight (a closed loop, like wrk and warp).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <mutex>
#include <numeric>

#include "route.h"
#include "wire/batch_json.h"

namespace silo::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop_requested{false};

void on_stop_signal(int) { g_stop_requested.store(true); }

}  // namespace

bool stop_requested() { return g_stop_requested.load(); }

void install_stop_handler() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

namespace {

struct Op {
  size_t index = 0;
  bool is_put = false;
  uint64_t size = 0;
};

// Hands out the operations of a run: until the deadline, `count` of them, or `epochs`
// passes over every object (each pass in its own random order when random).
class OpSource {
 public:
  OpSource(const Config& config, size_t objects) : config_(config), objects_(objects) {
    if (config.duration_s > 0) {
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(config.duration_s));
    } else if (config.epochs > 0 || config.count == 0) {
      // Every object once per epoch (one epoch when neither a count nor a duration is
      // given), never the same object twice within an epoch.
      const int epochs = std::max(config.epochs, 1);
      total_ = static_cast<uint64_t>(epochs) * objects;
      order_.resize(total_);
      for (int e = 0; e < epochs; ++e) {
        auto first = order_.begin() + static_cast<std::ptrdiff_t>(static_cast<uint64_t>(e) * objects);
        std::iota(first, first + static_cast<std::ptrdiff_t>(objects), size_t{0});
        if (config.random_order) {
          std::mt19937_64 rng(config.seed + static_cast<uint64_t>(e));
          std::shuffle(first, first + static_cast<std::ptrdiff_t>(objects), rng);
        }
      }
    } else {
      total_ = config.count;
    }
  }

  std::optional<Op> next(std::mt19937_64& rng) {
    if (stop_requested()) return std::nullopt;  // SIGINT/SIGTERM: finish and report
    const uint64_t n = next_.fetch_add(1);
    if (deadline_) {
      if (Clock::now() >= *deadline_) return std::nullopt;
    } else if (n >= total_) {
      return std::nullopt;
    }
    Op op;
    if (!order_.empty()) {
      op.index = order_[n];
    } else if (config_.random_order) {
      op.index = std::uniform_int_distribution<size_t>(0, objects_ - 1)(rng);
    } else {
      op.index = n % objects_;
    }
    op.is_put = config_.mode == Mode::kPut ||
                (config_.mode == Mode::kMixed && std::uniform_real_distribution<double>(0, 1)(rng) < config_.put_fraction);
    if (op.is_put) {
      op.size = config_.size_min == config_.size_max
                    ? config_.size_min
                    : std::uniform_int_distribution<uint64_t>(config_.size_min, config_.size_max)(rng);
    }
    return op;
  }

 private:
  const Config& config_;
  const size_t objects_;
  std::optional<Clock::time_point> deadline_;
  uint64_t total_ = 0;
  std::vector<size_t> order_;
  std::atomic<uint64_t> next_{0};
};

// A local file opened for a PUT's body; closed when done.
struct SourceFile {
  int fd = -1;
  uint64_t size = 0;
  ~SourceFile() {
    if (fd >= 0) ::close(fd);
  }
};

// PUTs `size` random bytes, or the file `source` (its size) when not empty.
http::Awaitable<Outcome> put_object(http::Client& http, Destination to, uint64_t size, const std::string& source,
                                    std::span<char> buffer) {
  Outcome out;
  const auto start = Clock::now();
  SourceFile file;
  if (!source.empty()) {
    file.fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (file.fd < 0 || ::fstat(file.fd, &st) != 0) {
      out.status = Status::from_errno(errno, source);
      co_return out;
    }
    size = static_cast<uint64_t>(st.st_size);
  }
  http::ClientRequest request;
  request.method = http::Method::kPut;
  request.target = std::move(to.target);
  auto call = co_await http.start(*to.endpoint, std::move(request), size);
  if (!call) {
    out.status = std::move(call).error();
    co_return out;
  }
  const std::span<const char> bytes = payload(size);
  uint64_t sent = 0;
  while (sent < size) {
    std::span<const char> piece;
    if (file.fd >= 0) {
      const ssize_t n = ::pread(file.fd, buffer.data(), buffer.size(), static_cast<off_t>(sent));
      if (n <= 0) {
        out.status = n < 0 ? Status::from_errno(errno, source) : Status::data_loss("{} shrank while read", source);
        co_return out;
      }
      piece = std::span<const char>(buffer.data(), static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(n), size - sent)));
    } else {
      const size_t length = static_cast<size_t>(std::min<uint64_t>(size - sent, std::min<size_t>(bytes.size(), 1u << 20)));
      piece = bytes.subspan(static_cast<size_t>(sent % (bytes.size() - length + 1)), length);
    }
    const Status written = co_await (*call)->write(piece);
    if (!written.is_ok()) {
      out.status = written;
      co_return out;
    }
    sent += piece.size();
  }
  auto head = co_await (*call)->finish();
  out.ttfb_ns = nanos_since(start);
  if (!head) {
    out.status = std::move(head).error();
    co_return out;
  }
  if (head->status != 200) {
    out.status = co_await drain_error(**call, head->status, buffer);
    co_return out;
  }
  auto rest = co_await http::read_all((*call)->body(), 1 << 16);
  if (!rest) out.status = std::move(rest).error();
  out.bytes = size;
  co_return out;
}

// POSTs `body` (a batch request) and reads the tar stream to its end.
http::Awaitable<Outcome> post_batch(http::Client& http, Destination to, const std::string& body,
                                    std::span<char> buffer) {
  const auto start = Clock::now();
  http::ClientRequest request;
  request.method = http::Method::kPost;
  request.target = std::move(to.target);
  auto call = co_await http.start(*to.endpoint, std::move(request), uint64_t{body.size()});
  Status sent = call ? Status::ok() : call.status();
  if (sent.is_ok()) sent = co_await (*call)->write({body.data(), body.size()});
  if (!sent.is_ok()) {
    Outcome failed;
    failed.status = std::move(sent);
    co_return failed;
  }
  co_return co_await read_answer(**call, start, buffer, nullptr);
}

std::string xml_unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    const size_t end = text.find(';', i);
    const std::string_view entity = text.substr(i + 1, end - i - 1);
    if (entity == "amp") out += '&';
    else if (entity == "lt") out += '<';
    else if (entity == "gt") out += '>';
    else if (entity == "quot") out += '"';
    else if (entity == "apos") out += '\'';
    i = end;
  }
  return out;
}

size_t count_of(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The keys and the continuation token of one listing page: S3 XML (gateway; scanned,
// not parsed: the client's cost would count against the server's keys/s) or the native
// JSON (the client library's parser).
Status parse_page(std::string_view body, bool is_s3, Outcome& out) {
  if (!is_s3) {
    ASSIGN_OR_RETURN(client::ListPage page, client::Client::parse_list_page(body));
    out.keys = page.objects.size();
    out.next_token = std::move(page.next_token);
    return Status::ok();
  }
  out.keys = count_of(body, "<Key>");
  if (const size_t at = body.find("<NextContinuationToken>"); at != std::string_view::npos) {
    const size_t from = at + std::string_view("<NextContinuationToken>").size();
    out.next_token = xml_unescape(body.substr(from, body.find('<', from) - from));
  }
  return Status::ok();
}

http::Awaitable<Outcome> list_page(http::Client& http, Destination to, bool is_s3) {
  Outcome out;
  const auto start = Clock::now();
  http::ClientRequest request;
  request.target = std::move(to.target);
  auto response = co_await http.call(*to.endpoint, std::move(request), "", 256u << 20);
  out.ttfb_ns = nanos_since(start);
  if (!response) {
    out.status = std::move(response).error();
    co_return out;
  }
  if (response->status != 200) {
    out.status = Status::unavailable("HTTP {}: {}", response->status, response->body.substr(0, 300));
    co_return out;
  }
  out.bytes = response->body.size();
  out.status = parse_page(response->body, is_s3, out);
  co_return out;
}

struct Shared {
  const Config& config;
  const std::vector<std::string>& names;
  std::shared_ptr<const Router> router;
  OpSource& ops;
  std::atomic<uint64_t> done_ops{0}, done_bytes{0};
};

class Worker {
 public:
  Worker(Shared& shared, http::Client& http, uint64_t seed) : shared_(shared), http_(http), rng_(seed) {}

  http::Awaitable<void> run() {
    std::vector<char> buffer(1u << 20);  // one per worker, reused for every request
    while (auto op = shared_.ops.next(rng_)) {
      if (shared_.config.mode == Mode::kList) {
        co_await list_all();  // records each page
        continue;
      }
      const auto start = Clock::now();
      Outcome out;
      if (shared_.config.path == Path::kFile) {
        out = co_await read_file(shared_.config.dir + "/" + shared_.names[op->index], buffer, nullptr);
      } else if (op->is_put) {
        const std::string source =
            shared_.config.dir.empty() ? std::string() : shared_.config.dir + "/" + shared_.names[op->index];
        out = co_await put_object(http_, shared_.router->object(shared_.names[op->index]), op->size, source, buffer);
      } else if (shared_.config.mode == Mode::kBatch) {
        out = co_await get_batch(buffer);
      } else if (shared_.config.members > 0) {
        const std::string member = member_name(random_member());
        out = co_await get_object(http_, shared_.router->member(shared_.names[op->index], member), buffer, nullptr);
      } else {
        out = co_await get_object(http_, shared_.router->object(shared_.names[op->index]), buffer, nullptr);
      }
      record(out, nanos_since(start));
    }
  }

  Report& report() { return report_; }

 private:
  size_t random_member() { return std::uniform_int_distribution<size_t>(0, shared_.config.members - 1)(rng_); }
  std::string member_name(size_t index) const {
    return fmt::format(fmt::runtime(shared_.config.member_format), index);
  }

  // One batch of `batch_entries` random members of random objects; its samples count as keys.
  http::Awaitable<Outcome> get_batch(std::span<char> buffer) {
    wire::BatchRequest request;
    for (size_t i = 0; i < shared_.config.batch_entries; ++i) {
      const size_t object = std::uniform_int_distribution<size_t>(0, shared_.names.size() - 1)(rng_);
      request.entries.push_back(
          {.bucket = shared_.config.bucket, .name = shared_.names[object], .archpath = member_name(random_member())});
    }
    const std::string body = wire::batch_request_json(request);
    Outcome out = co_await post_batch(http_, shared_.router->batch(), body, buffer);
    if (out.status.is_ok()) out.keys = request.entries.size();
    co_return out;
  }

  // One full listing; every page is one recorded op.
  http::Awaitable<void> list_all() {
    const bool is_s3 = shared_.config.path == Path::kGateway;
    std::string token;
    for (;;) {
      const auto start = Clock::now();
      Outcome page = co_await list_page(http_, shared_.router->list_page(token, shared_.config.page_size), is_s3);
      record(page, nanos_since(start));
      if (!page.status.is_ok() || page.next_token.empty()) break;
      token = std::move(page.next_token);
    }
  }

  void record(const Outcome& out, uint64_t nanos) {
    ++report_.ops;
    report_.keys += out.keys;
    shared_.done_ops.fetch_add(1, std::memory_order_relaxed);
    if (!out.status.is_ok()) {
      ++report_.errors;
      ++report_.error_kinds[status_kind(out.status)];
      if (report_.first_error.empty()) report_.first_error = out.status.to_string();
      return;
    }
    report_.bytes += out.bytes;
    shared_.done_bytes.fetch_add(out.bytes, std::memory_order_relaxed);
    report_.latency.record(nanos);
    report_.ttfb.record(out.ttfb_ns);
  }

  Shared& shared_;
  http::Client& http_;
  std::mt19937_64 rng_;
  Report report_;
};

// co_spawn target: a named coroutine, so no lambda captures live in the frame (ADR 0003).
// The last worker of a shard stops its io_context: idle pooled connections would keep it
// running until their timeouts.
http::Awaitable<void> run_worker(Worker* worker, IoPool* pool, size_t shard) {
  co_await worker->run();
  pool->worker_done(shard);
}

}  // namespace
Result<Report> run_load(const Config& config) {
  std::vector<std::string> names;
  if (config.mode == Mode::kList) {
    names.push_back("");  // one "object": the bucket, listed whole per op
  } else {
    ASSIGN_OR_RETURN(names, object_names(config));
  }
  std::shared_ptr<const Router> router;
  if (config.path != Path::kFile) {
    ASSIGN_OR_RETURN(router, Router::create(config));
  }
  const int threads = config.threads > 0 ? config.threads : static_cast<int>(std::thread::hardware_concurrency());
  IoPool pool(threads, config, router != nullptr && router->signs(),
              static_cast<size_t>(config.concurrency / threads + 1));
  OpSource ops(config, names.size());
  Shared shared{config, names, router, ops};
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < config.concurrency; ++i) {
    const size_t shard = static_cast<size_t>(i) % pool.size();
    workers.push_back(std::make_unique<Worker>(shared, pool.client(shard), config.seed * 1000003 + static_cast<uint64_t>(i)));
    pool.add_worker(shard);
    boost::asio::co_spawn(pool.io(shard), run_worker(workers.back().get(), &pool, shard), boost::asio::detached);
  }

  UsageProbe probe(config.watch_pids);
  std::atomic<bool> finished{false};
  const auto start = Clock::now();
  std::thread watcher([&] {
    watch_progress(config, probe, finished, shared.done_ops, shared.done_bytes,
                   config.mode == Mode::kList ? "pages" : "ops");
  });
  pool.run();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  finished = true;
  watcher.join();

  Report report;
  for (auto& w : workers) {
    Report& r = w->report();
    report.ops += r.ops;
    report.errors += r.errors;
    report.bytes += r.bytes;
    report.keys += r.keys;
    for (const auto& [kind, n] : r.error_kinds) report.error_kinds[kind] += n;
    if (report.first_error.empty()) report.first_error = r.first_error;
    report.latency.merge(r.latency);
    report.ttfb.merge(r.ttfb);
  }
  report.seconds = seconds;
  report.server = probe.finish();
  return report;
}

}  // namespace silo::bench
