// Faults a running cluster meets (issue #23 item 4), beside crash_test.cc (kill -9 under
// PUTs), rebalance_test.cc (kills mid-rebalance), dsort_test.cc (a kill mid-dsort) and
// ha_test.cc (nftables partitions of the HA control plane): kill -9 of a target while
// multipart uploads complete into plain and EC buckets, with a ledger of what was
// acknowledged; a drive that fills up answers 507, keeps nothing partial and takes
// writes again once objects are deleted.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "base/mutex.h"
#include "objects_util.h"
#include "test_util.h"
#include "testing/random.h"

namespace silo::integration {
namespace {

constexpr uint64_t kPart = 5 << 20;  // S3's smallest part (all but the last)

struct Upload {
  uint64_t seed = 0;  // the bytes are Random(seed).bytes(size)
  size_t size = 0;
  bool is_acknowledged = false;  // CompleteMultipartUpload answered 200
  std::string error;
};

std::string bytes_of(const Upload& u) { return silo::testing::Random(u.seed).bytes(u.size); }

struct Layout {
  std::string name;
  std::string props;
};

void PrintTo(const Layout& layout, std::ostream* out) { *out << layout.name; }

class MultipartCrashTest : public ::testing::TestWithParam<Layout> {};

INSTANTIATE_TEST_SUITE_P(Layouts, MultipartCrashTest,
                         ::testing::Values(Layout{"plain", "{}"}, Layout{"ec21", R"({"ec": {"data": 2, "parity": 1}})"}),
                         [](const ::testing::TestParamInfo<Layout>& layout) { return layout.param.name; });

// Three writers upload objects of two or three parts and complete them while a target is
// killed at a random moment and restarted: every acknowledged upload reads back byte for
// byte; one that failed is absent or whole (its completion may have committed before the
// answer was lost), never partial; no work file stays.
TEST_P(MultipartCrashTest, KillTargetWhileUploadsCompleteLosesNothingAcknowledged) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .env = {{"SILO_KEEPALIVE_INTERVAL_MS", "200"},
                                                                  {"SILO_KEEPALIVE_TIMEOUT_MS", "1000"}}}));
  ASSERT_OK(cluster->client().create_bucket("uploads", GetParam().props));
  silo::testing::Random random;
  struct {
    Mutex mutex;
    std::map<std::string, Upload> uploads GUARDED_BY(mutex);
  } ledger;
  std::atomic<int> acknowledged{0};
  std::atomic<int> finished{0};
  std::atomic<bool> is_stopping{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t, rng = random.fork()]() mutable {
      auto c = cluster->new_client({.io_timeout = milliseconds(15000)});
      if (!c) return;
      for (int i = 0; !is_stopping; ++i) {
        Upload u;
        u.seed = rng.next();
        u.size = kPart + rng.uniform(1, 2 * kPart);
        const std::string bytes = bytes_of(u);
        const std::string name = fmt::format("w{}/upload-{:03}", t, i);
        auto put = (*c)->put_multipart("uploads", name, u.size, kPart, 2,
                                       [&](uint64_t offset, std::span<char> out) -> Result<size_t> {
                                         const size_t n = std::min(out.size(), bytes.size() - offset);
                                         std::copy_n(bytes.data() + offset, n, out.data());
                                         return n;
                                       });
        u.is_acknowledged = put.has_value();
        if (!put) u.error = put.error().to_string();
        acknowledged += u.is_acknowledged;
        ++finished;
        MutexLock lock(ledger.mutex);
        ledger.uploads.emplace(name, std::move(u));
      }
    });
  }
  const auto join = [&] {
    is_stopping = true;
    for (auto& w : writers) w.join();
    writers.clear();
  };
  Status warmed = silo::testing::wait_until([&] { return acknowledged >= 6; }, seconds(60), "6 completed uploads");
  if (!warmed.is_ok()) join();
  ASSERT_OK(warmed);
  std::this_thread::sleep_for(milliseconds(random.uniform(0, 400)));  // a random moment
  ASSERT_OK(cluster->kill("t2"));
  const int finished_at_kill = finished;
  Status loaded = silo::testing::wait_until([&] { return finished >= finished_at_kill + 6; }, seconds(60),
                                            "6 more uploads after the kill");
  join();
  ASSERT_OK(loaded);
  ASSERT_OK(cluster->restart("t2"));
  ASSERT_OK(cluster->wait_for_node_state("t2", "online", seconds(10)));

  std::map<std::string, Upload> uploads;
  {
    MutexLock lock(ledger.mutex);
    uploads = std::move(ledger.uploads);
  }
  client::Client& c = cluster->client();
  size_t failed = 0;
  for (const auto& [name, u] : uploads) {
    auto got = c.get("uploads", name);
    if (u.is_acknowledged) {
      ASSERT_TRUE(got.has_value()) << "acknowledged upload " << name << " is lost: " << got.error();
      EXPECT_EQ(difference(bytes_of(u), *got), "") << "acknowledged upload " << name;
      continue;
    }
    ++failed;
    if (got) {
      EXPECT_EQ(difference(bytes_of(u), *got), "") << "failed upload " << name << " (" << u.error
                                                   << ") left a different object";
    } else {
      EXPECT_EQ(got.error().code(), Code::kNotFound) << "failed upload " << name << ": " << got.error();
    }
  }
  std::cout << "[faults] multipart " << GetParam().name << ": " << uploads.size() << " uploads, "
            << acknowledged.load() << " acknowledged, " << failed << " failed around the kill\n";
  std::vector<std::string> leftovers;
  const Status quiet = silo::testing::wait_until([&] { return (leftovers = work_files(*cluster)).empty(); },
                                                  seconds(60), "no work files");
  EXPECT_TRUE(quiet.is_ok()) << leftovers.size() << " work files left, e.g. " << leftovers.front();
}

