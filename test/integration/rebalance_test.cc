// Membership changes and rebalance against real processes (docs/membership-and-rebalance.md):
// a target joins while a reader runs, maintenance and decommission, crashes in the middle.
// Every test checks every byte of every object and that no object is left twice on disk.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "objects_util.h"

namespace silo::integration {
namespace {

ClusterOptions options(int targets) {
  return {.proxies = 1, .targets = targets, .mountpaths = 2, .env = {{"SILO_DURABILITY", "page_cache"}}};
}

// 1 proxy + `targets` targets (2 mountpaths each) whose bucket kBucket holds `count`
// objects (put_objects), which it returns in `objects`.
Result<std::unique_ptr<LocalCluster>> start_filled(int targets, int count, Objects& objects) {
  ASSIGN_OR_RETURN(auto cluster, LocalCluster::start(options(targets)));
  RETURN_IF_ERROR(cluster->client().create_bucket(kBucket));
  objects = put_objects(*cluster, count);
  return cluster;
}

// What a settled cluster shows: every object reads back whole, is listed once, and has
// exactly one file on the targets' disks.
void expect_each_object_once(const LocalCluster& cluster, client::Client& c, const Objects& objects,
                             std::string_view when) {
  expect_all_readable(c, objects);
  expect_listing_complete(c, objects, when);
  EXPECT_EQ(files_on(cluster, cluster.target_ids()), objects.size()) << "objects left twice (or lost) on disk " << when;
}

TEST(RebalanceTest, AddedTargetGetsItsShareWhileReadsNeverFail) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, 2000, objects));
  client::Client& c = cluster->client();
  ASSERT_EQ(files_on(*cluster, cluster->target_ids()), objects.size());

  Reader reader(*cluster, objects);
  ASSERT_OK_AND_ASSIGN(const std::string added, cluster->add_node("target"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  const std::string job_id = map.rebalance_job();
  // Listings while objects move: each object exactly once.
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK_AND_ASSIGN(const client::JobEntry job, c.job(job_id));
    expect_listing_complete(c, objects, "during the rebalance");
    if (job.state != "running") break;
  }
  wait_rebalance(c, job_id);
  reader.stop();
  EXPECT_EQ(reader.failures(), 0u) << "of " << reader.reads() << " reads; first: " << reader.first_failure();
  EXPECT_GT(reader.reads(), 50u);

  ASSERT_OK_AND_ASSIGN(const client::JobEntry job, c.job(job_id));
  EXPECT_EQ(job.kind, "rebalance");
  EXPECT_EQ(job.errors, 0u);
  expect_each_object_once(*cluster, c, objects, "after the rebalance");
  // Spread over four targets.
  for (const std::string& id : cluster->target_ids()) {
    const size_t n = files_on(*cluster, {id});
    EXPECT_GT(n, objects.size() / 8) << "target " << id << " holds only " << n << " objects";
  }
}

