// Data protection against real processes (docs/data-protection.md): buckets with several
// copies survive a killed target and get the copies back when it is replaced; corrupt
// copies are never served and are repaired; the copy count of a filled bucket changes
// while a reader runs. Every test checks every byte of every object.
#include <gtest/gtest.h>

#include "objects_util.h"
#include "placement/hrw.h"

namespace silo::integration {
namespace {

ClusterOptions options(int targets) {
  return {.proxies = 1,
          .targets = targets,
          .mountpaths = 2,
          .env = {{"SILO_DURABILITY", "page_cache"}, {"SILO_KEEPALIVE_TIMEOUT_MS", "2000"}}};
}

// 1 proxy + `targets` targets; bucket kBucket with `props` holds `count` objects.
Result<std::unique_ptr<LocalCluster>> start_filled(int targets, std::string props, int count, Objects& objects) {
  ASSIGN_OR_RETURN(auto cluster, LocalCluster::start(options(targets)));
  RETURN_IF_ERROR(cluster->client().create_bucket(kBucket, std::move(props)));
  objects = put_objects(*cluster, count);
  return cluster;
}

// Every object read twice in a row (the proxy turns to the other copy for the second).
void read_each_twice(client::Client& c, const Objects& objects) {
  for (const auto& [name, bytes] : objects) {
    for (int i = 0; i < 2; ++i) {
      auto got = c.get(kBucket, name);
      ASSERT_TRUE(got.has_value()) << name << ": " << got.status();
      ASSERT_EQ(difference(bytes, *got), "") << name;
    }
  }
}

TEST(ProtectionTest, TwoCopiesSurviveAKilledTargetAndComeBackWhenItIsReplaced) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 300, objects));
  client::Client& c = cluster->client();
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), 2 * objects.size()) << "two copies of each object";
  ASSERT_OK_AND_ASSIGN(const auto props, c.bucket_props(kBucket));
  EXPECT_EQ(props.copies, 2u);

  // Killed: reads go to the other copy, before and after the node is marked down.
  ASSERT_OK(cluster->kill("t2"));
  expect_all_readable(c, objects);
  ASSERT_OK(cluster->wait_for_node_state("t2", "down", seconds(20)));
  expect_all_readable(c, objects);
  expect_listing_complete(c, objects, "with a target down");
  // A sync write whose copies include the down target is refused, never acknowledged short.
  size_t refused = 0;
  for (int i = 0; i < 20; ++i) {
    auto put = c.put(kBucket, fmt::format("while-down-{}", i), "x");
    if (!put) ++refused;
  }
  EXPECT_GT(refused, 0u) << "no write needed the down target";

  ASSERT_OK(cluster->restart("t2"));
  expect_all_readable(c, objects);
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), 2 * (objects.size()) + 2 * (20 - refused));

  // Lost for good: forgotten and replaced by a new target, the copies are made again.
  ASSERT_OK(cluster->kill("t3"));
  ASSERT_OK(cluster->wait_for_node_state("t3", "down", seconds(20)));
  ASSERT_OK(c.remove_node("t3").status());
  ASSERT_OK_AND_ASSIGN(const std::string added, cluster->add_node("target"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  wait_rebalance(c, map.rebalance_job());
  expect_all_readable(c, objects);
  EXPECT_EQ(files_on(*cluster, {"t1", "t2", added}), 2 * (objects.size() + 20 - refused))
      << "each object has its two copies on the targets now in the cluster";
  EXPECT_GT(files_on(*cluster, {added}), objects.size() / 4) << "the new target holds its share";
}

TEST(ProtectionTest, CorruptCopiesAreNeverServedAndAreRepaired) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 200, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  const size_t corrupted = corrupt_files(t1);
  ASSERT_GT(corrupted, objects.size() / 4);

  // Reads alternate between the two copies: reading each object twice in a row reads
  // every copy.
  read_each_twice(c, objects);
  const uint64_t found = sum_over_targets(*cluster, "silo_target_corrupt_copies_total");
  EXPECT_EQ(found, corrupted) << "every corrupt copy was found by a read";
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_repaired_total"), found);
  // Repaired for good: reading every copy again finds nothing new.
  read_each_twice(c, objects);
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), found);

  // With one copy there is nothing to repair from: the read fails, the bad bytes never go out.
  ASSERT_OK(c.create_bucket("single"));
  ASSERT_OK_AND_ASSIGN(const auto single, c.bucket_props("single"));
  ASSERT_OK(c.put("single", "only", std::string(100000, 'a')));
  size_t changed = 0;
  for (const auto& id : cluster->target_ids()) {
    if (auto node = cluster->node(id)) changed += corrupt_files(*node, single.id);
  }
  ASSERT_EQ(changed, 1u);
  auto got = c.get("single", "only");
  ASSERT_FALSE(got) << "a corrupt object was served";
  EXPECT_NE(got.error().to_string().find("checksum"), std::string::npos) << got.error();
}

