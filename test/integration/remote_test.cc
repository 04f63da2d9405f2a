// Remote buckets (docs/remote-buckets.md) against a real S3-protocol server: moto on
// loopback as the backend of a real multi-process Silo cluster. Cold GETs, the cache
// serving with the backend stopped, single-flight fetches, revalidation, write-through,
// deletes, listing, prefetch, evict and the capacity watermarks. Every byte is checked.
#include <gtest/gtest.h>


#include <atomic>
#include <map>
#include <thread>

#include "moto.h"
#include "archive/tar_reader.h"
#include "archive/tar_writer.h"
#include "wire/batch_json.h"
#include "objects_util.h"
#include "shards_util.h"
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
      auto reader = cluster_->new_client();
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
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});
}



// Member reads of an uncached shard (docs/shards.md): concurrent reads of its members
// share one cold GET (single-flight), then the cached shard serves them with the backend
// stopped; a missing member is NoSuchArchiveMember, not a second fetch.
TEST_F(RemoteTest, MemberReadsOfAnUncachedShardFetchItOnceThenServeFromTheCache) {
  std::vector<std::pair<std::string, std::string>> members;
  std::string shard;
  for (int i = 0; i < 40; ++i) {
    members.emplace_back(fmt::format("k{:03}.bin", i), random_.bytes(random_.uniform(1, 64 * 1024)));
    const auto& [name, bytes] = members.back();
    shard += archive::tar_header(name, bytes.size(), 0) + bytes + archive::tar_padding(bytes.size());
  }
  shard += archive::tar_end();
  put_origin("train-0000.tar", shard);
  ASSERT_NO_FATAL_FAILURE(start_cluster());

  std::vector<std::thread> readers;
  std::vector<std::string> failures(8);
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&, i] {
      auto reader = cluster_->new_client();
      if (!reader) {
        failures[i] = reader.status().to_string();
        return;
      }
      const auto& [name, bytes] = members[static_cast<size_t>(i) * 5];
      auto got = (*reader)->get_archive(kRemote, "train-0000.tar", {.path = name});
      if (!got) {
        failures[i] = got.status().to_string();
      } else if (*got != bytes) {
        failures[i] = "bytes differ";
      }
    });
  }
  for (auto& t : readers) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(failures[i], "") << "reader " << i;
  EXPECT_EQ(metric("silo_target_cache_misses_total"), 1u) << "one fetch for 8 concurrent member reads";

  moto_->stop();
  client::Client& c = cluster_->client();
  for (const auto& [name, bytes] : members) {
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get_archive(kRemote, "train-0000.tar", {.path = name}));
    ASSERT_EQ(got, bytes) << name;
  }
  EXPECT_EQ(c.get_archive(kRemote, "train-0000.tar", {.path = "nope"}).status().reason(), "NoSuchArchiveMember");
  EXPECT_EQ(metric("silo_target_cache_misses_total"), 1u);
  EXPECT_EQ(metric("silo_target_archive_index_builds_total"), 0u) << "indexed as the fetch committed it";
}

// Batch GET of uncached shards' members (docs/shards.md "Batch GET"): the owners fetch each
// shard once (entries of one shard share the single-flight cold GET), the stream comes back
// in order, and the next batch is served from the cache with the backend stopped.
TEST_F(RemoteTest, BatchGetFetchesUncachedShardsOnceAndServesTheirMembers) {
  std::vector<std::vector<std::pair<std::string, std::string>>> shards(4);
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string shard;
    for (int i = 0; i < 20; ++i) {
      shards[s].emplace_back(fmt::format("k{:03}.bin", i), random_.bytes(random_.uniform(1, 16 * 1024)));
      const auto& [name, bytes] = shards[s].back();
      shard += archive::tar_header(name, bytes.size(), 0) + bytes + archive::tar_padding(bytes.size());
    }
    put_origin(fmt::format("train-{}.tar", s), shard + archive::tar_end());
  }
  put_origin("plain", "plain bytes");
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  wire::BatchRequest request;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    const size_t s = static_cast<size_t>(i) % shards.size();
    const auto& [name, bytes] = shards[s][static_cast<size_t>(i * 7) % shards[s].size()];
    request.entries.push_back({.bucket = std::string(kRemote), .name = fmt::format("train-{}.tar", s), .archpath = name});
    expected += request.entries.back().tar_name() + "=" + bytes + ";";
  }
  request.entries.push_back({.bucket = std::string(kRemote), .name = "plain"});
  expected += std::string(kRemote) + "/plain=plain bytes;";
  const auto read_all = [&](client::Client& c) -> Result<std::string> {
    ASSIGN_OR_RETURN(const std::string tar, get_batch(c, request));
    auto index = archive::index_tar(archive::read_bytes(tar), tar.size());
    RETURN_IF_ERROR(index.status());
    std::string out;
    for (const auto& m : index->members()) out += m.name() + "=" + tar.substr(m.offset(), m.size()) + ";";
    return out;
  };
  client::Client& c = cluster_->client();
  ASSERT_OK_AND_ASSIGN(const std::string first, read_all(c));
  EXPECT_TRUE(first == expected);
  EXPECT_EQ(metric("silo_target_cache_misses_total"), shards.size() + 1) << "one fetch per object";
  moto_->stop();
  ASSERT_OK_AND_ASSIGN(const std::string again, read_all(c));
  EXPECT_TRUE(again == expected);
  EXPECT_EQ(metric("silo_target_cache_misses_total"), shards.size() + 1);
}

