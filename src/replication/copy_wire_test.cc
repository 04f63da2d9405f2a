// The rules by which targets agree on which piece of an object to keep (copy_wire.h):
// every target must decide alike, from the records alone.
#include "replication/copy_wire.h"

#include <gtest/gtest.h>

#include "replication/testing/records.h"
#include "wire/json.h"

namespace silo::replication {
namespace {

using testing::slice_of;

wire::ObjectRecord copy(int64_t mtime, uint64_t xxh3, uint64_t size = 100) {
  return testing::copy_record(mtime, xxh3, size);
}

wire::BucketProps coded(uint32_t k, uint32_t m, uint64_t min_size) {
  wire::BucketProps props;
  props.mutable_ec()->set_data(k);
  props.mutable_ec()->set_parity(m);
  props.mutable_ec()->set_min_size(min_size);
  return props;
}

TEST(CopyWireTest, TheNewerVersionWinsAndTiesGoToTheLargerXxh3) {
  const auto old_version = copy(100, 7);
  const auto newer = copy(200, 5);
  EXPECT_TRUE(incoming_wins(nullptr, old_version));
  EXPECT_TRUE(incoming_wins(&old_version, newer));
  EXPECT_FALSE(incoming_wins(&newer, old_version));
  // Two PUTs in the same nanosecond on two targets: every target picks the same one.
  const auto twin = copy(100, 9);
  EXPECT_TRUE(incoming_wins(&old_version, twin));
  EXPECT_FALSE(incoming_wins(&twin, old_version));
  EXPECT_FALSE(incoming_wins(&old_version, old_version)) << "the same version never wins";
}

TEST(CopyWireTest, ASliceIsTheSameVersionAsItsWholeObject) {
  const auto whole = copy(100, 7, 5 << 20);
  const auto slice = slice_of(whole, 1);
  EXPECT_TRUE(same_version(whole, slice));
  EXPECT_TRUE(same_version(slice, slice_of(whole, 2)));
  EXPECT_FALSE(incoming_wins(&slice, slice_of(whole, 2))) << "two slices of one version: neither wins";
  EXPECT_FALSE(same_version(slice, slice_of(copy(100, 8, 5 << 20), 1)));
}

TEST(CopyWireTest, TheLayoutDecidesTheFormAndAFormItWantsReplacesTheSameVersion) {
  const auto props = coded(2, 1, 16 * 1024);
  const auto small = copy(100, 7, 1000);
  const auto large = copy(100, 8, 5 << 20);
  EXPECT_TRUE(fits_layout(small, props)) << "under min_size: copies";
  EXPECT_FALSE(fits_layout(large, props)) << "past min_size: slices";
  EXPECT_TRUE(fits_layout(slice_of(large, 0), props));
  EXPECT_FALSE(fits_layout(slice_of(large, 0, 4, 2), props)) << "a slice of another code";
  // Re-encoding: a slice replaces a full copy of the same version, never the reverse.
  const auto slice0 = slice_of(large, 0);
  EXPECT_TRUE(replaces(&large, slice0, props));
  EXPECT_FALSE(replaces(&slice0, large, props));
  EXPECT_FALSE(replaces(&slice0, slice_of(large, 1), props)) << "a holder keeps one piece";
  const auto replicated = wire::BucketProps();
  EXPECT_TRUE(replaces(&slice0, large, replicated)) << "back to copies";
}

TEST(CopyWireTest, PlacedRoundTrips) {
  for (const bool kept : {false, true}) {
    for (const bool same : {false, true}) {
      const Placed placed{.is_kept = kept, .replaced_same_version = kept && same};
      const Placed back = placed_of(placed_json(placed));
      EXPECT_EQ(back.is_kept, placed.is_kept);
      EXPECT_EQ(back.replaced_same_version, placed.replaced_same_version);
    }
  }
}


}  // namespace
}  // namespace silo::replication