TEST(RebalanceTest, MaintenanceMovesObjectsOffAndBackThenDecommissionRemovesTheNode) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, 600, objects));
  client::Client& c = cluster->client();

  // Maintenance: t3 stays in the map, its objects move off, new ones do not land on it.
  ASSERT_OK_AND_ASSIGN(const client::MembershipChange on, c.set_maintenance("t3", true));
  wait_rebalance(c, on.rebalance_job);
  ASSERT_OK_AND_ASSIGN(client::NodeMap map, c.node_map());
  ASSERT_NE(map.find("t3"), nullptr);
  EXPECT_EQ(map.find("t3")->mode, "maintenance");
  EXPECT_EQ(files_on(*cluster, {"t3"}), 0u);
  Objects more = put_objects(*cluster, 100, "more");
  objects.insert(more.begin(), more.end());
  EXPECT_EQ(files_on(*cluster, {"t3"}), 0u) << "a target in maintenance got new objects";
  expect_all_readable(c, objects);

  // Back from maintenance: it gets its share again.
  ASSERT_OK_AND_ASSIGN(const client::MembershipChange off, c.set_maintenance("t3", false));
  wait_rebalance(c, off.rebalance_job);
  EXPECT_GT(files_on(*cluster, {"t3"}), objects.size() / 8);
  expect_all_readable(c, objects);

  // The jobs registry keeps both; a rebalance cannot be aborted; unknown ids are 404.
  ASSERT_OK_AND_ASSIGN(const auto jobs, c.jobs());
  EXPECT_GE(jobs.size(), 2u);
  EXPECT_EQ(c.abort_job(off.rebalance_job).code(), Code::kFailedPrecondition);
  EXPECT_EQ(c.job("rebalance-999999").status().code(), Code::kNotFound);
  EXPECT_EQ(c.set_maintenance("t9", true).status().code(), Code::kNotFound);
  EXPECT_EQ(c.remove_node("t1").status().code(), Code::kFailedPrecondition) << "t1 is online";

  // Decommission: objects move off, then the node leaves the map and stops.
  ASSERT_OK_AND_ASSIGN(const client::MembershipChange gone, c.decommission("t2"));
  wait_rebalance(c, gone.rebalance_job);
  ASSERT_OK(silo::testing::wait_until(
      [&] {
        auto m = c.node_map();
        return m && m->find("t2") == nullptr;
      },
      seconds(30), "t2 removed from the node map"));
  ASSERT_OK_AND_ASSIGN(const NodeInfo t2, cluster->node("t2"));
  ASSERT_OK(silo::testing::wait_until([&] { return ::kill(t2.pid, 0) != 0; }, seconds(30), "t2 stopped"));
  expect_all_readable(c, objects);
  expect_listing_complete(c, objects, "after the decommission");
  EXPECT_EQ(files_on(*cluster, {"t1", "t3"}), objects.size());

  // Started again as a supervisor would (a StatefulSet restarts a pod that exits), t2
  // stays out: it answers health "decommissioned" and never joins as a new node.
  ASSERT_OK(cluster->launch("t2"));
  ASSERT_OK_AND_ASSIGN(auto t2_client, cluster->client_of("t2"));
  const auto says_decommissioned = [&] {
    auto r = t2_client->request(http::Method::kGet, "/v1/health");
    return r && r->status == 503 && r->body.find("decommissioned") != std::string::npos;
  };
  ASSERT_OK(silo::testing::wait_until(says_decommissioned, seconds(30), "t2 serving again"));
  std::this_thread::sleep_for(seconds(3));  // several keepalive intervals
  ASSERT_OK_AND_ASSIGN(const auto later, c.node_map());
  EXPECT_EQ(later.find("t2"), nullptr) << "a decommissioned node does not join again";
  EXPECT_TRUE(says_decommissioned());
  ASSERT_OK(cluster->kill("t2"));
}