// The cache commits a fetched object on the owner and hands it to the target, which gives
// the other holders their copies (Target::replicate_fetched): after cold GETs and a
// prefetch every object of a bucket with copies: 2 is on two targets, and reads go on
// with the backend stopped.
TEST_F(RemoteTest, FetchedObjectsOfABucketWithCopiesReachEveryHolder) {
  Objects objects;
  for (int i = 0; i < 6; ++i) objects[fmt::format("cold-{}", i)] = random_.bytes(1000 + i);
  for (int i = 0; i < 6; ++i) objects[fmt::format("pre-{}", i)] = random_.bytes(2000 + i);
  for (const auto& [name, bytes] : objects) put_origin(name, bytes);
  ASSERT_NO_FATAL_FAILURE(start_cluster(3, R"(, "copies": 2)"));
  client::Client& c = cluster_->client();
  ASSERT_OK_AND_ASSIGN(const auto props, c.bucket_props(kRemote));
  EXPECT_EQ(props.copies, 2u);
  for (int i = 0; i < 6; ++i) {
    const std::string name = fmt::format("cold-{}", i);
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get(kRemote, name));
    EXPECT_TRUE(got == objects[name]) << name;
  }
  ASSERT_OK_AND_ASSIGN(const auto started, c.start_job(fmt::format(
      R"({{"kind": "prefetch", "bucket": "{}", "template": "pre-{{0..5}}"}})", kRemote)));
  ASSERT_OK_AND_ASSIGN(const auto done, c.wait_job(started.id, seconds(60)));
  EXPECT_EQ(done.state, "finished") << done.detail;
  // The copies go out in the background, after each commit.
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (bucket_files(*cluster_, props.id) < 2 * objects.size() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(bucket_files(*cluster_, props.id), 2 * objects.size()) << "two copies of every fetched object";
  EXPECT_EQ(metric("silo_target_cache_misses_total"), objects.size());
  moto_->stop();
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get(kRemote, name));
    EXPECT_TRUE(got == bytes) << name;
  }
}

