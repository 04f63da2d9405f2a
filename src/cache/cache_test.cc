#include "cache/cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "http/testing/fake_exchange.h"

namespace silo::cache {
namespace {

namespace asio = boost::asio;

// A remote store in memory. Counts the GETs per object; can cut a GET after its first half
// or fail it outright. Every call yields to the executor first, so that concurrent callers
// interleave as they would over a network.
class FakeBackend : public backend::ObjectBackend {
 public:
  struct Object {
    std::string bytes;
    std::string etag;
  };

  void put_object(const std::string& name, std::string bytes, std::string etag) {
    objects_[name] = Object{std::move(bytes), std::move(etag)};
  }
  int gets_of(const std::string& name) const {
    auto it = gets_.find(name);
    return it == gets_.end() ? 0 : it->second;
  }
  int heads() const { return heads_; }
  // From now on every GET sends the first half of the asked bytes, then fails with `s`.
  void cut_gets(Status s) { cut_ = std::move(s); }

  http::Awaitable<Status> check_bucket() override { co_return Status::ok(); }

  http::Awaitable<Result<backend::RemoteObject>> head(std::string name) override {
    co_await yield();
    ++heads_;
    auto it = objects_.find(name);
    if (it == objects_.end()) co_return Status::not_found("no {}", name);
    co_return describe(name, it->second);
  }

  http::Awaitable<Result<backend::RemoteObject>> get(std::string name, backend::GetOptions options,
                                                     backend::Sink sink) override {
    co_await yield();
    ++gets_[name];
    auto it = objects_.find(name);
    if (it == objects_.end()) co_return Status::not_found("no {}", name);
    const Object& object = it->second;
    if (!options.if_match.empty() && options.if_match != object.etag) {
      co_return Status::failed_precondition("{} changed", name);
    }
    uint64_t offset = 0;
    uint64_t length = object.bytes.size();
    if (options.range) {
      if (options.range->offset >= object.bytes.size()) co_return Status::out_of_range("range of {}", name);
      offset = options.range->offset;
      length = std::min<uint64_t>(options.range->length, object.bytes.size() - offset);
    }
    const backend::RemoteObject remote = describe(name, object);
    if (options.on_object) options.on_object(remote);
    if (cut_) {
      const std::span<const char> half(object.bytes.data() + offset, length / 2);
      CO_RETURN_IF_ERROR(co_await sink(half));
      co_return *cut_;
    }
    // Two chunks, with a yield between: readers see a growing file.
    const uint64_t first = length / 2;
    CO_RETURN_IF_ERROR(co_await sink(std::span<const char>(object.bytes.data() + offset, first)));
    co_await yield();
    CO_RETURN_IF_ERROR(co_await sink(std::span<const char>(object.bytes.data() + offset + first, length - first)));
    co_return remote;
  }

  http::Awaitable<Result<backend::RemoteObject>> put(std::string name, uint64_t size,
                                                     backend::Source source) override {
    std::string bytes(size, '\0');
    for (uint64_t at = 0; at < size;) {
      CO_ASSIGN_OR_RETURN(const size_t n, co_await source(at, std::span<char>(bytes.data() + at, size - at)));
      if (n == 0) co_return Status::data_loss("source of {} ended early", name);
      at += n;
    }
    const std::string etag = "put-" + std::to_string(size);
    put_object(name, std::move(bytes), etag);
    co_return describe(name, objects_[name]);
  }

  http::Awaitable<Status> remove(std::string name) override {
    objects_.erase(name);
    co_return Status::ok();
  }

  http::Awaitable<Result<backend::RemotePage>> list(std::string prefix, std::string token, size_t limit) override {
    co_await yield();
    backend::RemotePage page;
    for (auto it = objects_.upper_bound(token); it != objects_.end() && page.objects.size() < limit; ++it) {
      if (it->first.starts_with(prefix)) page.objects.push_back(describe(it->first, it->second));
    }
    co_return page;
  }