TEST(RebalanceTest, KilledTargetAndPrimaryMidRebalanceConverge) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, 2000, objects));
  client::Client& c = cluster->client();

  ASSERT_OK_AND_ASSIGN(const std::string added, cluster->add_node("target"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  const std::string job_id = map.rebalance_job();
  ASSERT_FALSE(job_id.empty());
  // In the middle of it: a source target and the primary die.
  ASSERT_OK(cluster->kill("t1"));
  ASSERT_OK(cluster->kill("p1"));
  ASSERT_OK(cluster->restart("p1"));
  ASSERT_OK(cluster->restart("t1"));

  wait_rebalance(c, job_id);
  expect_each_object_once(*cluster, c, objects, "after the rebalance");
  EXPECT_GT(files_on(*cluster, {added}), objects.size() / 8);
}

size_t readable_count(client::Client& c, const Objects& objects) {
  size_t readable = 0;
  for (const auto& [name, bytes] : objects) {
    auto got = c.get(kBucket, name);
    if (!got) {
      EXPECT_EQ(got.error().code(), Code::kNotFound) << name << ": " << got.error();
      continue;
    }
    EXPECT_EQ(difference(bytes, *got), "") << name;  // never wrong bytes
    ++readable;
  }
  return readable;
}

TEST(ResilverTest, DisabledMountpathIsEmptiedAndFilledAgainWhenEnabled) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(1, 300, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  const std::string mp = t1.mountpaths[0];
  ASSERT_GT(object_files(mp).size(), 0u);
  ASSERT_OK_AND_ASSIGN(const wire::MountpathList before, mountpaths_of(*cluster, "t1"));
  const std::string id = mountpath_at(before, mp).id;
  ASSERT_FALSE(id.empty());
  ASSERT_OK_AND_ASSIGN(auto direct, cluster->client_of("t1"));

  ASSERT_OK_AND_ASSIGN(client::Response r, direct->request(http::Method::kPost, "/v1/mountpaths/" + id + "/disable"));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_OK(wait_resilver_done(*cluster, "t1"));
  EXPECT_EQ(object_files(mp).size(), 0u) << "objects left on the disabled mountpath";
  EXPECT_EQ(object_file_count(t1), objects.size());
  expect_all_readable(c, objects);
  // The last mountpath in service cannot be disabled.
  ASSERT_OK_AND_ASSIGN(const wire::MountpathList now, mountpaths_of(*cluster, "t1"));
  EXPECT_EQ(mountpath_at(now, mp).state, "disabled");
  const std::string other = mountpath_at(now, t1.mountpaths[1]).id;
  ASSERT_OK_AND_ASSIGN(r, direct->request(http::Method::kPost, "/v1/mountpaths/" + other + "/disable"));
  EXPECT_EQ(r.status, 409) << r.body;

  ASSERT_OK_AND_ASSIGN(r, direct->request(http::Method::kPost, "/v1/mountpaths/" + id + "/enable"));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_OK(wait_resilver_done(*cluster, "t1"));
  EXPECT_GT(object_files(mp).size(), objects.size() / 4);
  EXPECT_EQ(object_file_count(t1), objects.size());
  expect_all_readable(c, objects);
}

TEST(ResilverTest, RemovedMountpathIsTakenOutAndTheTargetKeepsServing) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(2, 300, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  const std::string mp = t1.mountpaths[0];
  const size_t lost = object_files(mp).size();
  ASSERT_GT(lost, 0u);

  std::error_code ec;
  std::filesystem::remove_all(mp, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_OK(silo::testing::wait_until(
      [&] {
        auto doc = mountpaths_of(*cluster, "t1");
        return doc && mountpath_at(*doc, mp).state == "failed";
      },
      seconds(10), "the removed mountpath to be taken out"));

  // With one copy per object (no other copies in this bucket) its objects are lost; every
  // other object reads, nothing reads wrong, and the target takes new objects.
  EXPECT_EQ(readable_count(c, objects), objects.size() - lost);
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all(kBucket, "", 1000));
  EXPECT_EQ(listed.size(), objects.size() - lost);
  const Objects more = put_objects(*cluster, 100, "after");
  expect_all_readable(c, more);
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  EXPECT_EQ(map.find("t1")->state, "online");
}

TEST(RebalanceTest, AdminAddsAWaitingTarget) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(2, 400, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const std::string waiting, cluster->add_waiting_node("target"));
  ASSERT_OK_AND_ASSIGN(const NodeInfo node, cluster->node(waiting));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap before, c.node_map());
  EXPECT_EQ(before.find(waiting), nullptr) << "a node started without a primary joined by itself";

  ASSERT_OK_AND_ASSIGN(const client::MembershipChange added, c.add_node(node.url));
  wait_rebalance(c, added.rebalance_job);
  ASSERT_OK_AND_ASSIGN(const client::NodeMap after, c.node_map());
  ASSERT_NE(after.find(waiting), nullptr);
  EXPECT_EQ(after.find(waiting)->state, "online");
  EXPECT_GT(files_on(*cluster, {waiting}), objects.size() / 8);
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), objects.size());
  expect_all_readable(c, objects);
  // Adding it again, or a URL where nothing listens, is refused with a clear error.
  EXPECT_EQ(c.add_node(node.url).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(c.add_node("http://127.0.0.1:1").status().code(), Code::kUnavailable);
  // It remembers the cluster across a restart.
  ASSERT_OK(cluster->restart(waiting));
  ASSERT_OK(cluster->wait_for_node_state(waiting, "online", seconds(20)));
}