TEST_F(RemoteTest, PrefetchByTemplateAndPrefixCachesEverythingAndServesWithTheBackendStopped) {
  Objects objects;
  for (int i = 0; i < 1000; ++i) objects[fmt::format("train-{:04}.tar", i)] = random_.bytes(random_.uniform(0, 16 * 1024));
  objects["big.tar"] = random_.bytes(40 * kMiB);  // past range_get_size: parallel range GETs
  for (const auto& [name, bytes] : objects) ASSERT_NO_FATAL_FAILURE(put_origin(name, bytes));
  ASSERT_NO_FATAL_FAILURE(start_cluster(3, "", {{"SILO_CACHE_JSON", R"({"range_get_size": 8388608})"}}));
  client::Client& c = cluster_->client();

  // The listing shows the backend's objects, none cached yet.
  ASSERT_OK_AND_ASSIGN(const auto before, c.list_all(kRemote));
  EXPECT_EQ(before.size(), objects.size());
  for (const auto& e : before) EXPECT_FALSE(e.cached) << e.name;

  const auto run_job = [&c](std::string body) -> client::JobEntry {
    auto started = c.start_job(std::move(body));
    EXPECT_TRUE(started.has_value()) << started.status();
    if (!started) return {};
    auto done = c.wait_job(started->id, seconds(120));
    EXPECT_TRUE(done.has_value()) << done.status();
    return done ? *done : client::JobEntry{};
  };
  const client::JobEntry by_template = run_job(
      fmt::format(R"({{"kind": "prefetch", "bucket": "{}", "template": "train-{{0000..0999}}.tar", "workers": 8}})", kRemote));
  EXPECT_EQ(by_template.state, "finished") << by_template.detail;
  EXPECT_EQ(by_template.objects_done, 1000u);
  EXPECT_EQ(by_template.errors, 0u);
  ASSERT_OK_AND_ASSIGN(const uint64_t evicted, c.evict(kRemote, R"({"prefix": "train-"})"));
  EXPECT_EQ(evicted, 1000u);
  const client::JobEntry by_prefix =
      run_job(fmt::format(R"({{"kind": "prefetch", "bucket": "{}", "prefix": "train-"}})", kRemote));
  EXPECT_EQ(by_prefix.state, "finished") << by_prefix.detail;
  EXPECT_EQ(by_prefix.objects_done, 1000u);
  const client::JobEntry by_name =
      run_job(fmt::format(R"({{"kind": "prefetch", "bucket": "{}", "names": ["big.tar"]}})", kRemote));
  EXPECT_EQ(by_name.state, "finished") << by_name.detail;
  EXPECT_EQ(by_name.bytes_done, 40 * kMiB);
  // Run again: everything is cached and unchanged, nothing is fetched.
  const client::JobEntry again = run_job(fmt::format(R"({{"kind": "prefetch", "bucket": "{}"}})", kRemote));
  EXPECT_EQ(again.state, "finished") << again.detail;
  EXPECT_EQ(again.objects_done, 0u);
  EXPECT_EQ(again.objects_skipped, objects.size());

  ASSERT_OK_AND_ASSIGN(const auto after, c.list_all(kRemote));
  EXPECT_EQ(after.size(), objects.size());
  for (const auto& e : after) EXPECT_TRUE(e.cached) << e.name;
  const uint64_t misses = metric("silo_target_cache_misses_total");

  moto_->stop();
  expect_all_readable(c, objects, kRemote);
  EXPECT_EQ(metric("silo_target_cache_misses_total"), misses);
  // Only the cached objects can be listed now.
  ASSERT_OK_AND_ASSIGN(const auto cached_only, c.request(http::Method::kGet, fmt::format("/v1/buckets/{}?cached=true&limit=5", kRemote)));
  EXPECT_EQ(cached_only.status, 200) << cached_only.body;
  EXPECT_NE(cached_only.body.find("\"cached\":true"), std::string::npos) << cached_only.body;
  EXPECT_FALSE(c.list_all(kRemote).has_value()) << "listing the backend fails while it is down";
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});
}

TEST_F(RemoteTest, PrefetchAbortsAndAFailedPrefetchNamesItsObjectsAndCanBeRerun) {
  Objects objects;
  for (int i = 0; i < 300; ++i) objects[fmt::format("s-{:03}", i)] = random_.bytes(256 * 1024);
  for (const auto& [name, bytes] : objects) ASSERT_NO_FATAL_FAILURE(put_origin(name, bytes));
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  client::Client& c = cluster_->client();

  // Abort: one worker per target, stopped at once.
  ASSERT_OK_AND_ASSIGN(const auto slow, c.start_job(fmt::format(
      R"({{"kind": "prefetch", "bucket": "{}", "template": "s-{{000..299}}", "workers": 1}})", kRemote)));
  ASSERT_OK(c.abort_job(slow.id));
  ASSERT_OK_AND_ASSIGN(const auto aborted, c.wait_job(slow.id, seconds(60)));
  EXPECT_EQ(aborted.state, "aborted");
  std::this_thread::sleep_for(milliseconds(500));  // the workers stop after their object
  ASSERT_OK_AND_ASSIGN(const auto cached_after_abort, c.list_all(kRemote));
  size_t cached = 0;
  for (const auto& e : cached_after_abort) cached += e.cached ? 1 : 0;
  EXPECT_LT(cached, objects.size()) << "the abort stopped the prefetch";

  // Names the backend does not have fail, each named; the rest are fetched.
  ASSERT_OK_AND_ASSIGN(const auto partial, c.start_job(fmt::format(
      R"({{"kind": "prefetch", "bucket": "{}", "names": ["s-000", "nope-1", "s-001", "nope-2"]}})", kRemote)));
  ASSERT_OK_AND_ASSIGN(const auto failed, c.wait_job(partial.id, seconds(60)));
  EXPECT_EQ(failed.state, "failed");
  EXPECT_EQ(failed.errors, 2u);
  std::string named;
  for (const auto& f : failed.failed_objects) named += f + "\n";
  EXPECT_NE(named.find("nope-1"), std::string::npos) << named;
  EXPECT_NE(named.find("nope-2"), std::string::npos) << named;

  // The backend dies: the job fails with the objects named, and no partial object stays.
  moto_->stop();
  ASSERT_OK_AND_ASSIGN(const auto dead, c.start_job(fmt::format(R"({{"kind": "prefetch", "bucket": "{}", "template": "s-{{000..299}}"}})", kRemote)));
  ASSERT_OK_AND_ASSIGN(const auto dead_done, c.wait_job(dead.id, seconds(120)));
  EXPECT_EQ(dead_done.state, "failed");
  EXPECT_GT(dead_done.errors, 0u);
  EXPECT_FALSE(dead_done.failed_objects.empty());
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});

  // Back (moto forgets everything: the objects are written again): a rerun completes.
  ASSERT_OK(moto_->restart());
  ASSERT_OK(moto_->create_bucket("origin"));
  for (const auto& [name, bytes] : objects) ASSERT_NO_FATAL_FAILURE(put_origin(name, bytes));
  ASSERT_OK_AND_ASSIGN(const auto rerun, c.start_job(fmt::format(R"({{"kind": "prefetch", "bucket": "{}", "template": "s-{{000..299}}"}})", kRemote)));
  ASSERT_OK_AND_ASSIGN(const auto rerun_done, c.wait_job(rerun.id, seconds(120)));
  EXPECT_EQ(rerun_done.state, "finished") << rerun_done.detail;
  EXPECT_EQ(rerun_done.objects_done + rerun_done.objects_skipped, objects.size());
  moto_->stop();
  expect_all_readable(c, objects, kRemote);
}

