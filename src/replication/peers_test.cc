// Who holds what under the maps of now (peers.h): every data service asks Peers, so its
// answers decide where copies and slices go.
#include "replication/peers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>

#include "cluster/cluster_maps.h"

namespace silo::replication {
namespace {

constexpr uint64_t kCopies = 1;   // three copies
constexpr uint64_t kCoded = 2;    // erasure-coded 2 + 1
constexpr uint64_t kSingle = 3;   // one copy, page-cache durability

wire::Bucket bucket(const std::string& name, uint64_t id) {
  wire::Bucket b;
  b.set_name(name);
  b.set_id(id);
  return b;
}

class PeersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("silo-peers-" + std::to_string(std::random_device()()));
    auto maps = cluster::ClusterMaps::open(dir_.string());
    ASSERT_TRUE(maps.has_value()) << maps.status();
    maps_ = std::move(*maps);
    install_node_map(wire::REBALANCE_PHASE_DONE);
    wire::BucketMap buckets;
    buckets.set_version(1);
    buckets.set_next_bucket_id(4);
    auto copies = bucket("copies", kCopies);
    copies.mutable_props()->set_copies(3);
    auto coded = bucket("coded", kCoded);
    coded.mutable_props()->mutable_ec()->set_data(2);
    coded.mutable_props()->mutable_ec()->set_parity(1);
    auto single = bucket("single", kSingle);
    single.mutable_props()->set_durability(wire::DURABILITY_PAGE_CACHE);
    *buckets.add_buckets() = copies;
    *buckets.add_buckets() = coded;
    *buckets.add_buckets() = single;
    ASSERT_TRUE(maps_->install(buckets).has_value());
    wire::NodeInfo self;
    self.set_id("t2");
    config_ = std::make_shared<config::LiveConfig>(config::ClusterConfig{});
    peers_ = std::make_unique<Peers>(self, *maps_, config_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Five targets; t5 in maintenance (it owns nothing but may still have copies).
  void install_node_map(wire::RebalancePhase phase) {
    wire::NodeMap map;
    map.set_version(++node_map_version_);
    map.set_rebalance_phase(phase);
    for (int i = 1; i <= 5; ++i) {
      auto* t = map.add_nodes();
      t->set_id("t" + std::to_string(i));
      t->set_role(wire::NODE_ROLE_TARGET);
      t->set_state(wire::NODE_STATE_ONLINE);
      if (i == 5) t->set_mode(wire::NODE_MODE_MAINTENANCE);
    }
    ASSERT_TRUE(maps_->install(map).has_value());
  }

  static std::vector<std::string> ids(const std::vector<wire::NodeInfo>& nodes) {
    std::vector<std::string> out;
    for (const auto& n : nodes) out.push_back(n.id());
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<cluster::ClusterMaps> maps_;
  std::shared_ptr<config::LiveConfig> config_;
  std::unique_ptr<Peers> peers_;
  uint64_t node_map_version_ = 0;
};

TEST_F(PeersTest, TheHoldersAreTheFirstCopiesOfTheRankingTheOwnerFirst) {
  for (int i = 0; i < 50; ++i) {
    const ObjectRef object{BucketId(kCopies), "o" + std::to_string(i)};
    const auto holders = peers_->holders_of(object);
    ASSERT_EQ(holders.size(), 3u);
    EXPECT_EQ(holders[0].id(), maps_->placement()->owner(object).id());
    const std::vector<std::string> holder_ids = ids(holders);
    EXPECT_EQ(std::set<std::string>(holder_ids.begin(), holder_ids.end()).size(), 3u) << "distinct targets";
    for (const auto& h : holders) EXPECT_NE(h.id(), "t5") << "a target in maintenance holds nothing";
    EXPECT_EQ(ids(peers_->copy_holders(object)), ids(holders)) << "copies: every holder has a full copy";
  }
  const ObjectRef one{BucketId(kSingle), "x"};
  ASSERT_EQ(peers_->holders_of(one).size(), 1u);
  EXPECT_EQ(peers_->holders_of(one)[0].id(), maps_->placement()->owner(one).id());
}

TEST_F(PeersTest, AnErasureCodedBucketKeepsFullCopiesOnItsFirstParityPlusOneHolders) {
  for (int i = 0; i < 50; ++i) {
    const ObjectRef object{BucketId(kCoded), "o" + std::to_string(i)};
    const auto holders = peers_->holders_of(object);
    ASSERT_EQ(holders.size(), 3u) << "k + m slices";
    const auto copies = peers_->copy_holders(object);
    ASSERT_EQ(copies.size(), 2u) << "parity + 1 copies of a small object";
    EXPECT_EQ(copies[0].id(), holders[0].id());
    EXPECT_EQ(copies[1].id(), holders[1].id());
  }
}

TEST_F(PeersTest, AnUnknownBucketHasNoHoldersAndNoBucket) {
  EXPECT_FALSE(peers_->bucket_by_id(99).has_value());
  ASSERT_TRUE(peers_->bucket_by_id(kCoded).has_value());
  EXPECT_EQ(peers_->bucket_by_id(kCoded)->name(), "coded");
  const ObjectRef lost{BucketId(99), "o"};
  EXPECT_TRUE(peers_->holders_of(lost).empty());
  EXPECT_TRUE(peers_->copy_holders(lost).empty());
  EXPECT_TRUE(peers_->candidates_of(lost).empty()) << "no rebalance: the holders, none";
}

TEST_F(PeersTest, WhileARebalanceRunsEveryTargetIsACandidateByRank) {
  const ObjectRef object{BucketId(kCopies), "moving"};
  EXPECT_FALSE(peers_->is_rebalancing());
  EXPECT_EQ(ids(peers_->candidates_of(object)), ids(peers_->holders_of(object)));
  for (const auto phase : {wire::REBALANCE_PHASE_COPY, wire::REBALANCE_PHASE_CLEANUP}) {
    install_node_map(phase);
    EXPECT_TRUE(peers_->is_rebalancing());
    const auto candidates = peers_->candidates_of(object);
    ASSERT_EQ(candidates.size(), 5u) << "a copy may sit anywhere, maintenance included";
    EXPECT_EQ(ids(candidates), ids(maps_->placement()->ranked_holders(object)));
    // One ranking: without the target in maintenance (which owns nothing) it starts with
    // the holders, in their order.
    std::vector<std::string> owners_by_rank;
    for (const auto& c : candidates) {
      if (c.id() != "t5") owners_by_rank.push_back(c.id());
    }
    owners_by_rank.resize(3);
    EXPECT_EQ(owners_by_rank, ids(peers_->holders_of(object)));
  }
  install_node_map(wire::REBALANCE_PHASE_DONE);
  EXPECT_FALSE(peers_->is_rebalancing());
}

TEST_F(PeersTest, SelfIsFoundAmongNodesAndLeftOutOfOthers) {
  wire::NodeInfo t1, t2, t3;
  t1.set_id("t1");
  t2.set_id("t2");
  t3.set_id("t3");
  EXPECT_TRUE(peers_->is_self(t2));
  EXPECT_TRUE(peers_->is_self_among({t1, t2, t3}));
  EXPECT_FALSE(peers_->is_self_among({t1, t3}));
  EXPECT_EQ(ids(peers_->others_than_self({t1, t2, t3})), (std::vector<std::string>{"t1", "t3"}));
}

TEST_F(PeersTest, DurabilityIsTheBucketsElseTheClusters) {
  config::ClusterConfig fsync;
  fsync.durability = config::Durability::kFsync;
  config_ = std::make_shared<config::LiveConfig>(fsync);
  peers_ = std::make_unique<Peers>(peers_->self(), *maps_, config_);
  EXPECT_EQ(peers_->durability_of(*peers_->bucket_by_id(kCopies)), store::Durability::kFsync);
  EXPECT_EQ(peers_->durability_of(*peers_->bucket_by_id(kSingle)), store::Durability::kPageCache);
}

}  // namespace
}  // namespace silo::replication
