// A target's part in rebalance against real stores and in-process peers
// (replication/testing/test_targets.h): a walk's two phases, get-from-neighbor for what a
// walk has not moved yet, and a DELETE that reaches every copy.
#include "rebalance/rebalance.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "http/testing/fake_exchange.h"
#include "replication/testing/test_targets.h"
#include "testing/status_matchers.h"

namespace silo::rebalance {
namespace {

using replication::testing::test_bucket;
using replication::testing::TestTarget;
using replication::testing::TestTargets;

constexpr uint64_t kOne = 1;  // one copy
constexpr uint64_t kTwo = 2;  // two copies
const WalkOptions kQuickRetries{
    .max_failing_passes = 3, .give_up_after = std::chrono::milliseconds(0), .retry_pause = std::chrono::milliseconds(10)};

// `count` targets, each with its Erasure and Rebalance beside its Replication.
class RebalanceTest : public ::testing::Test {
 protected:
  void start(int count) {
    targets_ = std::make_unique<TestTargets>(
        count, std::vector<wire::Bucket>{test_bucket("one", kOne, 1), test_bucket("two", kTwo, 2)});
    for (size_t i = 0; i < targets_->size(); ++i) {
      TestTarget& t = (*targets_)[i];
      erasures_.push_back(std::make_unique<erasure::Erasure>(*t.peers, *t.store, t.client, *t.replication, t.stats));
      rebalances_.push_back(std::make_unique<Rebalance>(*t.peers, *t.store, t.client, *t.replication,
                                                        *erasures_.back(), kQuickRetries));
    }
  }
  void TearDown() override {
    // A walk's coroutine uses its Rebalance: every walk has finished (the tests wait for it).
    rebalances_.clear();
    erasures_.clear();
    targets_.reset();
  }

  TestTargets& targets() { return *targets_; }
  TestTarget& target(size_t i) { return (*targets_)[i]; }
  Rebalance& rebalance(size_t i) { return *rebalances_.at(i); }

  // Installs the next node map in `phase` of rebalance 2 and lets every target follow it.
  void enter(wire::RebalancePhase phase) {
    targets_->change_node_map([phase](wire::NodeMap& map) {
      map.set_rebalance_id(2);
      map.set_rebalance_phase(phase);
    });
    for (auto& r : rebalances_) targets_->run(r->sync());
  }
  wire::RebalanceProgress progress(size_t i) {
    http::testing::FakeExchange exchange(targets_->io().get_executor(), http::Method::kGet, "/v1/internal/rebalance");
    targets_->run(rebalance(i).handle_progress(exchange));
    auto p = wire::decode<wire::RebalanceProgress>(exchange.sent(), wire::Source::kNetwork);
    EXPECT_TRUE(p.has_value()) << p.status();
    return p ? *p : wire::RebalanceProgress{};
  }
  // Waits until every target's walk of the current phase has finished or given up.
  void wait_walks_ended() {
    EXPECT_TRUE(targets_->run_until([this] {
      for (size_t i = 0; i < rebalances_.size(); ++i) {
        const auto p = progress(i);
        if (!p.finished() && !p.failed()) return false;
      }
      return true;
    }));
  }
  // Waits until every target's walk of the current phase has finished.
  void wait_walks_finished() {
    EXPECT_TRUE(targets_->run_until([this] {
      for (size_t i = 0; i < rebalances_.size(); ++i) {
        if (!progress(i).finished()) return false;
      }
      return true;
    }));
  }