TEST(ProtectionTest, CopiesChangeOnAFilledBucketWhileReadsNeverFail) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, "", 500, objects));
  client::Client& c = cluster->client();
  ASSERT_EQ(files_on(*cluster, cluster->target_ids()), objects.size());
  Reader reader(*cluster, objects);

  ASSERT_OK(c.set_bucket_props(kBucket, R"({"copies": 2})"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap up, c.node_map());
  wait_rebalance(c, up.rebalance_job());
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), 2 * objects.size());

  ASSERT_OK(c.set_bucket_props(kBucket, R"({"copies": 1})"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap down, c.node_map());
  ASSERT_NE(down.rebalance_job(), up.rebalance_job());
  wait_rebalance(c, down.rebalance_job());
  reader.stop();
  EXPECT_EQ(reader.failures(), 0u) << "of " << reader.reads() << " reads; first: " << reader.first_failure();
  EXPECT_GT(reader.reads(), 50u);
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), objects.size());
  expect_all_readable(c, objects);
  expect_listing_complete(c, objects, "after the copies changed");

  // More copies than targets, or nonsense, is refused with the reason.
  const Status too_many = c.set_bucket_props(kBucket, R"({"copies": 4})");
  EXPECT_EQ(too_many.code(), Code::kInvalidArgument) << too_many;
  EXPECT_NE(too_many.to_string().find("targets"), std::string::npos) << too_many;
  EXPECT_EQ(c.set_bucket_props(kBucket, R"({"copies": 0})").code(), Code::kInvalidArgument);
  EXPECT_EQ(c.set_bucket_props(kBucket, R"({"write": "later"})").code(), Code::kInvalidArgument);
}

TEST(ProtectionTest, ScrubRepairsCorruptCopiesAndRestoresMissingOnes) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 200, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  const size_t corrupted = corrupt_files(t1);
  ASSERT_GT(corrupted, 0u);

  ASSERT_OK_AND_ASSIGN(const client::JobEntry started, c.start_job(R"({"kind": "scrub"})"));
  EXPECT_EQ(started.kind, "scrub");
  ASSERT_OK_AND_ASSIGN(const client::JobEntry scrub, c.wait_job(started.id, seconds(120)));
  EXPECT_EQ(scrub.state, "finished") << scrub.detail;
  EXPECT_EQ(scrub.corrupt_found, corrupted);
  EXPECT_EQ(scrub.corrupt_repaired, corrupted);
  EXPECT_EQ(scrub.errors, 0u) << scrub.detail;
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_repaired_total"), corrupted);
  read_each_twice(c, objects);
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), corrupted) << "a read found one left";

  // Async writes while a holder is down are acknowledged with one copy; a scrub after it
  // returns gives it its copies.
  ASSERT_OK(c.create_bucket("later", R"({"copies": 2, "write": "async"})"));
  ASSERT_OK_AND_ASSIGN(const auto later, c.bucket_props("later"));
  EXPECT_EQ(later.write, "async");
  ASSERT_OK(cluster->kill("t2"));
  ASSERT_OK(cluster->wait_for_node_state("t2", "down", seconds(20)));
  // Objects that t2 keeps the second copy of (its owner is up and takes the write).
  const placement::HrwCandidates targets({"t1", "t2", "t3"});
  Objects written;
  for (int i = 0; written.size() < 40; ++i) {
    const std::string name = fmt::format("late-{:04}", i);
    const auto ranking = targets.ranking(ObjectRef{BucketId(later.id), name}, 2);
    if (targets.id(ranking[1]) != "t2") continue;
    written[name] = fmt::format("bytes of {} ", name) + std::string(i * 97 % 5000, 'z');
    ASSERT_OK(c.put("later", name, written[name]));
  }
  ASSERT_OK(cluster->restart("t2"));
  ASSERT_LT(bucket_files(*cluster, later.id), 2 * written.size()) << "t2 got copies while it was down?";
  ASSERT_OK_AND_ASSIGN(const client::JobEntry again, c.start_job(R"({"kind": "scrub", "bucket": "later"})"));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry restored, c.wait_job(again.id, seconds(120)));
  EXPECT_EQ(restored.state, "finished") << restored.detail;
  EXPECT_GT(restored.copies_restored, 0u);
  EXPECT_EQ(restored.corrupt_found, 0u);
  EXPECT_EQ(bucket_files(*cluster, later.id), 2 * written.size());
  expect_all_readable(c, written, "later");

  // A slow scrub can be stopped; bad requests name the problem.
  ASSERT_OK_AND_ASSIGN(const client::JobEntry slow, c.start_job(R"({"kind": "scrub", "rate_mb_s": 0.01})"));
  ASSERT_OK(c.abort_job(slow.id));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry aborted, c.job(slow.id));
  EXPECT_EQ(aborted.state, "aborted");
  EXPECT_EQ(c.start_job(R"({"kind": "defrag"})").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(c.start_job(R"({"kind": "scrub", "bucket": "nope"})").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace silo::integration