TEST_F(RemoteTest, ARevalidatingBucketServesTheNewBytesATrustingOneTheOldUntilEvicted) {
  const std::string v1 = random_.bytes(100000), v2 = random_.bytes(120000);
  put_origin("obj", v1);
  put_origin("gone", v1);
  for (int i = 0; i < 5; ++i) put_origin(fmt::format("p/{}", i), v1);
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  client::Client& c = cluster_->client();
  constexpr std::string_view kFresh = "fresh";
  ASSERT_OK(c.create_bucket(kFresh, remote_props("", R"(, "revalidate": true)")));
  for (std::string_view bucket : {kRemote, kFresh}) {
    for (const char* name : {"obj", "gone"}) {
      ASSERT_OK_AND_ASSIGN(const std::string got, c.get(bucket, name));
      EXPECT_TRUE(got == v1) << bucket << "/" << name;
    }
  }
  put_origin("obj", v2);  // changed at the backend
  ASSERT_OK(driver_.run([this] { return origin_->remove("gone"); }));  // deleted at the backend

  ASSERT_OK_AND_ASSIGN(const std::string fresh_obj, c.get(kFresh, "obj"));
  EXPECT_TRUE(fresh_obj == v2) << "a revalidating bucket serves the new bytes";
  EXPECT_EQ(c.get(kFresh, "gone").status().code(), Code::kNotFound) << "and drops what the backend deleted";
  ASSERT_OK_AND_ASSIGN(const std::string trusted_obj, c.get(kRemote, "obj"));
  EXPECT_TRUE(trusted_obj == v1) << "a trusting bucket serves the cached bytes";
  ASSERT_OK_AND_ASSIGN(const std::string trusted_gone, c.get(kRemote, "gone"));
  EXPECT_TRUE(trusted_gone == v1);

  // Evicted, the trusting bucket fetches again: the new bytes, and the deleted one is gone.
  ASSERT_OK_AND_ASSIGN(const uint64_t by_name, c.evict(kRemote, R"({"names": ["obj", "gone"]})"));
  EXPECT_EQ(by_name, 2u);
  ASSERT_OK_AND_ASSIGN(const std::string refetched, c.get(kRemote, "obj"));
  EXPECT_TRUE(refetched == v2);
  EXPECT_EQ(c.get(kRemote, "gone").status().code(), Code::kNotFound);

  // Evict by prefix and by template: the other objects stay cached.
  for (int i = 0; i < 5; ++i) ASSERT_OK(c.get(kRemote, fmt::format("p/{}", i)).status());
  ASSERT_OK_AND_ASSIGN(const uint64_t by_template, c.evict(kRemote, R"({"template": "p/{0..1}"})"));
  EXPECT_EQ(by_template, 2u);
  ASSERT_OK_AND_ASSIGN(const uint64_t by_prefix, c.evict(kRemote, R"({"prefix": "p/"})"));
  EXPECT_EQ(by_prefix, 3u);
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all(kRemote));
  for (const auto& e : listed) EXPECT_EQ(e.cached, e.name == "obj") << e.name;
  // Bad requests name the problem; a local bucket can not be evicted.
  EXPECT_EQ(c.evict(kRemote, R"({"template": "p/{3..1}"})").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(c.evict(kRemote, R"({"prefix": "a", "names": ["b"]})").status().code(), Code::kInvalidArgument);
  ASSERT_OK(c.create_bucket("local"));
  EXPECT_EQ(c.evict("local").status().code(), Code::kInvalidArgument);

  // The whole bucket, keeping it; then forgetting it (the backend keeps everything).
  ASSERT_OK_AND_ASSIGN(const uint64_t whole, c.evict(kRemote));
  EXPECT_EQ(whole, 1u);
  ASSERT_OK(c.get(kRemote, "obj").status());
  ASSERT_OK_AND_ASSIGN(const uint64_t forgotten, c.evict(kRemote, R"({"keep_props": false})"));
  EXPECT_EQ(forgotten, 1u);
  EXPECT_EQ(c.head_bucket(kRemote).code(), Code::kNotFound);
  ASSERT_OK(c.delete_bucket(kFresh));
  ASSERT_OK_AND_ASSIGN(const std::string still, driver_.get(*origin_, "obj"));
  EXPECT_TRUE(still == v2) << "the backend keeps its objects";
  EXPECT_EQ(sum_over_targets(*cluster_, "silo_target_evicted_objects_total"), 1u + 2 + 2 + 3 + 1 + 1 + 1);
}

