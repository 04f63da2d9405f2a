#include "shards/index_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace silo::shards {
namespace {

std::shared_ptr<const MemberIndex> index_of(uint64_t generation, int members) {
  wire::ArchiveIndex index;
  index.set_generation(generation);
  for (int i = 0; i < members; ++i) index.add_members()->set_name("member-" + std::to_string(i));
  return std::make_shared<const MemberIndex>(std::move(index));
}

TEST(IndexCacheTest, AnIndexServesOnlyItsOwnVersion) {
  IndexCache cache(1 << 20);
  const ObjectRef shard{BucketId(1), "a.tar"};
  cache.put(shard, index_of(7, 3));
  ASSERT_NE(cache.find(shard, 7), nullptr);
  EXPECT_EQ(cache.find(shard, 7)->index().members_size(), 3);
  EXPECT_EQ(cache.find(shard, 8), nullptr) << "another version";
  EXPECT_EQ(cache.find(ObjectRef{BucketId(2), "a.tar"}, 7), nullptr) << "another bucket";
  cache.put(shard, index_of(8, 5));
  EXPECT_EQ(cache.find(shard, 7), nullptr) << "replaced";
  EXPECT_EQ(cache.find(shard, 8)->index().members_size(), 5);
}

TEST(IndexCacheTest, KeepsWithinItsBytesDroppingTheLeastRecentlyUsed) {
  IndexCache cache(20'000);
  const auto shard = [](int i) { return ObjectRef{BucketId(1), "s" + std::to_string(1000 + i)}; };
  for (int i = 0; i < 50; ++i) cache.put(shard(i), index_of(1, 20));
  EXPECT_LE(cache.bytes(), 20'000u);
  int kept = 0;
  for (int i = 0; i < 50; ++i) kept += cache.find(shard(i), 1) != nullptr ? 1 : 0;
  ASSERT_GT(kept, 2);
  ASSERT_LT(kept, 50);
  // The lookups above made the newest the most recent; a read of the oldest kept one makes
  // it outlive every other old entry when as many new ones come.
  ASSERT_NE(cache.find(shard(50 - kept), 1), nullptr);
  for (int i = 50; i < 50 + kept - 1; ++i) cache.put(shard(i), index_of(1, 20));
  EXPECT_NE(cache.find(shard(50 - kept), 1), nullptr);
  EXPECT_EQ(cache.find(shard(49), 1), nullptr);
  // One index larger than the whole cache is not kept.
  cache.put(ObjectRef{BucketId(1), "huge"}, index_of(1, 5000));
  EXPECT_EQ(cache.find(ObjectRef{BucketId(1), "huge"}, 1), nullptr);
}

TEST(MemberIndexTest, FindsAnyOfManyMembersAndTheLastOfARepeatedName) {
  wire::ArchiveIndex index;
  for (int i = 0; i < 10'000; ++i) {
    wire::ArchiveMember* member = index.add_members();
    member->set_name(fmt::format("{:06}.jpg", i));
    member->set_offset(512 * (2 * i + 1));
  }
  index.add_members()->set_name("000042.jpg");  // appended later: replaces the first
  index.mutable_members(10'000)->set_offset(1);
  const MemberIndex members(std::move(index));
  ASSERT_NE(members.find("009999.jpg"), nullptr);
  EXPECT_EQ(members.find("009999.jpg")->offset(), 512u * 19'999);
  EXPECT_EQ(members.find("000042.jpg")->offset(), 1u) << "the last of a name";
  EXPECT_EQ(members.find("010000.jpg"), nullptr);
  EXPECT_EQ(members.find(""), nullptr);
  EXPECT_GT(members.bytes(), 10'000u * 10);
}

}  // namespace
}  // namespace silo::shards