TEST(RebalanceTest, DeletesAndOverwritesDuringARebalanceStick) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, 1500, objects));
  client::Client& c = cluster->client();

  ASSERT_OK_AND_ASSIGN(const std::string added, cluster->add_node("target"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  // While objects move: every 5th is deleted, every 5th + 1 rewritten with new bytes.
  silo::testing::Random random;
  std::vector<std::string> names;
  for (const auto& [name, bytes] : objects) names.push_back(name);
  for (size_t i = 0; i < names.size(); i += 5) {
    ASSERT_OK(c.remove(kBucket, names[i]));
    objects.erase(names[i]);
    const std::string& rewritten = names[i + 1];
    objects[rewritten] = random.bytes(random.uniform(1, 8192));
    ASSERT_OK(c.put(kBucket, rewritten, objects[rewritten]).status());
  }
  wait_rebalance(c, map.rebalance_job());

  // Deleted ones stay deleted (no copy comes back), rewritten ones keep the new bytes.
  for (size_t i = 0; i < names.size(); i += 5) {
    EXPECT_EQ(c.get(kBucket, names[i]).status().code(), Code::kNotFound) << names[i] << " came back";
  }
  expect_each_object_once(*cluster, c, objects, "after the rebalance");
}

TEST(RebalanceTest, ANewerChangePreemptsARunningRebalance) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(2, 1500, objects));
  client::Client& c = cluster->client();

  // Two changes of owners back to back: the first rebalance is cut short by the second.
  ASSERT_OK_AND_ASSIGN(const client::MembershipChange first, c.set_maintenance("t2", true));
  ASSERT_OK_AND_ASSIGN(const client::MembershipChange second, c.set_maintenance("t2", false));
  ASSERT_NE(first.rebalance_job, second.rebalance_job);
  wait_rebalance(c, second.rebalance_job);
  ASSERT_OK_AND_ASSIGN(const client::JobEntry old, c.job(first.rebalance_job));
  EXPECT_TRUE(old.state == "preempted" || old.state == "finished") << old.state;
  EXPECT_NE(old.detail.find(second.rebalance_job), std::string::npos) << old.detail;
  ASSERT_OK_AND_ASSIGN(const client::JobEntry now, c.job(second.rebalance_job));
  EXPECT_EQ(now.objects_remaining, 0u);

  expect_each_object_once(*cluster, c, objects, "after two rebalances");
  EXPECT_GT(files_on(*cluster, {"t2"}), objects.size() / 4) << "t2 is back in service and owns its share";
}

TEST(RebalanceTest, AnObjectThatCannotMoveFailsTheRebalanceWithTheReasonAndANewOneFinishesOnceFixed) {
  // On t1 alone: objects whose only copy is corrupt, then good ones. Walks give up after
  // 5 s (and 5 passes) instead of the default 3 minutes.
  ClusterOptions quick = options(1);
  quick.env.push_back({"SILO_REBALANCE_GIVE_UP_S", "5"});
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(quick));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kBucket));
  const Objects rotten = put_objects(*cluster, 40, "rotten");
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  ASSERT_EQ(corrupt_files(t1), rotten.size());
  const Objects objects = put_objects(*cluster, 200, "good");

  // t2 joins: the corrupt objects it now owns cannot move (no good copy anywhere).
  ASSERT_OK_AND_ASSIGN(const std::string added, cluster->add_node("target"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  ASSERT_OK_AND_ASSIGN(const client::JobEntry failed, c.wait_job(map.rebalance_job(), seconds(120)));
  EXPECT_EQ(failed.state, "failed") << failed.phase << ": " << failed.detail;
  EXPECT_NE(failed.detail.find("could not be moved"), std::string::npos) << failed.detail;
  EXPECT_NE(failed.detail.find("rotten"), std::string::npos) << "names an object: " << failed.detail;
  expect_all_readable(c, objects);  // moved, or read from where they are

  // The cause removed, a new rebalance moves the rest and finishes.
  for (const auto& entry : rotten) ASSERT_OK(c.remove(kBucket, entry.first));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry again, c.start_job(R"({"kind":"rebalance"})"));
  EXPECT_EQ(again.kind, "rebalance");
  EXPECT_NE(again.id, failed.id);
  wait_rebalance(c, again.id);
  expect_each_object_once(*cluster, c, objects, "after the second rebalance");
  EXPECT_GT(files_on(*cluster, {added}), objects.size() / 4) << "the joined target owns its share";
}

}  // namespace
}  // namespace silo::integration
