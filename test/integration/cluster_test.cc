// Node map, placement over targets and mountpaths, whole-cluster restart, and a target
// that dies and comes back.
#include <gtest/gtest.h>

#include <map>

#include "test_util.h"
#include "testing/random.h"

namespace silo::integration {
namespace {

TEST(ClusterTest, NodeMapShowsEveryNodeOnline) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  ASSERT_OK(cluster->client().health());
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, cluster->client().node_map());
  EXPECT_EQ(map.primary, "p1");
  EXPECT_GT(map.version, 0u);
  ASSERT_EQ(map.nodes.size(), 4u) << "nodes in the map: " << map.nodes.size();
  for (const std::string& id : cluster->node_ids()) {
    const client::NodeEntry* n = map.find(id);
    ASSERT_NE(n, nullptr) << "node " << id << " is missing from the node map";
    EXPECT_EQ(n->state, "online") << "node " << id;
    ASSERT_OK_AND_ASSIGN(const NodeInfo info, cluster->node(id));
    EXPECT_EQ(n->role, info.role) << "node " << id;
    EXPECT_EQ(n->url, info.url) << "node " << id;
    // Every node answers health and knows the same primary.
    ASSERT_OK_AND_ASSIGN(auto direct, cluster->client_of(id));
    EXPECT_OK(direct->health());
    ASSERT_OK_AND_ASSIGN(const client::NodeMap seen, direct->node_map());
    EXPECT_EQ(seen.primary, "p1") << "as seen by " << id;
  }
}

TEST(ClusterTest, ObjectsSpreadOverAllTargetsAndMountpaths) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .mountpaths = 2,
                                                          .env = {{"SILO_DURABILITY", "page_cache"}}}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("spread"));
  silo::testing::Random random;
  constexpr int kObjects = 300;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < kObjects; ++i) {
    const std::string name = fmt::format("obj-{:04}", i);
    objects[name] = random.bytes(random.uniform(1, 2048));
    ASSERT_OK(c.put("spread", name, objects[name]));
  }
  size_t total = 0;
  for (const std::string& id : cluster->target_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo node, cluster->node(id));
    ASSERT_EQ(node.mountpaths.size(), 2u) << "target " << id;
    size_t on_target = 0;
    for (const std::string& mp : node.mountpaths) {
      const size_t n = object_files(mp).size();
      EXPECT_GT(n, 0u) << "mountpath " << mp << " of target " << id << " holds no object file";
      on_target += n;
    }
    EXPECT_GT(on_target, 0u) << "target " << id << " holds no object";
    total += on_target;
  }
  EXPECT_EQ(total, static_cast<size_t>(kObjects)) << "object files on all targets together";
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get("spread", name));
    ASSERT_EQ(difference(bytes, got), "") << "object " << name;
  }
}

TEST(ClusterTest, RestartKeepsEveryObjectAndTheListing) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  ASSERT_OK(cluster->client().create_bucket("durable"));
  ASSERT_OK(cluster->client().create_bucket("empty-one"));
  silo::testing::Random random;
  std::map<std::string, std::string> objects;
  objects["zero-bytes"] = "";
  for (int i = 0; i < 80; ++i) objects[fmt::format("dir{}/obj-{:03}", i % 4, i)] = random.bytes(random.uniform(1, 256 * 1024));
  for (const auto& [name, bytes] : objects) ASSERT_OK(cluster->client().put("durable", name, bytes));
  ASSERT_OK_AND_ASSIGN(const auto before, cluster->client().list_all("durable"));
  ASSERT_EQ(before.size(), objects.size());

  ASSERT_OK(cluster->restart_all());

  client::Client& c = cluster->client();  // the same endpoint: ports are pinned across restarts
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  for (const auto& n : map.nodes) EXPECT_EQ(n.state, "online") << "node " << n.id << " after the restart";
  ASSERT_OK_AND_ASSIGN(const auto buckets, c.list_buckets());
  EXPECT_EQ(buckets.size(), 2u) << "buckets after the restart";
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get("durable", name));
    EXPECT_EQ(difference(bytes, got), "") << "object " << name << " after the restart";
  }
  ASSERT_OK_AND_ASSIGN(const auto after, c.list_all("durable"));
  ASSERT_EQ(after.size(), before.size()) << "listing size after the restart";
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].name, before[i].name) << "listing entry " << i;
    EXPECT_EQ(after[i].size, before[i].size) << "size of " << before[i].name;
    EXPECT_EQ(after[i].etag, before[i].etag) << "etag of " << before[i].name;
  }
}

TEST(ClusterTest, KilledTargetIsMarkedDownAnswers503AndServesAgainAfterRestart) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .env = {{"SILO_KEEPALIVE_INTERVAL_MS", "200"},
                                                                  {"SILO_KEEPALIVE_TIMEOUT_MS", "1000"}}}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("failover"));
  silo::testing::Random random;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 30; ++i) {
    const std::string name = fmt::format("obj-{:02}", i);
    objects[name] = random.bytes(random.uniform(1, 64 * 1024));
    ASSERT_OK(c.put("failover", name, objects[name]));
  }
  ASSERT_OK_AND_ASSIGN(const NodeInfo victim, cluster->node("t2"));
  ASSERT_GT(object_file_count(victim), 0u) << "t2 owns none of the 30 objects; the test needs some";

  ASSERT_OK(cluster->kill("t2"));
  ASSERT_OK(cluster->wait_for_node_state("t2", "down", seconds(10)));

  size_t unavailable = 0;
  for (const auto& [name, bytes] : objects) {
    auto got = c.get("failover", name);
    if (got) {
      EXPECT_EQ(difference(bytes, *got), "") << "object " << name << " while t2 is down";
      continue;
    }
    EXPECT_EQ(got.error().code(), Code::kUnavailable)
        << "object " << name << " on the dead target must answer 503, not: " << got.error();
    ++unavailable;
  }
  EXPECT_EQ(unavailable, object_file_count(victim)) << "objects answering 503 vs object files on t2";
  EXPECT_CODE(c.list("failover"), Code::kUnavailable);

  ASSERT_OK(cluster->restart("t2"));
  ASSERT_OK(cluster->wait_for_node_state("t2", "online", seconds(10)));
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get("failover", name));
    EXPECT_EQ(difference(bytes, got), "") << "object " << name << " after t2 came back";
  }
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("failover"));
  EXPECT_EQ(listed.size(), objects.size());
}

}  // namespace
}  // namespace silo::integration
