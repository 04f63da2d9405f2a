#pragma once

// An in-process cluster of targets for the unit tests of the data services beneath the
// target (replication, erasure, rebalance, scrub). Each target has its own maps, store (on
// a temp dir), Peers, Replication and a loopback http::Server that answers
// /v1/internal/objects as silod does; all of them run on one io_context on the test's
// thread, so a test drives them one awaitable at a time. Header only, for tests: not part
// of silo_replication (like store/testing/).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "cluster/cluster_maps.h"
#include "config/live_config.h"
#include "http/client.h"
#include "http/reply.h"
#include "http/server.h"
#include "replication/peers.h"
#include "replication/replication.h"
#include "stats/registry.h"
#include "store/store.h"

namespace silo::replication::testing {

// One target of a TestTargets: what silod builds for the data services, less the role.
struct TestTarget {
  wire::NodeInfo info;  // as the node map lists it
  std::string dir;      // state/ and mp1/ below it
  std::unique_ptr<cluster::ClusterMaps> maps;
  std::unique_ptr<store::Store> store;
  std::shared_ptr<config::LiveConfig> config;
  stats::Registry stats;
  std::shared_ptr<http::Client> client;
  std::unique_ptr<http::Server> server;
  std::unique_ptr<Peers> peers;
  std::unique_ptr<Replication> replication;

  const std::string& id() const { return info.id(); }
  http::Endpoint endpoint() const { return *http::Endpoint::parse(info.url()); }
  uint64_t counter(const std::string& name) { return stats.counter(name, "").value(); }
};

// `count` targets t1..tN, all online in one node map (version 1), holding `buckets`.
// Creating it binds loopback ports; destroying it stops the servers and removes the dirs.
class TestTargets {
 public:
  TestTargets(int count, const std::vector<wire::Bucket>& buckets) {
    std::string pattern = (std::filesystem::temp_directory_path() / "silo-targets-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
    EXPECT_FALSE(root_.empty());
    wire::NodeMap nodes;
    nodes.set_version(1);
    nodes.set_primary_id("t1");
    for (int i = 1; i <= count; ++i) {
      auto target = std::make_unique<TestTarget>();
      TestTarget* t = target.get();
      t->dir = root_ + "/t" + std::to_string(i);
      t->config = std::make_shared<config::LiveConfig>(config::ClusterConfig{});
      http::ClientOptions client_options;
      client_options.connect_timeout = std::chrono::milliseconds(2000);
      client_options.io_timeout = std::chrono::milliseconds(10000);
      t->client = http::Client::create(io_.get_executor(), client_options);
      auto server = http::Server::create(io_, http::ServerOptions{}, [t](http::Exchange& exchange) {
        return serve(*t, exchange);
      });
      EXPECT_TRUE(server.has_value()) << server.status();
      if (!server) return;
      t->server = std::move(*server);
      t->server->start();
      t->info.set_id("t" + std::to_string(i));
      t->info.set_role(wire::NODE_ROLE_TARGET);
      t->info.set_state(wire::NODE_STATE_ONLINE);
      t->info.set_url("http://127.0.0.1:" + std::to_string(t->server->port()));
      *nodes.add_nodes() = t->info;
      targets_.push_back(std::move(target));
    }
    wire::BucketMap bucket_map;
    bucket_map.set_version(1);
    uint64_t next_id = 1;
    for (const auto& b : buckets) {
      *bucket_map.add_buckets() = b;
      next_id = std::max<uint64_t>(next_id, b.id() + 1);
    }
    bucket_map.set_next_bucket_id(next_id);
    // Opening a store and installing maps wait on fsyncs: the targets do it in parallel.
    for_each_target([&nodes, &bucket_map](TestTarget& t) { open_state(t, nodes, bucket_map); });
    for (auto& t : targets_) {
      if (!t->maps || !t->store) {
        ADD_FAILURE() << "target " << t->id() << " did not open under " << t->dir;
        std::abort();  // nothing a test does could run without it
      }
      t->peers = std::make_unique<Peers>(t->info, *t->maps, t->config);
      t->replication = std::make_unique<Replication>(*t->peers, *t->store, t->client, t->stats);
    }
  }

  ~TestTargets() {
    for (auto& t : targets_) {
      if (t->server) run(t->server->stop());
    }
    for (auto& t : targets_) {
      t->replication.reset();  // joins its reader threads
      t->peers.reset();
      t->server.reset();
      t->client.reset();
    }
    for_each_target([](TestTarget& t) {
      if (t.store) t.store->close();
      t.store.reset();
    });
    targets_.clear();
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }
  TestTargets(const TestTargets&) = delete;
  TestTargets& operator=(const TestTargets&) = delete;

  boost::asio::io_context& io() { return io_; }
  size_t size() const { return targets_.size(); }
  TestTarget& operator[](size_t i) { return *targets_.at(i); }
  TestTarget& by_id(std::string_view id) {
    for (auto& t : targets_) {
      if (t->id() == id) return *t;
    }
    ADD_FAILURE() << "no target " << id;
    return *targets_.front();
  }

  // Runs the io_context until `done()` holds; false when `limit` passed first (a hang is a
  // failure, not a stuck test). The servers serve meanwhile.
  bool run_until(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto give_up_at = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up_at) return false;
      io_.run_one_for(std::chrono::milliseconds(50));
    }
    return true;
  }
  // Runs `work` to its end on the io_context.
  template <typename T>
  T run(http::Awaitable<T> work) {
    std::optional<T> out;
    boost::asio::co_spawn(
        io_, [&out, work = std::move(work)]() mutable -> http::Awaitable<void> { out.emplace(co_await std::move(work)); },
        boost::asio::detached);
    EXPECT_TRUE(run_until([&out] { return out.has_value(); })) << "the work did not end";
    if (!out) std::abort();  // the awaitable may still reference the caller's frame
    return std::move(*out);
  }
  void run(http::Awaitable<void> work) {
    bool is_done = false;
    boost::asio::co_spawn(
        io_,
        [&is_done, work = std::move(work)]() mutable -> http::Awaitable<void> {
          co_await std::move(work);
          is_done = true;
        },
        boost::asio::detached);
    EXPECT_TRUE(run_until([&is_done] { return is_done; })) << "the work did not end";
    if (!is_done) std::abort();
  }