TEST_F(RemoteTest, WritesGoThroughToTheBackendAndDeletesReachIt) {
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  client::Client& c = cluster_->client();
  const std::string small = random_.bytes(5000), large = random_.bytes(70 * kMiB);  // large: multipart at the backend
  ASSERT_OK(c.put(kRemote, "w/small", small).status());
  ASSERT_OK(c.put(kRemote, "w/large", large).status());
  ASSERT_OK_AND_ASSIGN(const std::string at_backend, driver_.get(*origin_, "w/small"));
  EXPECT_EQ(at_backend, small);
  ASSERT_OK_AND_ASSIGN(const std::string large_at_backend, driver_.get(*origin_, "w/large"));
  EXPECT_TRUE(large_at_backend == large);
  // The ETag Silo shows is the backend's.
  ASSERT_OK_AND_ASSIGN(const auto head, c.head(kRemote, "w/large"));
  ASSERT_OK_AND_ASSIGN(const auto remote, driver_.run([this] { return origin_->head("w/large"); }));
  EXPECT_EQ(head.etag, remote.etag);

  ASSERT_OK(c.remove(kRemote, "w/small"));
  EXPECT_EQ(driver_.get(*origin_, "w/small").status().code(), Code::kNotFound) << "deleted at the backend";
  EXPECT_EQ(c.get(kRemote, "w/small").status().code(), Code::kNotFound);

  // The backend is down: the write fails and leaves nothing behind.
  moto_->stop();
  auto refused = c.put(kRemote, "w/refused", small);
  EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status();
  ASSERT_OK_AND_ASSIGN(const auto cached, c.request(http::Method::kGet, fmt::format("/v1/buckets/{}?cached=true", kRemote)));
  EXPECT_EQ(cached.body.find("w/refused"), std::string::npos) << cached.body;
  EXPECT_EQ(c.remove(kRemote, "w/large").code(), Code::kUnavailable) << "a delete the backend did not take fails";
  ASSERT_OK_AND_ASSIGN(const std::string still, c.get(kRemote, "w/large"));
  EXPECT_TRUE(still == large);
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});
}

TEST_F(RemoteTest, ABackendThatDiesDuringAColdGetLeavesNoPartialObject) {
  const std::string large = random_.bytes(150 * kMiB);
  put_origin("large", large);
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  client::Client& c = cluster_->client();
  uint64_t received = 0;
  bool killed = false;
  auto got = c.get_stream(kRemote, "large", [&](std::span<const char> bytes) {
    received += bytes.size();
    if (!killed && received > 4 * kMiB) {
      moto_->stop();
      killed = true;
    }
    return Status::ok();
  });
  EXPECT_TRUE(killed);
  EXPECT_FALSE(got.has_value()) << "the answer is cut, not completed with wrong bytes";
  EXPECT_LT(received, large.size());
  ASSERT_OK(silo::testing::wait_until([&] { return work_files(*cluster_).empty(); }, seconds(30),
                                      "the fetch's work file to go"));
  ASSERT_OK_AND_ASSIGN(const auto cached, c.request(http::Method::kGet, fmt::format("/v1/buckets/{}?cached=true", kRemote)));
  EXPECT_EQ(cached.body.find("large"), std::string::npos) << "no partial object: " << cached.body;
  EXPECT_EQ(c.get(kRemote, "large").status().code(), Code::kUnavailable);
}