 private:
  static backend::RemoteObject describe(const std::string& name, const Object& object) {
    return backend::RemoteObject{name, object.bytes.size(), object.etag, 1'700'000'000, "application/octet-stream"};
  }
  static http::Awaitable<void> yield() {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  }

  std::map<std::string, Object> objects_;
  std::map<std::string, int> gets_;
  int heads_ = 0;
  std::optional<Status> cut_;
};

using http::testing::FakeExchange;

// Runs `work` and everything it spawns to completion on a private io_context.
template <typename T>
T run(http::Awaitable<T> work) {
  asio::io_context io;
  std::optional<T> out;
  asio::co_spawn(io, [&]() -> http::Awaitable<void> { out.emplace(co_await std::move(work)); }, asio::detached);
  io.run();
  return std::move(*out);
}

constexpr uint64_t kRemoteId = 1;
constexpr uint64_t kLocalId = 2;

// A one-target node ("t1") with a remote bucket ("cache", backed by `backend`) and a
// local one ("local"), its store on a temp dir, and its Cache.
class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("silo-cache-" + std::to_string(std::random_device()()));
    std::filesystem::create_directories(dir_ / "state");
    auto maps = cluster::ClusterMaps::open((dir_ / "state").string());
    ASSERT_TRUE(maps.has_value()) << maps.status();
    maps_ = std::move(*maps);
    wire::NodeMap nodes;
    nodes.set_version(1);
    auto* t1 = nodes.add_nodes();
    t1->set_id("t1");
    t1->set_role(wire::NODE_ROLE_TARGET);
    t1->set_state(wire::NODE_STATE_ONLINE);
    ASSERT_TRUE(maps_->install(nodes).has_value());
    wire::BucketMap buckets;
    buckets.set_version(1);
    buckets.set_next_bucket_id(3);
    remote_.set_name("cache");
    remote_.set_id(kRemoteId);
    remote_.mutable_props()->set_durability(wire::DURABILITY_PAGE_CACHE);
    remote_.mutable_props()->mutable_backend()->set_provider("s3");
    remote_.mutable_props()->mutable_backend()->set_bucket("origin");
    local_.set_name("local");
    local_.set_id(kLocalId);
    local_.mutable_props()->set_durability(wire::DURABILITY_PAGE_CACHE);
    *buckets.add_buckets() = remote_;
    *buckets.add_buckets() = local_;
    ASSERT_TRUE(maps_->install(buckets).has_value());

    store::StoreOptions store_options;
    store_options.mountpaths = {(dir_ / "mp1").string()};
    store_options.threads_per_mountpath = 2;
    auto store = store::Store::open(std::move(store_options));
    ASSERT_TRUE(store.has_value()) << store.status();
    store_ = std::move(*store);
    config_ = std::make_shared<config::LiveConfig>(config::ClusterConfig{});
    CacheOptions options;
    options.node_id = "t1";
    options.config = config_;
    options.backend_of = [this](const wire::Bucket& bucket) -> Result<std::shared_ptr<backend::ObjectBackend>> {
      if (bucket.id() != kRemoteId) return Status::invalid_argument("bucket {} is not remote", bucket.name());
      return std::static_pointer_cast<backend::ObjectBackend>(backend_);
    };
    options.fullest_mountpath_percent = [this] { return usage_.empty() ? 0.0 : next_usage(); };
    cache_ = std::make_unique<Cache>(std::move(options), *maps_, *store_, stats_);
  }

  void TearDown() override {
    cache_.reset();
    if (store_) store_->close();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  ObjectRef remote(const std::string& name) const { return {BucketId(kRemoteId), name}; }
  ObjectRef local(const std::string& name) const { return {BucketId(kLocalId), name}; }

  // Commits `bytes` as `object` straight into the store (a copy written long ago).
  void put_here(const ObjectRef& object, const std::string& bytes, const std::string& remote_etag = "") {
    store::PutOptions options;
    options.durability = store::Durability::kPageCache;
    if (!remote_etag.empty()) options.attributes.mutable_remote()->set_etag(remote_etag);
    const auto put = [&]() -> http::Awaitable<Status> {
      CO_ASSIGN_OR_RETURN(auto writer, co_await store_->create(object, std::move(options)));
      CO_RETURN_IF_ERROR(co_await writer->write(std::span<const char>(bytes.data(), bytes.size())));
      co_return (co_await writer->commit()).status();
    };
    const Status s = run(put());
    ASSERT_TRUE(s.is_ok()) << s;
  }
  bool is_here(const ObjectRef& object) { return run(store_->stat(object)).has_value(); }
  std::string bytes_here(const ObjectRef& object) {
    auto opened = run(store_->open(object));
    if (!opened) return "<" + opened.status().to_string() + ">";
    std::string out(opened->record().size(), '\0');
    const ssize_t n = ::pread(opened->fd(), out.data(), out.size(), 0);
    return n == static_cast<ssize_t>(out.size()) ? out : "<short read>";
  }
  // Object files and work files on the mountpath.
  size_t data_files() const {
    size_t n = 0;
    for (const char* sub : {"obj", "work"}) {
      if (!std::filesystem::exists(dir_ / "mp1" / sub)) continue;
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ / "mp1" / sub)) {
        if (e.is_regular_file()) ++n;
      }
    }
    return n;
  }
  double next_usage() {
    const double u = usage_.front();
    if (usage_.size() > 1) usage_.erase(usage_.begin());
    return u;
  }
  uint64_t counter(const std::string& name) { return stats_.counter(name, "").value(); }