  // Installs on every target the next node map: the current one changed by `edit`.
  void change_node_map(const std::function<void(wire::NodeMap&)>& edit) {
    wire::NodeMap next = *targets_.front()->maps->node_map();
    next.set_version(next.version() + 1);
    edit(next);
    for (auto& t : targets_) EXPECT_TRUE(t->maps->install(next).has_value());
  }
  void set_state(std::string_view id, wire::NodeState state) {
    change_node_map([&](wire::NodeMap& map) {
      for (auto& n : *map.mutable_nodes()) {
        if (n.id() == id) n.set_state(state);
      }
    });
  }

  // The ids of the holders of `object` (owner first) under the current maps.
  std::vector<std::string> holder_ids(const ObjectRef& object) {
    std::vector<std::string> ids;
    for (const auto& n : targets_.front()->peers->holders_of(object)) ids.push_back(n.id());
    return ids;
  }
  // A name in `bucket` whose holders, owner first, begin with `ids`.
  std::string name_held_by(BucketId bucket, const std::vector<std::string>& ids, const std::string& prefix = "obj-") {
    for (int i = 0; i < 100000; ++i) {
      std::string name = prefix + std::to_string(i);
      const auto holders = holder_ids({bucket, name});
      if (holders.size() >= ids.size() && std::equal(ids.begin(), ids.end(), holders.begin())) return name;
    }
    ADD_FAILURE() << "no name is held by the targets asked for";
    return prefix;
  }