  std::unique_ptr<TestTargets> targets_;
  std::vector<std::unique_ptr<erasure::Erasure>> erasures_;
  std::vector<std::unique_ptr<Rebalance>> rebalances_;
};

TEST_F(RebalanceTest, AWalkCopiesObjectsToTheirHoldersThenCleanupRemovesTheRest) {
  start(2);
  // Every object on t1, as if t2 had just joined.
  std::vector<ObjectRef> objects;
  for (int i = 0; i < 8; ++i) {
    objects.push_back({BucketId(kOne), "o" + std::to_string(i)});
    ASSERT_OK(targets().put(target(0), objects.back(), "bytes " + std::to_string(i)));
  }
  size_t owned_by_t2 = 0;
  for (const auto& object : objects) owned_by_t2 += targets().holder_ids(object)[0] == "t2" ? 1 : 0;
  ASSERT_GT(owned_by_t2, 0u) << "pick other names: HRW gave t2 none";
  ASSERT_LT(owned_by_t2, objects.size()) << "pick other names: HRW gave t1 none";

  enter(wire::REBALANCE_PHASE_COPY);
  wait_walks_finished();
  const auto copied = progress(0);
  EXPECT_EQ(copied.rebalance_id(), 2u);
  EXPECT_EQ(copied.phase(), wire::REBALANCE_PHASE_COPY);
  EXPECT_EQ(copied.objects_scanned(), objects.size());
  EXPECT_EQ(copied.errors(), 0u) << copied.last_error();
  for (const auto& object : objects) {
    const bool is_t2s = targets().holder_ids(object)[0] == "t2";
    EXPECT_EQ(targets().bytes_at(target(1), object).has_value(), is_t2s) << object.name;
    EXPECT_TRUE(targets().bytes_at(target(0), object).has_value()) << "copy keeps the source: " << object.name;
  }

  enter(wire::REBALANCE_PHASE_CLEANUP);
  wait_walks_finished();
  for (const auto& object : objects) {
    const bool is_t2s = targets().holder_ids(object)[0] == "t2";
    EXPECT_EQ(targets().bytes_at(target(0), object).has_value(), !is_t2s) << object.name;
    EXPECT_EQ(targets().bytes_at(target(1), object).has_value(), is_t2s) << object.name;
  }
  enter(wire::REBALANCE_PHASE_DONE);
  EXPECT_TRUE(progress(0).finished()) << "the last walk's figures stay";
}

TEST_F(RebalanceTest, AWalkGivesUpWithTheReasonOnAnObjectThatCannotMoveAndMovesTheRest) {
  start(2);
  // On t1 only, as if t2 had just joined: one object t2 owns is corrupt (no good copy anywhere).
  const ObjectRef bad{BucketId(kOne), targets().name_held_by(BucketId(kOne), {"t2"})};
  const ObjectRef good{BucketId(kOne), targets().name_held_by(BucketId(kOne), {"t2"}, "good-")};
  ASSERT_OK(targets().put(target(0), bad, "rotten bytes"));
  ASSERT_OK(targets().put(target(0), good, "good bytes"));
  targets().corrupt(target(0), bad);

  enter(wire::REBALANCE_PHASE_COPY);
  wait_walks_ended();
  const auto p = progress(0);
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(p.finished());
  EXPECT_EQ(p.errors(), 1u);
  EXPECT_NE(p.last_error().find(bad.name), std::string::npos) << p.last_error();
  EXPECT_NE(p.last_error().find("after 3 passes"), std::string::npos) << p.last_error();
  EXPECT_EQ(targets().bytes_at(target(1), good), "good bytes");
  EXPECT_FALSE(targets().bytes_at(target(1), bad).has_value()) << "corrupt bytes never travel";
  EXPECT_TRUE(targets().record_at(target(0), bad).has_value()) << "the source keeps what it has";
  EXPECT_TRUE(progress(1).finished());
}

TEST_F(RebalanceTest, AWalkWaitsOutATargetThatIsDownWithoutGivingUp) {
  start(3);
  const ObjectRef object{BucketId(kOne), targets().name_held_by(BucketId(kOne), {"t2"})};
  ASSERT_OK(targets().put(target(0), object, "bytes"));
  targets().set_state("t2", wire::NODE_STATE_DOWN);
  enter(wire::REBALANCE_PHASE_COPY);
  // Far more passes than max_failing_passes: each fails with kUnavailable.
  EXPECT_FALSE(targets().run_until([this] { return progress(0).failed(); }, std::chrono::seconds(1)));
  const auto p = progress(0);
  EXPECT_FALSE(p.finished());
  EXPECT_GT(p.errors(), 0u);
  EXPECT_NE(p.last_error().find("down"), std::string::npos) << p.last_error();
  targets().set_state("t2", wire::NODE_STATE_ONLINE);
  wait_walks_finished();
  EXPECT_EQ(targets().bytes_at(target(1), object), "bytes");
}

TEST_F(RebalanceTest, WhileObjectsMoveAMissingObjectIsPulledFromTheTargetThatHasIt) {
  start(2);
  const ObjectRef object{BucketId(kOne), targets().name_held_by(BucketId(kOne), {"t1"})};
  ASSERT_OK(targets().put(target(1), object, "not moved yet"));
  EXPECT_OK(targets().run(rebalance(0).pull_if_missing(object)));
  EXPECT_FALSE(targets().bytes_at(target(0), object).has_value()) << "no rebalance: a miss is a miss";

  targets().change_node_map([](wire::NodeMap& map) {
    map.set_rebalance_id(2);
    map.set_rebalance_phase(wire::REBALANCE_PHASE_COPY);  // no walk runs: nothing is synced
  });
  EXPECT_OK(targets().run(rebalance(0).pull_if_missing(object)));
  EXPECT_EQ(targets().bytes_at(target(0), object), "not moved yet");
  EXPECT_OK(targets().run(rebalance(0).pull_if_missing({BucketId(kOne), "nowhere"})));
}

TEST_F(RebalanceTest, ADeleteReachesEveryCopyAndIsNoSuchKeyWhenThereIsNone) {
  start(3);
  const ObjectRef object{BucketId(kTwo), targets().name_held_by(BucketId(kTwo), {"t1", "t2"})};
  ASSERT_OK(targets().put(target(0), object, "v"));
  ASSERT_OK(targets().put(target(1), object, "v"));
  EXPECT_OK(targets().run(rebalance(0).remove_everywhere(object)));
  EXPECT_FALSE(targets().record_at(target(0), object).has_value());
  EXPECT_FALSE(targets().record_at(target(1), object).has_value());
  EXPECT_CODE(targets().run(rebalance(0).remove_everywhere(object)), Code::kNotFound);

  // While objects move a copy may sit on a target that does not hold it: t3.
  ASSERT_OK(targets().put(target(2), object, "v"));
  targets().change_node_map([](wire::NodeMap& map) {
    map.set_rebalance_id(2);
    map.set_rebalance_phase(wire::REBALANCE_PHASE_COPY);
  });
  EXPECT_OK(targets().run(rebalance(0).remove_everywhere(object)));  // a copy elsewhere counts
  EXPECT_FALSE(targets().record_at(target(2), object).has_value());

  targets().set_state("t3", wire::NODE_STATE_DOWN);
  EXPECT_CODE(targets().run(rebalance(0).remove_everywhere(object)), Code::kUnavailable);
}

}  // namespace
}  // namespace silo::rebalance