// One target whose one mountpath is a 64 MiB tmpfs, its out-of-space watermark at 100 %
// so that writes run into the drive's real ENOSPC: PUTs of 1 MiB until one fails. It
// fails with 507 InsufficientStorage (never a 5xx clients retry forever), nothing partial
// is listed or left in work/, every acknowledged object reads back, and once objects are
// deleted the same PUT succeeds.
TEST(FullDriveTest, AFullDriveAnswers507KeepsNothingPartialAndTakesWritesAgainAfterDeletes) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 1, .mountpaths = 1}));
  SmallMountpaths small;
  const Status mounted = small.replace(*cluster, "t1", 64);
  if (mounted.code() == Code::kFailedPrecondition) GTEST_SKIP() << mounted;
  ASSERT_OK(mounted);
  client::Client& c = cluster->client();
  ASSERT_OK(c.set_config(R"({"cache": {"oos_wm": 100, "high_wm": 100, "low_wm": 99}})"));
  ASSERT_OK(c.create_bucket("full"));
  silo::testing::Random random;
  Objects kept;
  Status refused;
  std::string refused_name;
  for (int i = 0; i < 200 && refused.is_ok(); ++i) {
    const std::string name = fmt::format("fill-{:03}", i);
    const std::string bytes = random.bytes(1 << 20);
    auto put = c.put("full", name, bytes);
    if (put) {
      kept[name] = bytes;
    } else {
      refused = put.status();
      refused_name = name;
    }
  }
  ASSERT_FALSE(refused.is_ok()) << "200 MiB fit on a 64 MiB drive";
  EXPECT_EQ(refused.code(), Code::kResourceExhausted) << refused;
  EXPECT_GT(kept.size(), 10u);
  EXPECT_EQ(c.get("full", refused_name).status().code(), Code::kNotFound) << "the refused PUT left an object";
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("full"));
  EXPECT_EQ(listed.size(), kept.size());
  expect_all_readable(c, kept, "full");
  EXPECT_EQ(work_files(*cluster), std::vector<std::string>{});

  // Free a quarter and write again.
  size_t deleted = 0;
  for (auto it = kept.begin(); it != kept.end() && deleted < kept.size() / 4;) {
    ASSERT_OK(c.remove("full", it->first));
    it = kept.erase(it);
    ++deleted;
  }
  const std::string again = random.bytes(1 << 20);
  ASSERT_OK(c.put("full", refused_name, again).status());
  kept[refused_name] = again;
  expect_all_readable(c, kept, "full");
}

}  // namespace
}  // namespace silo::integration
