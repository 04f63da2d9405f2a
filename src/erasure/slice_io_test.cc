// Where a missing slice is rebuilt and which piece is a slice of which version
// (detail/slice_io.h): every target must decide alike, from the records alone.
#include "erasure/detail/slice_io.h"

#include <gtest/gtest.h>

#include "replication/testing/records.h"
#include "wire/json.h"

namespace silo::erasure {
namespace {

using replication::testing::slice_of;

wire::ObjectRecord whole_object(uint64_t size) { return replication::testing::copy_record(100, 7, size); }

wire::NodeInfo node(const std::string& id, wire::NodeState state = wire::NODE_STATE_ONLINE) {
  wire::NodeInfo n;
  n.set_id(id);
  n.set_state(state);
  return n;
}

TEST(SliceIoTest, ASliceIsOfTheSameVersionAndCodeOnly) {
  const auto whole = whole_object(5 << 20);
  const auto slice = slice_of(whole, 1);
  EXPECT_TRUE(detail::is_slice_of(slice_of(whole, 2), slice));
  EXPECT_FALSE(detail::is_slice_of(whole, slice)) << "a full copy is not a slice";
  EXPECT_FALSE(detail::is_slice_of(slice_of(whole, 2, 4, 2), slice)) << "another code";
}

TEST(PlanRebuildTest, AMissingSliceGoesToItsHolderElseToAFreeOneNeverToAHolderWithASlice) {
  const std::vector<wire::NodeInfo> holders = {node("t1"), node("t2"), node("t3")};
  // Slice 1 missing, its holder t2 free: there.
  std::vector<std::optional<wire::NodeInfo>> where = {node("t1"), std::nullopt, node("t3")};
  auto plan = detail::plan_rebuild(where, holders, "obj");
  ASSERT_TRUE(plan.has_value()) << plan.status();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].first, 1u);
  EXPECT_EQ((*plan)[0].second.id(), "t2");
  // Slice 1 missing and t2 holds slice 2 (moved there): the free holder, t3.
  where = {node("t1"), std::nullopt, node("t2")};
  plan = detail::plan_rebuild(where, holders, "obj");
  ASSERT_TRUE(plan.has_value()) << plan.status();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].second.id(), "t3");
  // A free holder that is down is left out (it gets its slice when it is back).
  const std::vector<wire::NodeInfo> one_down = {node("t1"), node("t2", wire::NODE_STATE_DOWN), node("t3")};
  where = {node("t1"), std::nullopt, node("t3")};
  plan = detail::plan_rebuild(where, one_down, "obj");
  ASSERT_TRUE(plan.has_value()) << plan.status();
  EXPECT_TRUE(plan->empty());
  // No holder free: refused, never a second slice on one holder.
  where = {node("t1"), std::nullopt, node("t3")};
  const std::vector<wire::NodeInfo> full = {node("t1"), node("t3")};
  EXPECT_FALSE(detail::plan_rebuild(where, full, "obj").has_value());
}

}  // namespace
}  // namespace silo::erasure