  std::filesystem::path dir_;
  std::unique_ptr<cluster::ClusterMaps> maps_;
  std::unique_ptr<store::Store> store_;
  std::shared_ptr<config::LiveConfig> config_;
  std::shared_ptr<FakeBackend> backend_ = std::make_shared<FakeBackend>();
  std::vector<double> usage_;  // what the fullest mountpath reports, one value per look (the last stays)
  stats::Registry stats_;
  std::unique_ptr<Cache> cache_;
  wire::Bucket remote_;
  wire::Bucket local_;
};

TEST_F(CacheTest, TwoConcurrentColdReadsOfOneObjectShareOneBackendFetch) {
  const std::string bytes(100'000, 'x');
  backend_->put_object("a", bytes, "etag-a");
  std::vector<Result<uint64_t>> fetched;
  std::vector<std::shared_ptr<Fetch>> fetches;
  asio::io_context io;
  for (int i = 0; i < 2; ++i) {
    asio::co_spawn(
        io,
        [&]() -> http::Awaitable<void> {
          auto cold = co_await cache_->fetch(remote_, remote("a"));
          if (!cold) {
            fetched.push_back(cold.status());
            co_return;
          }
          EXPECT_EQ(cold->record.size(), bytes.size());
          EXPECT_EQ(cold->record.remote().etag(), "etag-a");
          fetches.push_back(cold->fetch);
          fetched.push_back(co_await cache_->wait_fetched(*cold->fetch));
        },
        asio::detached);
  }
  io.run();
  ASSERT_EQ(fetched.size(), 2u);
  for (const auto& f : fetched) {
    ASSERT_TRUE(f.has_value()) << f.status();
    EXPECT_EQ(*f, bytes.size());
  }
  ASSERT_EQ(fetches.size(), 2u);
  EXPECT_EQ(fetches[0], fetches[1]);
  EXPECT_EQ(backend_->gets_of("a"), 1);
  EXPECT_EQ(counter("silo_target_cache_misses_total"), 1u);
  EXPECT_EQ(bytes_here(remote("a")), bytes);
  auto record = run(store_->stat(remote("a")));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->remote().etag(), "etag-a");
  // The fetched object waits for the target to give the other holders their copies.
  auto next = run(cache_->next_fetched());
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->object, remote("a"));
  EXPECT_EQ(next->bucket.id(), kRemoteId);
}

TEST_F(CacheTest, ALargeObjectComesInRangeGetsWrittenInOrder) {
  ASSERT_TRUE(config_->set_overrides(R"({"cache":{"range_get_size":1048576,"range_get_streams":2}})").is_ok());
  std::string bytes(5 * 1048576 + 123, '\0');
  std::mt19937 rng(7);
  for (char& c : bytes) c = static_cast<char>(rng());
  backend_->put_object("big", bytes, "etag-big");
  const auto fetch_all = [&]() -> http::Awaitable<Result<uint64_t>> {
    CO_ASSIGN_OR_RETURN(ColdRead cold, co_await cache_->fetch(remote_, remote("big")));
    co_return co_await cache_->wait_fetched(*cold.fetch);
  };
  auto fetched = run(fetch_all());
  ASSERT_TRUE(fetched.has_value()) << fetched.status();
  EXPECT_EQ(*fetched, bytes.size());
  EXPECT_EQ(backend_->gets_of("big"), 6);  // the first chunk, then five ranges
  EXPECT_TRUE(bytes_here(remote("big")) == bytes);
}

