// kill -9 of a target while many PUTs stream through the proxy, into a plain, a copies=2
// and an erasure-coded (2+1) bucket: nothing acknowledged is lost or changed, nothing
// partial becomes visible, and (plain) no work file or orphan object file remains.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/text.h"
#include "objects_util.h"
#include "test_util.h"
#include "wire/codec.h"

namespace silo::integration {
namespace {

// The names target `id` lists for `bucket` (its own objects only), from its internal
// listing endpoint.
Result<size_t> objects_listed_by(LocalCluster& cluster, const std::string& id, std::string_view bucket) {
  ASSIGN_OR_RETURN(auto direct, cluster.client_of(id));
  size_t count = 0;
  std::string start_after;
  for (;;) {
    const std::string target = fmt::format("/v1/internal/list/{}?limit=10000&start_after={}", bucket,
                                           text::percent_encode(start_after));
    ASSIGN_OR_RETURN(const client::Response r, direct->request(http::Method::kGet, target));
    RETURN_IF_ERROR(client::Client::status_of(r, "GET " + target));
    ASSIGN_OR_RETURN(const wire::ListPage page, wire::decode<wire::ListPage>(r.body, wire::Source::kNetwork));
    count += static_cast<size_t>(page.entries_size());
    if (!page.is_truncated() || page.entries_size() == 0) return count;
    start_after = page.entries(page.entries_size() - 1).name();
  }
}

struct Layout {
  std::string name;
  std::string props;  // the bucket's properties (JSON)
};

void PrintTo(const Layout& layout, std::ostream* out) { *out << layout.name; }

class CrashTest : public ::testing::TestWithParam<Layout> {};

INSTANTIATE_TEST_SUITE_P(Layouts, CrashTest,
                         ::testing::Values(Layout{"plain", "{}"}, Layout{"copies2", R"({"copies": 2})"},
                                           Layout{"ec21", R"({"ec": {"data": 2, "parity": 1}})"}),
                         [](const ::testing::TestParamInfo<Layout>& layout) { return layout.param.name; });

TEST_P(CrashTest, KillTargetDuringConcurrentPutsLosesNothingAcknowledged) {
  const bool is_plain = GetParam().name == "plain";
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .env = {{"SILO_KEEPALIVE_INTERVAL_MS", "200"},
                                                                  {"SILO_KEEPALIVE_TIMEOUT_MS", "1000"}}}));
  ASSERT_OK(cluster->client().create_bucket("crash", GetParam().props));
  LedgerWriters writers(*cluster, "crash", 4, 64 * 1024, 4 * 1024 * 1024);
  Status warmed = silo::testing::wait_until([&] { return writers.acknowledged() >= 24; }, seconds(20),
                                            "24 acknowledged PUTs");
  ASSERT_OK(warmed);

  ASSERT_OK(kill_under_writers_and_restart(*cluster, writers, "t2", 24, seconds(20)));

  client::Client& c = cluster->client();
  const size_t failed = writers.check(c, "crash");
  std::cout << "[faults] " << GetParam().name << ": " << writers.attempts() << " PUTs, " << writers.acknowledged()
            << " acknowledged, " << failed << " failed around the kill\n";
  if (is_plain) {
    // With copies or slices a PUT may outlive the kill of one holder.
    EXPECT_GT(failed, 0u) << "no PUT failed: the kill did not hit any PUT in flight (attempts: "
                          << writers.attempts() << ")";
  }
  // The restarted target may be taking copies or slices back (a rebalance, a repair on
  // read) while this runs: their work files are writes in flight, not leftovers. A leak
  // stays; a write in flight ends.
  EXPECT_OK(wait_for_no_work_files(*cluster, seconds(60)));
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("crash"));
  EXPECT_GE(listed.size(), static_cast<size_t>(writers.acknowledged()));
  // Copies and slices of one object live on several targets: the file counts below are
  // the plain layout's.
  if (!is_plain) return;

  ASSERT_OK_AND_ASSIGN(const NodeInfo t2, cluster->node("t2"));
  ASSERT_OK_AND_ASSIGN(const size_t listed_by_t2, objects_listed_by(*cluster, "t2", "crash"));
  EXPECT_EQ(object_file_count(t2), listed_by_t2) << "object files on t2 vs objects t2 lists (orphans?)";
  size_t files = 0;
  for (const auto& id : cluster->target_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo n, cluster->node(id));
    files += object_file_count(n);
  }
  EXPECT_EQ(files, listed.size()) << "object files on all targets vs objects listed by the proxy";
}

// A drive that loses synced bytes (a power cut under a lying cache) leaves records whose
// files are missing or short. After the restart those objects of a one-copy bucket stay
// listed, GET answers DataLoss (never 404, never the short bytes), the
// target counts them, and a client can delete or rewrite them (issue #23 F7, ADR 0021).
TEST(LostBytesTest, ObjectsWhoseFilesADriveLostStayListedAndAnswerDataLoss) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 2}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kBucket));
  const Objects objects = put_objects(*cluster, 40);
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  ASSERT_OK(cluster->kill("t1"));
  size_t damaged = 0;
  for (const auto& mp : t1.mountpaths) {
    for (const auto& path : object_files(mp)) {
      if (damaged % 2 == 0) {
        std::filesystem::remove(path);
      } else {
        std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
      }
      ++damaged;
    }
  }
  ASSERT_GT(damaged, 1u) << "t1 holds none of the objects";
  ASSERT_OK(cluster->restart("t1"));
  ASSERT_OK(cluster->wait_for_node_state("t1", "online", seconds(10)));

  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all(kBucket));
  EXPECT_EQ(listed.size(), objects.size()) << "a lost object left the listing";
  size_t lost = 0;
  std::string lost_name;
  for (const auto& [name, bytes] : objects) {
    auto got = c.get(kBucket, name);
    if (got) {
      EXPECT_EQ(difference(bytes, *got), "") << name;
      continue;
    }
    EXPECT_EQ(got.error().code(), Code::kDataLoss) << name << ": " << got.error();
    ++lost;
    lost_name = name;
  }
  EXPECT_EQ(lost, damaged);
  EXPECT_EQ(metric_sum(t1.url, "silo_target_objects_lost"), damaged);
  ASSERT_OK_AND_ASSIGN(const auto s3, c.request(http::Method::kGet, fmt::format("/{}/{}", kBucket, lost_name)));
  EXPECT_EQ(s3.status, 500) << s3.body;
  EXPECT_NE(s3.body.find("<Code>DataLoss</Code>"), std::string::npos) << s3.body;

  // The client decides: a rewrite reads back, a delete makes it gone.
  ASSERT_OK(c.put(kBucket, lost_name, "written again").status());
  ASSERT_OK_AND_ASSIGN(const std::string again, c.get(kBucket, lost_name));
  EXPECT_EQ(again, "written again");
  ASSERT_OK(c.remove(kBucket, lost_name));
  EXPECT_EQ(c.get(kBucket, lost_name).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace silo::integration