TEST_F(RemoteTest, ABackendBucketIsUsableByNameOnFirstAccess) {
  const std::string bytes = random_.bytes(300000);
  put_origin("a/b", bytes);
  ASSERT_NO_FATAL_FAILURE(start_cluster(
      2, "",
      {{"SILO_CACHE_JSON", fmt::format(R"({{"first_access": "s3", "s3": {{"endpoint": "{}", "access_key": "{}", "secret_key": "{}"}}}})",
                                       moto_->url(), MotoServer::kAccessKey, MotoServer::kSecretKey)}}));
  client::Client& c = cluster_->client();
  // Only admins adopt (the backend keys are the cluster's): a user's requests naming the
  // bucket answer NoSuchBucket and make nothing.
  ASSERT_OK_AND_ASSIGN(auto added, c.request(http::Method::kPut, "/v1/users/reader", R"({"secret_key":"reader-secret-1"})"));
  ASSERT_EQ(added.status, 200) << added.body;
  client::ClientOptions reader_keys;
  reader_keys.access_key = "reader";
  reader_keys.secret_key = "reader-secret-1";
  ASSERT_OK_AND_ASSIGN(auto reader, cluster_->new_client(reader_keys));
  EXPECT_EQ(reader->get("origin", "a/b").status().code(), Code::kNotFound);
  ASSERT_OK_AND_ASSIGN(const auto listed_by_reader, reader->request(http::Method::kGet, "/v1/buckets/origin"));
  EXPECT_EQ(listed_by_reader.status, 404) << listed_by_reader.body;
  ASSERT_OK_AND_ASSIGN(const auto buckets, c.request(http::Method::kGet, "/v1/buckets"));
  EXPECT_EQ(buckets.body.find(R"("name":"origin")"), std::string::npos) << buckets.body;
  // "origin" was never created in Silo: the first request finds it at the backend.
  ASSERT_OK_AND_ASSIGN(const std::string got, c.get("origin", "a/b"));
  EXPECT_TRUE(got == bytes);
  ASSERT_OK_AND_ASSIGN(const auto props, c.request(http::Method::kGet, "/v1/buckets/origin/props"));
  EXPECT_NE(props.body.find(R"("url":"s3://origin")"), std::string::npos) << props.body;
  EXPECT_EQ(props.body.find(MotoServer::kSecretKey), std::string::npos) << "the secret never shows";
  // A cold GET's answer completes only once the object is cached.
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("origin"));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].cached);
  // A name the backend does not have either stays unknown.
  EXPECT_EQ(c.get("no-such-bucket", "x").status().code(), Code::kNotFound);
  EXPECT_EQ(c.head_bucket("no-such-bucket").code(), Code::kNotFound);
}