TEST_F(CacheTest, AFailedFetchLeavesNothingInTheStore) {
  backend_->put_object("a", std::string(100'000, 'y'), "etag-a");
  backend_->cut_gets(Status::unavailable("connection reset"));
  const auto fetch_all = [&]() -> http::Awaitable<Result<uint64_t>> {
    CO_ASSIGN_OR_RETURN(ColdRead cold, co_await cache_->fetch(remote_, remote("a")));
    co_return co_await cache_->wait_fetched(*cold.fetch);
  };
  auto fetched = run(fetch_all());
  ASSERT_FALSE(fetched.has_value());
  EXPECT_EQ(fetched.status().code(), Code::kUnavailable);
  EXPECT_FALSE(is_here(remote("a")));
  EXPECT_EQ(data_files(), 0u);  // no work file left either
  EXPECT_EQ(counter("silo_target_backend_errors_total"), 1u);
  // Nothing to replicate; and the next read starts a new fetch.
  cache_->stop();
  EXPECT_FALSE(run(cache_->next_fetched()).has_value());
  auto again = run(fetch_all());
  EXPECT_FALSE(again.has_value());
  EXPECT_EQ(backend_->gets_of("a"), 2);
}

TEST_F(CacheTest, ReadersStreamFromTheGrowingWorkFileAndGetTheirBytes) {
  ASSERT_TRUE(config_->set_overrides(R"({"cache":{"range_get_size":1048576,"range_get_streams":1}})").is_ok());
  std::string bytes(3 * 1048576 + 17, '\0');
  std::mt19937 rng(11);
  for (char& c : bytes) c = static_cast<char>(rng());
  backend_->put_object("s", bytes, "etag-s");
  asio::io_context io;
  FakeExchange whole(io.get_executor());
  FakeExchange ranged(io.get_executor());
  Status whole_status = Status::internal("not run");
  Status ranged_status = Status::internal("not run");
  const uint64_t offset = 1048576 - 10;  // across a chunk boundary
  const uint64_t length = 1048576 + 20;
  const auto read = [&](FakeExchange& exchange, Status& out, uint64_t at, uint64_t n) -> http::Awaitable<void> {
    auto cold = co_await cache_->fetch(remote_, remote("s"));
    if (!cold) {
      out = cold.status();
      co_return;
    }
    out = co_await cache_->send_fetching(exchange, *cold->fetch, http::ResponseHead{}, at, n);
  };
  asio::co_spawn(io, read(whole, whole_status, 0, bytes.size()), asio::detached);
  asio::co_spawn(io, read(ranged, ranged_status, offset, length), asio::detached);
  io.run();
  ASSERT_TRUE(whole_status.is_ok()) << whole_status;
  ASSERT_TRUE(ranged_status.is_ok()) << ranged_status;
  EXPECT_EQ(whole.length(), bytes.size());
  EXPECT_TRUE(whole.sent() == bytes);
  EXPECT_GT(whole.sends(), 1) << "sent while the fetch went on, not once at the end";
  EXPECT_TRUE(ranged.sent() == bytes.substr(offset, length));
  EXPECT_EQ(backend_->gets_of("s"), 4);  // one fetch for both readers
  EXPECT_EQ(counter("silo_target_bytes_sent_total"), bytes.size() + length);
}

TEST_F(CacheTest, AReaderOfAFetchThatFailsGetsACutAnswerNeverWrongBytes) {
  const std::string bytes(100'000, 'z');
  backend_->put_object("a", bytes, "etag-a");
  backend_->cut_gets(Status::unavailable("connection reset"));
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Status status;
  asio::co_spawn(
      io,
      [&]() -> http::Awaitable<void> {
        auto cold = co_await cache_->fetch(remote_, remote("a"));
        if (!cold) {
          status = cold.status();
          co_return;
        }
        status = co_await cache_->send_fetching(exchange, *cold->fetch, http::ResponseHead{}, 0, bytes.size());
      },
      asio::detached);
  io.run();
  EXPECT_EQ(status.code(), Code::kUnavailable) << status;
  EXPECT_LT(exchange.sent().size(), bytes.size());
  EXPECT_EQ(exchange.sent(), bytes.substr(0, exchange.sent().size()));
  EXPECT_FALSE(is_here(remote("a")));
}

TEST_F(CacheTest, AFetchOfAnObjectTheBackendDoesNotHaveIsNotFound) {
  auto cold = run(cache_->fetch(remote_, remote("missing")));
  ASSERT_FALSE(cold.has_value());
  EXPECT_EQ(cold.status().code(), Code::kNotFound);
  EXPECT_FALSE(is_here(remote("missing")));
  EXPECT_EQ(counter("silo_target_backend_errors_total"), 0u);  // a miss at the backend is no error
}

TEST_F(CacheTest, AFetchIntoABucketBeingDeletedCommitsNothing) {
  backend_->put_object("a", "bytes", "etag-a");
  wire::BucketMap buckets = *maps_->bucket_map();
  buckets.set_version(2);
  for (auto& b : *buckets.mutable_buckets()) {
    if (b.id() == kRemoteId) b.set_is_deleting(true);
  }
  ASSERT_TRUE(maps_->install(buckets).has_value());
  // What the target does when that map arrives (Target::apply_bucket_map): the store
  // refuses every commit into the bucket from then on, the cache's included.
  store_->close_bucket(BucketId(kRemoteId));
  const auto fetch_all = [&]() -> http::Awaitable<Result<uint64_t>> {
    CO_ASSIGN_OR_RETURN(ColdRead cold, co_await cache_->fetch(remote_, remote("a")));
    co_return co_await cache_->wait_fetched(*cold.fetch);
  };
  auto fetched = run(fetch_all());
  ASSERT_FALSE(fetched.has_value());
  EXPECT_EQ(fetched.status().reason(), "NoSuchBucket");
  EXPECT_FALSE(is_here(remote("a")));
}

TEST_F(CacheTest, LruEvictionBetweenTheWatermarksTakesTheLeastRecentlyUsedRemoteObjectsOnly) {
  // Written oldest first: a local object older than all, then r1..r4.
  put_here(local("l1"), "local bytes");
  for (const char* name : {"r1", "r2", "r3", "r4"}) put_here(remote(name), std::string("bytes of ") + name);
  cache_->note_hit(remote("r1"));  // read now: the most recently used
  // Past the low watermark (75) at the first look; under it after two objects went.
  usage_ = {95, 50};
  const uint64_t evicted = run(cache_->evict_lru());
  EXPECT_EQ(evicted, 2u);
  EXPECT_FALSE(is_here(remote("r2")));
  EXPECT_FALSE(is_here(remote("r3")));
  EXPECT_TRUE(is_here(remote("r4")));
  EXPECT_TRUE(is_here(remote("r1")));
  EXPECT_TRUE(is_here(local("l1")));
  EXPECT_EQ(counter("silo_target_evicted_objects_total"), 2u);
}

TEST_F(CacheTest, LruEvictionNeverTakesLocalObjectsEvenWhenStillPastTheLowWatermark) {
  put_here(local("l1"), "local bytes");
  put_here(local("l2"), "local bytes");
  put_here(remote("r1"), "remote bytes");
  usage_ = {99};  // never gets better
  EXPECT_EQ(run(cache_->evict_lru()), 1u);
  EXPECT_FALSE(is_here(remote("r1")));
  EXPECT_TRUE(is_here(local("l1")));
  EXPECT_TRUE(is_here(local("l2")));
}

TEST_F(CacheTest, PrefetchSkipsObjectsCachedWithTheBackendsEtag) {
  backend_->put_object("p/same", "same bytes", "etag-same");
  backend_->put_object("p/changed", "new bytes", "etag-new");
  backend_->put_object("p/new", "new object", "etag-n");
  put_here(remote("p/same"), "same bytes", "etag-same");
  put_here(remote("p/changed"), "old bytes", "etag-old");
  wire::JobRequest request;
  request.kind = "prefetch";
  request.bucket = "cache";
  request.selection.prefix = "p/";
  asio::io_context io;
  ASSERT_TRUE(cache_->start_prefetch(io.get_executor(), "prefetch-1", request, remote_));
  EXPECT_FALSE(cache_->start_prefetch(io.get_executor(), "prefetch-1", request, remote_));  // a retried start
  io.run();
  auto progress = cache_->prefetch_progress("prefetch-1");
  ASSERT_TRUE(progress.has_value());
  EXPECT_TRUE(progress->finished());
  EXPECT_EQ(progress->objects_skipped(), 1u);
  EXPECT_EQ(progress->objects_moved(), 2u);  // fetched
  EXPECT_EQ(progress->objects_scanned(), 3u);
  EXPECT_EQ(progress->errors(), 0u) << progress->last_error();
  EXPECT_EQ(backend_->gets_of("p/same"), 0);
  EXPECT_EQ(backend_->gets_of("p/changed"), 1);
  EXPECT_EQ(backend_->gets_of("p/new"), 1);
  EXPECT_EQ(bytes_here(remote("p/changed")), "new bytes");
  EXPECT_EQ(bytes_here(remote("p/new")), "new object");
  EXPECT_FALSE(cache_->prefetch_progress("prefetch-2").has_value());
}

TEST_F(CacheTest, PrefetchOfNamesAsksTheBackendForTheEtagOfCachedOnes) {
  backend_->put_object("same", "same bytes", "etag-same");
  put_here(remote("same"), "same bytes", "etag-same");
  wire::JobRequest request;
  request.kind = "prefetch";
  request.bucket = "cache";
  request.selection.names = {"same"};
  asio::io_context io;
  ASSERT_TRUE(cache_->start_prefetch(io.get_executor(), "prefetch-1", request, remote_));
  io.run();
  auto progress = cache_->prefetch_progress("prefetch-1");
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->objects_skipped(), 1u);
  EXPECT_EQ(backend_->heads(), 1);
  EXPECT_EQ(backend_->gets_of("same"), 0);
}

TEST_F(CacheTest, WriteThroughRecordsTheBackendsEtag) {
  put_here(remote("w"), "written here");
  const Status s = run(cache_->write_through(remote_, remote("w")));
  ASSERT_TRUE(s.is_ok()) << s;
  auto record = run(store_->stat(remote("w")));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->remote().etag(), "put-12");
  EXPECT_EQ(backend_->gets_of("w"), 0);
}

TEST_F(CacheTest, EvictRemovesTheSelectedCachedObjects) {
  put_here(remote("a/1"), "1");
  put_here(remote("a/2"), "2");
  put_here(remote("b/1"), "3");
  wire::ObjectSelection selection;
  selection.prefix = "a/";
  auto evicted = run(cache_->evict(remote_, selection));
  ASSERT_TRUE(evicted.has_value()) << evicted.status();
  EXPECT_EQ(*evicted, 2u);
  EXPECT_FALSE(is_here(remote("a/1")));
  EXPECT_TRUE(is_here(remote("b/1")));
}

TEST_F(CacheTest, OutOfSpaceRefusesNewObjectsUntilSpaceIsFreed) {
  EXPECT_TRUE(cache_->check_space().is_ok());
  ASSERT_TRUE(config_->set_overrides(R"({"cache":{"space_check_interval_ms":1}})").is_ok());
  // Runs the space watcher until check_space() says `is_full` (a condition with a
  // deadline, not a sleep).
  const auto watch_until = [&](bool is_full) {
    asio::io_context io;
    Cache& cache = *cache_;
    asio::co_spawn(io, cache.watch_space(), asio::detached);
    asio::co_spawn(
        io,
        [&]() -> http::Awaitable<void> {
          asio::steady_timer timer(co_await asio::this_coro::executor);
          for (int i = 0; i < 5000 && cache.check_space().is_ok() == is_full; ++i) {
            timer.expires_after(std::chrono::milliseconds(1));
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
          }
          cache.stop();
        },
        asio::detached);
    io.run();
  };
  usage_ = {97};  // past out-of-space (95), nothing to evict
  watch_until(true);
  const Status s = cache_->check_space();
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.reason(), "InsufficientStorage");
  // A fetch is a new object too: refused before the backend is asked.
  backend_->put_object("a", "bytes", "etag-a");
  auto cold = run(cache_->fetch(remote_, remote("a")));
  ASSERT_FALSE(cold.has_value());
  EXPECT_EQ(cold.status().code(), Code::kResourceExhausted);
  EXPECT_EQ(backend_->gets_of("a"), 0);
}

TEST_F(CacheTest, OutOfSpaceEndsOnceTheMountpathsAreUnderTheMarkAgain) {
  ASSERT_TRUE(config_->set_overrides(R"({"cache":{"space_check_interval_ms":1}})").is_ok());
  // Full at the first look, then 50 %: the watcher takes new objects again.
  usage_ = {97, 97, 50};
  asio::io_context io;
  Cache& cache = *cache_;
  bool was_full = false;
  asio::co_spawn(io, cache.watch_space(), asio::detached);
  asio::co_spawn(
      io,
      [&]() -> http::Awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        for (int i = 0; i < 5000; ++i) {
          const bool is_full = !cache.check_space().is_ok();
          was_full = was_full || is_full;
          if (was_full && !is_full) break;
          timer.expires_after(std::chrono::milliseconds(1));
          boost::system::error_code ec;
          co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        cache.stop();
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(was_full);
  EXPECT_TRUE(cache_->check_space().is_ok());
}

}  // namespace
}  // namespace silo::cache
