#include "route.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/text.h"
#include "http/message.h"

namespace silo::bench {

Result<std::shared_ptr<const Router>> Router::create(const Config& config) {
  std::shared_ptr<Router> router(new Router());
  router->path_ = config.path;
  router->bucket_ = config.bucket;
  router->prefix_ = config.prefix;
  if (config.path == Path::kUrl) {
    const size_t scheme = config.url.find("://");
    const size_t slash = config.url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    ASSIGN_OR_RETURN(router->url_endpoint_, http::Endpoint::parse(config.url.substr(0, slash)));
    if (slash != std::string::npos) router->url_path_ = config.url.substr(slash);
    while (!router->url_path_.empty() && router->url_path_.back() == '/') router->url_path_.pop_back();
    return std::shared_ptr<const Router>(router);
  }
  ASSIGN_OR_RETURN(router->gateway_, http::Endpoint::parse(config.endpoint));
  if (config.path != Path::kDirect) return std::shared_ptr<const Router>(router);

  ASSIGN_OR_RETURN(auto setup, client::Client::create(config.endpoint, config.credentials));
  ASSIGN_OR_RETURN(const client::BucketEntry bucket, setup->bucket_props(config.bucket));
  router->bucket_id_ = bucket.id;
  ASSIGN_OR_RETURN(const client::NodeMap map, setup->node_map());
  ASSIGN_OR_RETURN(client::OwnerMap owners, client::OwnerMap::create(map));
  for (const std::string& url : owners.urls()) {
    ASSIGN_OR_RETURN(http::Endpoint endpoint, http::Endpoint::parse(url));
    router->targets_.push_back(std::move(endpoint));
  }
  router->owners_.emplace(std::move(owners));
  return std::shared_ptr<const Router>(router);
}

Destination Router::object(std::string_view name) const {
  const std::string encoded = text::percent_encode_path(name);
  switch (path_) {
    case Path::kDirect: {
      return {&targets_[owners_->owner_index(bucket_id_, name)], "/v1/objects/" + bucket_ + "/" + encoded};
    }
    case Path::kGateway: return {&gateway_, "/" + bucket_ + "/" + encoded};
    case Path::kUrl: return {&url_endpoint_, url_path_ + "/" + encoded};
    case Path::kFile: break;
  }
  return {};
}

Destination Router::member(std::string_view name, std::string_view member) const {
  Destination to = object(name);
  to.target += "?archpath=" + text::percent_encode(member);
  return to;
}

Destination Router::list_page(std::string_view token, size_t limit) const {
  std::string target;
  if (path_ == Path::kGateway) {
    target = fmt::format("/{}?list-type=2&max-keys={}", bucket_, limit);
    if (!prefix_.empty()) target += "&prefix=" + text::percent_encode(prefix_);
    if (!token.empty()) target += "&continuation-token=" + text::percent_encode(token);
  } else {
    target = client::Client::list_target(bucket_, prefix_, limit, token);
  }
  return {&gateway_, std::move(target)};
}

IoPool::IoPool(int threads, const Config& config, bool sign, size_t connections_per_thread) {
  for (int i = 0; i < threads; ++i) {
    auto shard = std::make_unique<Shard>();
    shard->io = std::make_unique<boost::asio::io_context>(1);
    http::ClientOptions options;
    options.io_timeout = std::chrono::seconds(60);
    options.max_idle_per_endpoint = std::max<size_t>(connections_per_thread, 1);
    if (sign) options.decorate = client::sigv4_signer(config.credentials);
    options.tls_ca_file = config.credentials.ca_bundle;
    options.tls_cert_file = config.credentials.client_cert;
    options.tls_key_file = config.credentials.client_key;
    shard->client = http::Client::create(shard->io->get_executor(), options);
    shards_.push_back(std::move(shard));
  }
}

IoPool::~IoPool() {
  // Pooled connections hold sockets of their io_context: close them first.
  for (auto& shard : shards_) shard->client.reset();
}

void IoPool::worker_done(size_t i) {
  if (--shards_[i]->workers == 0) shards_[i]->io->stop();
}

void IoPool::run() {
  std::vector<std::thread> threads;
  for (auto& shard : shards_) threads.emplace_back([io = shard->io.get()] { io->run(); });
  for (auto& t : threads) t.join();
}

std::span<const char> payload(uint64_t size_hint) {
  // 8 MiB of random bytes (incompressible, not all-zero), written again and again.
  static const std::vector<char> bytes = [] {
    std::vector<char> b(8u << 20);
    std::mt19937_64 rng(42);
    for (size_t i = 0; i + 8 <= b.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(b.data() + i, &v, 8);
    }
    return b;
  }();
  return {bytes.data(), static_cast<size_t>(std::min<uint64_t>(size_hint, bytes.size()))};
}

uint64_t nanos_since(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

std::string status_kind(const Status& status) {
  // Group errors by what went wrong, not by their (per-request) messages.
  if (const size_t at = status.message().find("HTTP "); at != std::string::npos) {
    return status.message().substr(at, 8);
  }
  return std::string(code_name(status.code()));
}

// The error of a non-2xx answer, named by its status (the body is read and dropped).
http::Awaitable<Status> drain_error(http::Call& call, int status, std::span<char> buffer) {
  std::string text;
  for (int i = 0; i < 64; ++i) {  // at most 64 buffers of an error body
    auto n = co_await call.body().read(buffer);
    if (!n || *n == 0) break;
    if (text.size() < 300) text.append(buffer.data(), std::min<size_t>(*n, 300 - text.size()));
  }
  co_return Status::unavailable("HTTP {}: {}", status, text);
}

http::Awaitable<Outcome> get_object(http::Client& http, Destination to, std::span<char> buffer, ChunkSink* sink) {
  const auto start = std::chrono::steady_clock::now();
  http::ClientRequest request;
  request.method = http::Method::kGet;
  request.target = std::move(to.target);
  auto call = co_await http.start(*to.endpoint, std::move(request), uint64_t{0});
  if (!call) {
    Outcome failed;
    failed.status = std::move(call).error();
    co_return failed;
  }
  co_return co_await read_answer(**call, start, buffer, sink);
}

http::Awaitable<Outcome> read_answer(http::Call& call, std::chrono::steady_clock::time_point start,
                                     std::span<char> buffer, ChunkSink* sink) {
  Outcome out;
  auto head = co_await call.finish();
  out.ttfb_ns = nanos_since(start);
  if (!head) {
    out.status = std::move(head).error();
    co_return out;
  }
  if (head->status != 200 && head->status != 206) {
    out.status = co_await drain_error(call, head->status, buffer);
    co_return out;
  }
  for (;;) {
    auto n = co_await call.body().read(buffer);
    if (!n) {
      out.status = std::move(n).error();
      co_return out;
    }
    if (*n == 0) break;
    out.bytes += *n;
    if (sink != nullptr) co_await sink->take(*n);
  }
  if (head->content_length && out.bytes != *head->content_length) {
    out.status = Status::unavailable("short body: {} of {} bytes", out.bytes, *head->content_length);
  }
  co_return out;
}

http::Awaitable<Outcome> read_file(const std::string& path, std::span<char> buffer, ChunkSink* sink) {
  Outcome out;
  const auto start = std::chrono::steady_clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.status = Status::from_errno(errno, path);
    co_return out;
  }
  for (bool first = true;; first = false) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (first) out.ttfb_ns = nanos_since(start);
    if (n < 0) {
      out.status = Status::from_errno(errno, path);
      break;
    }
    if (n == 0) break;
    out.bytes += static_cast<uint64_t>(n);
    if (sink != nullptr) co_await sink->take(static_cast<size_t>(n));
  }
  ::close(fd);
  co_return out;
}

