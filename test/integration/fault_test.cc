// Faults a running cluster meets (issue #23 item 4), beside crash_test.cc (kill -9 under
// PUTs), rebalance_test.cc (kills mid-rebalance), dsort_test.cc (a kill mid-dsort) and
// ha_test.cc (nftables partitions of the HA control plane): kill -9 of a target while
// multipart uploads complete into plain and EC buckets, with a ledger of what was
// acknowledged; a drive that fills up answers 507, keeps nothing partial and takes
// writes again once objects are deleted.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <thread>

#include "objects_util.h"
#include "test_util.h"
#include "testing/random.h"

namespace silo::integration {
namespace {

constexpr uint64_t kPart = 5 << 20;  // S3's smallest part (all but the last)

// A multipart upload of `bytes` in parts of kPart, two at a time, then its completion.
Status upload(client::Client& c, std::string_view bucket, const std::string& name, const std::string& bytes) {
  return c
      .put_multipart(bucket, name, bytes.size(), kPart, 2,
                     [&](uint64_t offset, std::span<char> out) -> Result<size_t> {
                       const size_t n = std::min(out.size(), bytes.size() - offset);
                       std::copy_n(bytes.data() + offset, n, out.data());
                       return n;
                     })
      .status();
}

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
  LedgerWriters writers(*cluster, "uploads", 3, kPart + 1, 3 * kPart, {}, upload);
  ASSERT_OK(silo::testing::wait_until([&] { return writers.acknowledged() >= 6; }, seconds(60),
                                      "6 completed uploads"));
  silo::testing::Random random;
  std::this_thread::sleep_for(milliseconds(random.uniform(0, 400)));  // a random moment
  ASSERT_OK(kill_under_writers_and_restart(*cluster, writers, "t2", 6, seconds(60)));

  const size_t failed = writers.check(cluster->client(), "uploads");
  std::cout << "[faults] multipart " << GetParam().name << ": " << writers.attempts() << " uploads, "
            << writers.acknowledged() << " acknowledged, " << failed << " failed around the kill\n";
  EXPECT_OK(wait_for_no_work_files(*cluster, seconds(60)));
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
