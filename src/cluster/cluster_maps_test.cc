#include "cluster/cluster_maps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

namespace silo::cluster {
namespace {

class ClusterMapsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("silo-maps-" + std::to_string(std::random_device()()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

wire::NodeMap node_map(uint64_t version, int targets) {
  wire::NodeMap map;
  map.set_version(version);
  map.set_primary_id("p1");
  auto* p = map.add_nodes();
  p->set_id("p1");
  p->set_role(wire::NODE_ROLE_PROXY);
  for (int i = 1; i <= targets; ++i) {
    auto* t = map.add_nodes();
    t->set_id("t" + std::to_string(i));
    t->set_role(wire::NODE_ROLE_TARGET);
    t->set_state(wire::NODE_STATE_ONLINE);
  }
  return map;
}

TEST_F(ClusterMapsTest, InstallsOnlyNewerVersionsAndPersistsThem) {
  auto maps = ClusterMaps::open(dir_.string());
  ASSERT_TRUE(maps.has_value()) << maps.status();
  EXPECT_EQ((*maps)->node_map()->version(), 0u);
  EXPECT_TRUE(*(*maps)->install(node_map(3, 2)));
  EXPECT_FALSE(*(*maps)->install(node_map(3, 5)));  // same version: refused
  EXPECT_FALSE(*(*maps)->install(node_map(2, 5)));  // older: refused
  EXPECT_EQ((*maps)->node_map()->nodes_size(), 3);

  wire::BucketMap buckets;
  buckets.set_version(1);
  buckets.set_next_bucket_id(2);
  auto* b = buckets.add_buckets();
  b->set_name("photos");
  b->set_id(1);
  EXPECT_TRUE(*(*maps)->install(buckets));

  auto reopened = ClusterMaps::open(dir_.string());
  ASSERT_TRUE(reopened.has_value());
  EXPECT_EQ((*reopened)->node_map()->version(), 3u);
  EXPECT_EQ((*reopened)->find_bucket("photos")->id(), 1u);
  EXPECT_FALSE((*reopened)->find_bucket("nope").has_value());
  EXPECT_EQ((*reopened)->find_node("t2")->role(), wire::NODE_ROLE_TARGET);
}

TEST_F(ClusterMapsTest, PlacementCountsTargetsButNotMaintenanceOrProxies) {
  auto maps = ClusterMaps::open(dir_.string());
  ASSERT_TRUE(maps.has_value());
  auto map = node_map(1, 3);
  map.mutable_nodes(2)->set_state(wire::NODE_STATE_DOWN);         // t2: still an owner
  map.mutable_nodes(3)->set_state(wire::NODE_STATE_MAINTENANCE);  // t3: owns nothing
  ASSERT_TRUE(*(*maps)->install(map));
  const auto placement = (*maps)->placement();
  ASSERT_EQ(placement->targets().size(), 2u);
  EXPECT_EQ(placement->targets()[0].id(), "t1");
  EXPECT_EQ(placement->targets()[1].id(), "t2");
  for (int i = 0; i < 100; ++i) {
    EXPECT_NE(placement->owner({BucketId(1), std::to_string(i)}).id(), "t3");
  }
}

TEST_F(ClusterMapsTest, ModesTakeOwnershipAwayButHoldersStayRanked) {
  auto map = node_map(1, 4);
  map.mutable_nodes(3)->set_mode(wire::NODE_MODE_MAINTENANCE);      // t3
  map.mutable_nodes(4)->set_mode(wire::NODE_MODE_DECOMMISSIONING);  // t4
  EXPECT_EQ(owner_ids(map), (std::vector<std::string>{"t1", "t2"}));
  const TargetPlacement placement(map);
  ASSERT_EQ(placement.targets().size(), 2u);
  for (int i = 0; i < 200; ++i) {
    const ObjectRef object{BucketId(7), "o" + std::to_string(i)};
    const auto ranked = placement.ranked_holders(object);
    // Every target is a place to look, each once, the owner among them.
    ASSERT_EQ(ranked.size(), 4u);
    std::set<std::string> ids;
    for (const auto& n : ranked) ids.insert(n.id());
    EXPECT_EQ(ids.size(), 4u);
    EXPECT_TRUE(ids.contains(placement.owner(object).id()));
  }
  // A change of mode is a change of owners; a node going down is not.
  auto down = map;
  down.mutable_nodes(1)->set_state(wire::NODE_STATE_DOWN);
  EXPECT_EQ(owner_ids(down), owner_ids(map));
  auto back = map;
  back.mutable_nodes(3)->set_mode(wire::NODE_MODE_NORMAL);
  EXPECT_NE(owner_ids(back), owner_ids(map));
}

TEST_F(ClusterMapsTest, CorruptPersistedMapIsAnErrorNotACrash) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "node_map.pb") << "\xff\xff garbage";
  auto maps = ClusterMaps::open(dir_.string());
  ASSERT_FALSE(maps.has_value());
  EXPECT_EQ(maps.error().code(), Code::kDataLoss);
}

TEST_F(ClusterMapsTest, ListenersHearEveryInstalledChange) {
  auto maps = ClusterMaps::open(dir_.string());
  ASSERT_TRUE(maps.has_value());
  int calls = 0;
  (*maps)->on_change([&] { ++calls; });
  ASSERT_TRUE(*(*maps)->install(node_map(1, 1)));
  ASSERT_FALSE(*(*maps)->install(node_map(1, 1)));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace silo::cluster
