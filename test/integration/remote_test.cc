// Remote buckets (docs/remote-buckets.md) against a real S3-protocol server: moto on
// loopback as the backend of a real multi-process Silo cluster. Cold GETs, the cache
// serving with the backend stopped, single-flight fetches, revalidation, write-through,
// deletes, listing, prefetch, evict and the capacity watermarks. Every byte is checked.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "moto.h"
#include "objects_util.h"
#include "testing/random.h"

namespace silo::integration {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr std::string_view kRemote = "cache";  // the Silo bucket in front of moto's "origin"

class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = MotoServer::start();
    ASSERT_TRUE(started.has_value()) << started.status();
    moto_ = std::move(*started);
    ASSERT_OK(moto_->create_bucket("origin"));
    auto made = driver_.make("origin", moto_->url());
    ASSERT_TRUE(made.has_value()) << made.status();
    origin_ = std::move(*made);
  }

  // 1 proxy + `targets` targets and bucket kRemote in front of moto's "origin".
  void start_cluster(int targets = 3, std::string extra_props = "", silo::testing::EnvVars env = {}) {
    env.push_back({"SILO_DURABILITY", "page_cache"});
    auto started = LocalCluster::start({.proxies = 1, .targets = targets, .mountpaths = 2, .env = env});
    ASSERT_TRUE(started.has_value()) << started.status();
    cluster_ = std::move(*started);
    ASSERT_OK(cluster_->client().create_bucket(kRemote, remote_props(extra_props)));
  }

  std::string remote_props(std::string_view extra = "", std::string_view backend_extra = "") const {
    return fmt::format(R"({{"backend": {{"url": "s3://origin", "endpoint": "{}", "access_key": "{}", "secret_key": "{}"{}}}{}}})",
                       moto_->url(), MotoServer::kAccessKey, MotoServer::kSecretKey, backend_extra, extra);
  }

  // Writes `bytes` as `name` into moto's "origin" (not through Silo).
  void put_origin(const std::string& name, const std::string& bytes) {
    auto put = driver_.put(*origin_, name, bytes);
    ASSERT_TRUE(put.has_value()) << name << ": " << put.status();
  }

  uint64_t metric(std::string_view name) const { return sum_over_targets(*cluster_, name); }

  silo::testing::Random random_;
  BackendDriver driver_;
  std::unique_ptr<MotoServer> moto_;
  std::unique_ptr<backend::S3Backend> origin_;
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(RemoteTest, ColdGetFetchesOnceAndTheCacheServesWithTheBackendStopped) {
  const std::string large = random_.bytes(200 * kMiB);
  const std::string small = random_.bytes(1000);
  put_origin("large", large);
  put_origin("dir/small", small);
  put_origin("empty", "");
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  client::Client& c = cluster_->client();

  // 16 concurrent cold GETs of one 200 MiB object: one backend fetch, every reader gets
  // every byte.
  std::vector<std::thread> readers;
  std::atomic<int> good{0};
  std::vector<std::string> failures(16);
  for (int i = 0; i < 16; ++i) {
    readers.emplace_back([&, i] {
      auto reader = client::Client::create(cluster_->endpoint());
      if (!reader) {
        failures[i] = reader.status().to_string();
        return;
      }
      auto got = (*reader)->get(kRemote, "large");
      if (!got) {
        failures[i] = got.status().to_string();
      } else if (*got != large) {
        failures[i] = "bytes differ";
      } else {
        ++good;
      }
    });
  }
  for (auto& t : readers) t.join();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(failures[i], "") << "reader " << i;
  EXPECT_EQ(good.load(), 16);
  EXPECT_EQ(metric("silo_target_cache_misses_total"), 1u) << "one fetch for 16 concurrent misses";
  EXPECT_EQ(metric("silo_target_backend_bytes_received_total"), 200 * kMiB);

  ASSERT_OK_AND_ASSIGN(const std::string got_small, c.get(kRemote, "dir/small"));
  EXPECT_EQ(got_small, small);
  ASSERT_OK_AND_ASSIGN(const std::string got_empty, c.get(kRemote, "empty"));
  EXPECT_EQ(got_empty, "");
  ASSERT_OK_AND_ASSIGN(const auto head, c.head(kRemote, "dir/small"));
  EXPECT_EQ(head.size, small.size());
  EXPECT_EQ(c.get(kRemote, "missing").status().code(), Code::kNotFound);
  EXPECT_EQ(c.head(kRemote, "missing").status().code(), Code::kNotFound);
  const uint64_t misses = metric("silo_target_cache_misses_total");

  // The backend is gone: everything fetched is served from the cache.
  moto_->stop();
  for (int round = 0; round < 2; ++round) {
    ASSERT_OK_AND_ASSIGN(const std::string again, c.get(kRemote, "large"));
    EXPECT_TRUE(again == large);
    ASSERT_OK_AND_ASSIGN(const std::string small_again, c.get(kRemote, "dir/small"));
    EXPECT_EQ(small_again, small);
    ASSERT_OK_AND_ASSIGN(const std::string empty_again, c.get(kRemote, "empty"));
    EXPECT_EQ(empty_again, "");
  }
  EXPECT_EQ(metric("silo_target_cache_misses_total"), misses) << "no further fetch";
  EXPECT_GE(metric("silo_target_cache_hits_total"), 6u);
  // Not cached, and the backend unreachable: a clear error, not a hang or a 404.
  auto unreachable = c.get(kRemote, "never-fetched");
  EXPECT_EQ(unreachable.status().code(), Code::kUnavailable) << unreachable.status();
  EXPECT_TRUE(work_files(*cluster_).empty());
}

}  // namespace
}  // namespace silo::integration
