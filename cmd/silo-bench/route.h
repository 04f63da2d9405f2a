#pragma once

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/result.h"
#include "bench.h"
#include "http/client.h"
#include "client/owner_map.h"

namespace silo::bench {

// Where one object request goes, and with which request-target.
struct Destination {
  const http::Endpoint* endpoint = nullptr;
  std::string target;
};

// Turns object names into destinations for the configured path: the owner target by
// HRW over the cluster's node map (direct), the proxy with an S3 path-style target
// (gateway), or the reference server (url). Immutable once built; share across threads.
class Router {
 public:
  static Result<std::shared_ptr<const Router>> create(const Config& config);

  Destination object(std::string_view name) const;
  // The same for member `member` of the archive object `name` (?archpath=).
  Destination member(std::string_view name, std::string_view member) const;
  // POST /v1/batch on the endpoint (the proxy).
  Destination batch() const { return {&gateway_, "/v1/batch"}; }
  // One page of the bucket's listing through the proxy (native JSON or S3 XML).
  Destination list_page(std::string_view token, size_t limit) const;
  bool signs() const { return path_ != Path::kUrl; }

 private:
  Router() = default;

  Path path_ = Path::kDirect;
  std::string bucket_, prefix_;
  uint64_t bucket_id_ = 0;
  std::optional<client::OwnerMap> owners_;  // direct: which target owns a name
  std::vector<http::Endpoint> targets_;      // index-aligned with owners_->urls()
  http::Endpoint gateway_;
  http::Endpoint url_endpoint_;
  std::string url_path_;  // "/dir" of --url, no trailing slash
};

// Threads each running their own io_context and http::Client (nothing shared between
// connections of different threads: the shard-per-core model the servers use too).
class IoPool {
 public:
  IoPool(int threads, const Config& config, bool sign, size_t connections_per_thread);
  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  size_t size() const { return shards_.size(); }
  boost::asio::io_context& io(size_t i) { return *shards_[i]->io; }
  http::Client& client(size_t i) { return *shards_[i]->client; }
  // Counts a worker coroutine of shard `i`; when the last one calls worker_done(), the
  // shard's io_context stops (pooled idle connections would keep it running).
  void add_worker(size_t i) { ++shards_[i]->workers; }
  void worker_done(size_t i);
  // Runs every io_context until it is stopped or out of work; returns when all are.
  void run();

 private:
  struct Shard {
    std::unique_ptr<boost::asio::io_context> io;
    std::shared_ptr<http::Client> client;
    int workers = 0;  // touched only on the shard's io thread once it runs
  };
  std::vector<std::unique_ptr<Shard>> shards_;
};

// A random body for PUTs, reused for every request (no allocation per request).
std::span<const char> payload(uint64_t size_hint);

// Polls `done` while sampling server usage and printing a progress line to stderr.
void watch_progress(const Config& config, UsageProbe& probe, const std::atomic<bool>& done,
                    const std::atomic<uint64_t>& ops, const std::atomic<uint64_t>& bytes,
                    std::string_view unit);

uint64_t nanos_since(std::chrono::steady_clock::time_point start);

// What one request did.
struct Outcome {
  Status status;
  uint64_t bytes = 0;
  uint64_t ttfb_ns = 0;     // until the response head (GET: the first byte)
  size_t keys = 0;          // list
  std::string next_token;   // list
};

// Told about every piece of an object as it arrives (the simulated accelerators count
// samples with it); may wait, which slows the reader down (back-pressure).
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  virtual http::Awaitable<void> take(size_t bytes) = 0;
};

// The error of a non-2xx answer, named by its status (the body is read and dropped).
http::Awaitable<Status> drain_error(http::Call& call, int status, std::span<char> buffer);
// GETs an object through `buffer`, dropping its bytes after `sink` (may be null) saw them.
http::Awaitable<Outcome> get_object(http::Client& http, Destination to, std::span<char> buffer, ChunkSink* sink);
// The answer of a request sent at `start` (its body sent too): 200 or 206 read to its end
// through `buffer` (to `sink`, may be null), else the error drained.
http::Awaitable<Outcome> read_answer(http::Call& call, std::chrono::steady_clock::time_point start,
                                     std::span<char> buffer, ChunkSink* sink);
// Reads a local file the same way (blocking reads on the calling io thread).
http::Awaitable<Outcome> read_file(const std::string& path, std::span<char> buffer, ChunkSink* sink);
std::string status_kind(const Status& status);

}  // namespace silo::bench