namespace {

double cpu_seconds(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoull(field);
    if (i == 15) {
      stime = std::stoull(field);
      break;
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

uint64_t rss_bytes(int pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace

UsageProbe::UsageProbe(std::vector<int> pids) : pids_(std::move(pids)) {
  for (int pid : pids_) start_cpu_s_ += cpu_seconds(pid);
  sample();
}

void UsageProbe::sample() {
  uint64_t rss = 0;
  for (int pid : pids_) rss += rss_bytes(pid);
  peak_rss_ = std::max(peak_rss_, rss);
}

ServerUsage UsageProbe::finish() {
  sample();
  ServerUsage usage;
  for (int pid : pids_) usage.cpu_s += cpu_seconds(pid);
  usage.cpu_s -= start_cpu_s_;
  usage.peak_rss_bytes = peak_rss_;
  return usage;
}

void watch_progress(const Config& config, UsageProbe& probe, const std::atomic<bool>& done,
                    const std::atomic<uint64_t>& ops, const std::atomic<uint64_t>& bytes, std::string_view unit) {
  const bool is_tty = ::isatty(STDERR_FILENO) != 0;
  const auto every = is_tty ? std::chrono::seconds(1) : std::chrono::seconds(10);
  const auto start = std::chrono::steady_clock::now();
  auto last_print = start;
  uint64_t last_ops = 0, last_bytes = 0;
  bool printed = false;
  while (!done.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    probe.sample();
    const auto now = std::chrono::steady_clock::now();
    if (!config.progress || now - last_print < every) continue;
    const double dt = std::chrono::duration<double>(now - last_print).count();
    const uint64_t o = ops.load(), b = bytes.load();
    std::fprintf(stderr, "%s[%5.0fs] %10.0f %s/s %9.1f MB/s  total %llu%s", is_tty ? "\r" : "",
                 std::chrono::duration<double>(now - start).count(), static_cast<double>(o - last_ops) / dt,
                 std::string(unit).c_str(), static_cast<double>(b - last_bytes) / dt / 1e6,
                 static_cast<unsigned long long>(o), is_tty ? "   " : "\n");
    std::fflush(stderr);
    printed = true;
    last_print = now;
    last_ops = o;
    last_bytes = b;
  }
  if (printed && is_tty) std::fprintf(stderr, "\n");
}

Result<std::vector<std::string>> object_names(const Config& config) {
  std::vector<std::string> names;
  if (config.objects > 0) {
    const std::string format = config.name_format.empty() ? "{:08}" : config.name_format;
    names.reserve(config.objects);
    for (size_t i = 0; i < config.objects; ++i) {
      try {
        names.push_back(config.prefix + fmt::format(fmt::runtime(format), i));
      } catch (const fmt::format_error& e) {
        return Status::invalid_argument("--name-format '{}' does not format an index: {}", format, e.what());
      }
    }
    return names;
  }
  if (config.path == Path::kFile || !config.dir.empty()) {  // reading them, or PUTting them
    std::error_code ec;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(config.dir, ec)) {
      if (!entry.is_regular_file()) continue;
      std::string name = std::filesystem::relative(entry.path(), config.dir).string();
      if (name.rfind(config.prefix, 0) == 0) names.push_back(std::move(name));
    }
    if (ec) return Status::not_found("cannot list {}: {}", config.dir, ec.message());
  } else if (config.path == Path::kUrl) {
    return Status::invalid_argument("--url needs --objects N (and --prefix/--name-format) to name the objects");
  } else {
    ASSIGN_OR_RETURN(auto setup, client::Client::create(config.endpoint, config.credentials));
    ASSIGN_OR_RETURN(auto listed, setup->list_all(config.bucket, config.prefix));
    for (auto& entry : listed) names.push_back(std::move(entry.name));
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) return Status::not_found("no objects under '{}' to read", config.prefix);
  return names;
}

}  // namespace silo::bench