TEST_F(RemoteTest, CreatingARemoteBucketChecksTheBackend) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(1));
  client::Client& c = cluster_->client();
  const auto refused = [&](std::string props) { return c.create_bucket("other", std::move(props)).code(); };
  EXPECT_EQ(refused(fmt::format(R"({{"backend": {{"url": "s3://missing", "endpoint": "{}", "access_key": "k", "secret_key": "s"}}}})",
                                moto_->url())),
            Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"backend": {"url": "s3://origin", "endpoint": "http://127.0.0.1:1", "access_key": "k", "secret_key": "s"}})"),
            Code::kUnavailable);
  EXPECT_EQ(refused(R"({"backend": {"url": "ftp://origin"}})"), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"backend": {"url": "s3://origin", "endpoint": "gopher://x"}})"), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"backend": {"url": "s3://origin", "bogus": 1}})"), Code::kInvalidArgument);
  EXPECT_EQ(c.head_bucket("other").code(), Code::kNotFound) << "nothing was created";
  // The backend of a bucket stays; its keys may change (checked again).
  EXPECT_EQ(c.set_bucket_props(kRemote, R"({"backend": {"url": "s3://elsewhere"}})").code(), Code::kInvalidArgument);
  EXPECT_EQ(c.set_bucket_props(kRemote, R"({"backend": null})").code(), Code::kInvalidArgument);
  EXPECT_EQ(c.set_bucket_props(kRemote, R"({"backend": {"endpoint": "http://127.0.0.1:1"}})").code(), Code::kUnavailable);
  ASSERT_OK(c.set_bucket_props(kRemote, R"({"backend": {"revalidate": true, "secret_key": "********"}})"));
  ASSERT_OK_AND_ASSIGN(const auto props, c.request(http::Method::kGet, fmt::format("/v1/buckets/{}/props", kRemote)));
  EXPECT_NE(props.body.find(R"("revalidate":true)"), std::string::npos) << props.body;
  put_origin("still-works", "x");
  ASSERT_OK_AND_ASSIGN(const std::string got, c.get(kRemote, "still-works"));
  EXPECT_EQ(got, "x") << "the masked secret kept the real one";
}

TEST_F(RemoteTest, ABackendAnswering503FailsColdGetsAndPrefetchesClearlyAndLeavesNothing) {
  const std::string bytes = random_.bytes(100000);
  put_origin("x", bytes);
  ASSERT_NO_FATAL_FAILURE(start_cluster(1));
  client::Client& c = cluster_->client();
  // A backend that takes the bucket check, then answers everything with 503 SlowDown.
  std::vector<std::string> answers = {answer(200, "OK", {}, "")};
  const std::string slow_down = answer(503, "Slow Down", {"Content-Type: application/xml"},
                                       "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
  for (int i = 0; i < 200; ++i) answers.push_back(slow_down);
  FakeS3 failing(answers);
  ASSERT_OK(c.set_bucket_props(kRemote, fmt::format(R"({{"backend": {{"endpoint": "{}"}}}})", failing.url())));

  auto got = c.get(kRemote, "x");
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status();
  EXPECT_NE(got.status().to_string().find("SlowDown"), std::string::npos) << "the backend's answer is named: " << got.status();
  ASSERT_OK_AND_ASSIGN(const auto started, c.start_job(fmt::format(R"({{"kind": "prefetch", "bucket": "{}", "names": ["x", "y"]}})", kRemote)));
  ASSERT_OK_AND_ASSIGN(const auto job, c.wait_job(started.id, seconds(120)));
  EXPECT_EQ(job.state, "failed");
  EXPECT_EQ(job.errors, 2u);
  ASSERT_EQ(job.failed_objects.size(), 2u);
  EXPECT_GT(metric("silo_target_backend_errors_total"), 0u);
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});
  ASSERT_OK_AND_ASSIGN(const auto cached, c.request(http::Method::kGet, fmt::format("/v1/buckets/{}?cached=true", kRemote)));
  EXPECT_EQ(cached.body.find("\"x\""), std::string::npos) << cached.body;

  // The backend is healthy again: the same reads succeed.
  ASSERT_OK(c.set_bucket_props(kRemote, fmt::format(R"({{"backend": {{"endpoint": "{}"}}}})", moto_->url())));
  ASSERT_OK_AND_ASSIGN(const std::string again, c.get(kRemote, "x"));
  EXPECT_TRUE(again == bytes);
}

// Objects of one piece (12 MiB: one backend GET) and of many (120 MiB: parallel range GETs).
TEST_F(RemoteTest, ADeleteDuringAColdGetIsNotUndoneByTheFetch) {
  for (const uint64_t size : {12 * kMiB, 120 * kMiB}) {
  SCOPED_TRACE(size);
  const std::string large = random_.bytes(size);
  put_origin("large", large);
  if (!cluster_) {
    ASSERT_NO_FATAL_FAILURE(start_cluster(1));
  }
  client::Client& c = cluster_->client();
  ASSERT_OK_AND_ASSIGN(auto other, cluster_->new_client());
  uint64_t received = 0;
  Status deleted = Status::internal("not yet");
  auto got = c.get_stream(kRemote, "large", [&](std::span<const char> bytes) {
    received += bytes.size();
    if (!deleted.is_ok() && received > 4 * kMiB) deleted = other->remove(kRemote, "large");
    return Status::ok();
  });
  ASSERT_OK(deleted);
  // The read that began before the delete is either served whole (the fetch had the
  // bytes) or cut (its next range GET found the object gone); never wrong bytes.
  if (got.has_value()) {
    EXPECT_EQ(received, large.size());
  }
  // However the fetch ends, it must not bring the object back into the cache.
  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_OK_AND_ASSIGN(const auto cached, c.request(http::Method::kGet, fmt::format("/v1/buckets/{}?cached=true", kRemote)));
  EXPECT_EQ(cached.body.find("large"), std::string::npos) << cached.body;
  EXPECT_EQ(c.get(kRemote, "large").status().code(), Code::kNotFound);
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});
  }
}


TEST_F(RemoteTest, WatermarksEvictTheLeastRecentlyUsedCachedObjectsAndNeverLocalOnes) {
  // One target with two 96 MiB mountpaths (RocksDB takes about a fifth): evict past 70 %,
  // down to 40 %; refuse past 90 %.
  ASSERT_NO_FATAL_FAILURE(start_cluster(
      1, "", {{"SILO_CACHE_JSON", R"({"low_wm": 40, "high_wm": 70, "oos_wm": 90, "space_check_interval_ms": 100})"}}));
  SmallMountpaths small;
  const Status mounted = small.replace(*cluster_, "t1", 96);
  if (mounted.code() == Code::kFailedPrecondition) {
    GTEST_SKIP() << mounted;
  }
  ASSERT_OK(mounted);
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster_->node("t1"));
  client::Client& c = cluster_->client();
  ASSERT_OK(c.create_bucket("local"));
  Objects local;
  for (int i = 0; i < 8; ++i) local[fmt::format("l-{}", i)] = random_.bytes(kMiB);
  for (const auto& [name, bytes] : local) ASSERT_OK(c.put("local", name, bytes).status());

  // 100 objects of 2 MiB (more than fits) read in order; the first five read again and
  // again, so they stay the most recently used.
  Objects cached;
  for (int i = 0; i < 100; ++i) cached[fmt::format("c-{:03}", i)] = random_.bytes(2 * kMiB);
  for (const auto& [name, bytes] : cached) ASSERT_NO_FATAL_FAILURE(put_origin(name, bytes));
  for (int i = 0; i < 100; ++i) {
    const std::string name = fmt::format("c-{:03}", i);
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get(kRemote, name));
    ASSERT_TRUE(got == cached[name]) << name;
    if (i % 4 == 0) {
      for (int hot = 0; hot < 5; ++hot) ASSERT_OK(c.get(kRemote, fmt::format("c-{:03}", hot)).status());
    }
    std::this_thread::sleep_for(milliseconds(20));  // a few reads between two looks at the space
  }
  ASSERT_OK(silo::testing::wait_until(
      [&] {
        return std::all_of(t1.mountpaths.begin(), t1.mountpaths.end(),
                           [](const std::string& mp) { return SmallMountpaths::used_percent(mp) < 70; });
      },
      seconds(20), "the mountpaths to fall under the high watermark"));
  EXPECT_GT(metric("silo_target_evicted_objects_total"), 0u);

  // Least recently used first: the hot five stay; of the others, the oldest went, so the
  // cached ones are the newest ones, all of them.
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all(kRemote));
  std::map<std::string, bool> is_cached;
  for (const auto& e : listed) is_cached[e.name] = e.cached;
  for (int hot = 0; hot < 5; ++hot) EXPECT_TRUE(is_cached[fmt::format("c-{:03}", hot)]) << hot;
  int first_cached = -1;
  for (int i = 5; i < 100; ++i) {
    const bool here = is_cached[fmt::format("c-{:03}", i)];
    if (here && first_cached < 0) first_cached = i;
    EXPECT_TRUE(first_cached < 0 || here) << "c-" << i << " was evicted before an older one";
  }
  EXPECT_GT(first_cached, 5) << "some of the oldest were evicted";
  EXPECT_TRUE(is_cached["c-099"]);
  expect_all_readable(c, local, "local");

  // Local objects are never evicted: past out-of-space, PUTs are refused with 507.
  moto_->stop();
  Status refused;
  int accepted = 0;
  for (int i = 0; i < 200 && refused.is_ok(); ++i) {
    const std::string name = fmt::format("fill-{}", i);
    const std::string bytes = random_.bytes(2 * kMiB);
    auto put = c.put("local", name, bytes);
    if (!put) {
      refused = put.status();
    } else {
      local[name] = bytes;
      ++accepted;
    }
    std::this_thread::sleep_for(milliseconds(30));
  }
  EXPECT_EQ(refused.code(), Code::kResourceExhausted) << refused;
  EXPECT_NE(refused.to_string().find("out of space"), std::string::npos) << refused;
  EXPECT_GT(accepted, 10);
  expect_all_readable(c, local, "local");
  EXPECT_EQ(work_files(*cluster_), std::vector<std::string>{});
}

}  // namespace
}  // namespace silo::integration