  // Commits `bytes` as `object` straight into `t`'s store; with `mtime`, as a copy that
  // has that modification time (two versions of one object in a known order).
  Result<wire::ObjectRecord> put(TestTarget& t, const ObjectRef& object, const std::string& bytes,
                                 std::optional<int64_t> mtime = std::nullopt) {
    store::PutOptions options;
    options.durability = store::Durability::kPageCache;
    if (mtime) {
      wire::ObjectRecord original;
      original.set_name(object.name);
      original.set_size(bytes.size());
      original.set_xxh3(xxh3_of(bytes));
      original.set_mtime_unix_nanos(*mtime);
      options.attributes = original;
      options.original = original;
    }
    auto work = [&t, object, &bytes, &options]() -> http::Awaitable<Result<wire::ObjectRecord>> {
      CO_ASSIGN_OR_RETURN(auto writer, co_await t.store->create(object, std::move(options)));
      CO_RETURN_IF_ERROR(co_await writer->write(std::span<const char>(bytes.data(), bytes.size())));
      co_return co_await writer->commit();
    };
    return run(work());
  }
  // The bytes of `object` in `t`'s store; nullopt when it has none (or cannot open it).
  std::optional<std::string> bytes_at(TestTarget& t, const ObjectRef& object) {
    auto opened = run(t.store->open(object));
    if (!opened) return std::nullopt;
    std::string out(opened->record().size(), '\0');
    const ssize_t n = ::pread(opened->fd(), out.data(), out.size(), 0);
    if (n != static_cast<ssize_t>(out.size())) return std::nullopt;
    return out;
  }
  std::optional<wire::ObjectRecord> record_at(TestTarget& t, const ObjectRef& object) {
    auto record = run(t.store->stat(object));
    if (!record) return std::nullopt;
    return std::move(*record);
  }
  // Flips the byte at `offset` (the first one by default) of the object's file in `t`'s
  // store; its record stays, so the bytes no longer match their XXH3 (nor the sum of the
  // block holding it).
  void corrupt(TestTarget& t, const ObjectRef& object, uint64_t offset = 0) {
    const std::string path = file_of(t, object);
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    char c = 0;
    ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(offset)), 1);
    c = static_cast<char>(~c);
    ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(offset)), 1);
    ::close(fd);
  }
  // Removes the object's file in `t`'s store; its record stays (a lost file).
  void lose_file(TestTarget& t, const ObjectRef& object) {
    const std::string path = file_of(t, object);
    ASSERT_EQ(::unlink(path.c_str()), 0) << path;
  }
  // A request to `t`'s server, answered in full.
  http::ClientResponse call(TestTarget& t, http::Method method, std::string target, std::string body = "") {
    http::ClientRequest request;
    request.method = method;
    request.target = std::move(target);
    auto answer = run(t.client->call(t.endpoint(), std::move(request), std::move(body), 64 * 1024 * 1024));
    EXPECT_TRUE(answer.has_value()) << answer.status();
    return answer ? std::move(*answer) : http::ClientResponse{};
  }

  static uint64_t xxh3_of(std::string_view bytes) {
    hash::Xxh3Stream stream;
    stream.update(std::span<const char>(bytes.data(), bytes.size()));
    return stream.digest();
  }

 private:
  static void open_state(TestTarget& t, const wire::NodeMap& nodes, const wire::BucketMap& buckets) {
    std::filesystem::create_directories(t.dir + "/state");
    auto maps = cluster::ClusterMaps::open(t.dir + "/state");
    if (!maps) return;
    if (!(*maps)->install(nodes).has_value() || !(*maps)->install(buckets).has_value()) return;
    store::StoreOptions options;
    options.mountpaths = {t.dir + "/mp1"};
    options.threads_per_mountpath = 2;
    auto store = store::Store::open(std::move(options));
    if (!store) return;
    t.maps = std::move(*maps);
    t.store = std::move(*store);
  }
  // Runs `fn` on every target at once, one thread each (blocking setup and teardown).
  void for_each_target(const std::function<void(TestTarget&)>& fn) {
    std::vector<std::thread> threads;
    for (auto& t : targets_) threads.emplace_back([&fn, target = t.get()] { fn(*target); });
    for (auto& thread : threads) thread.join();
  }
  // What silod routes to the data services: /v1/internal/objects only.
  static http::Awaitable<void> serve(TestTarget& t, http::Exchange& exchange) {
    constexpr std::string_view kPrefix = "/v1/internal/objects/";
    const std::string path = exchange.request().path;
    if (path.starts_with(kPrefix)) {
      co_await t.replication->handle_internal_object(exchange, std::string_view(path).substr(kPrefix.size()));
      co_return;
    }
    co_await http::send_error(exchange, Status::not_found("no route {}", path));
  }
  // The path of the object's file, from the descriptor the store opens.
  std::string file_of(TestTarget& t, const ObjectRef& object) {
    auto opened = run(t.store->open(object));
    EXPECT_TRUE(opened.has_value()) << opened.status();
    if (!opened) return "";
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(opened->fd()), ec).string();
  }

  boost::asio::io_context io_;  // first: destroyed after everything that posts to it
  std::string root_;
  std::vector<std::unique_ptr<TestTarget>> targets_;
};

// A bucket named `name` with id `id`: `copies` full copies, or erasure-coded k + m when
// `ec_data` > 0 (objects from `ec_min_size` bytes on are sliced).
inline wire::Bucket test_bucket(const std::string& name, uint64_t id, uint32_t copies, uint32_t ec_data = 0,
                                uint32_t ec_parity = 0, uint64_t ec_min_size = 0) {
  wire::Bucket b;
  b.set_name(name);
  b.set_id(id);
  b.mutable_props()->set_durability(wire::DURABILITY_PAGE_CACHE);  // fsync adds milliseconds per object
  if (ec_data > 0) {
    b.mutable_props()->mutable_ec()->set_data(ec_data);
    b.mutable_props()->mutable_ec()->set_parity(ec_parity);
    b.mutable_props()->mutable_ec()->set_min_size(ec_min_size);
  } else {
    b.mutable_props()->set_copies(copies);
  }
  return b;
}

}  // namespace silo::replication::testing
