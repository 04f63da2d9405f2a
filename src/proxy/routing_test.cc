#include "proxy/detail/routing.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace silo::proxy::detail {
namespace {

// Holders in HRW rank order; an id ending in '!' is down.
std::vector<wire::NodeInfo> holders(const std::vector<std::string>& ids) {
  std::vector<wire::NodeInfo> out;
  for (std::string id : ids) {
    wire::NodeInfo& node = out.emplace_back();
    const bool is_down = id.ends_with('!');
    if (is_down) id.pop_back();
    node.set_id(id);
    node.set_state(is_down ? wire::NODE_STATE_DOWN : wire::NODE_STATE_ONLINE);
  }
  return out;
}

std::vector<std::string> ids(const std::vector<wire::NodeInfo>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.id());
  return out;
}

using Ids = std::vector<std::string>;

TEST(TargetOrderTest, EverythingButAReadGoesToTheOwner) {
  for (const http::Method method :
       {http::Method::kPut, http::Method::kDelete, http::Method::kPost}) {
    EXPECT_EQ(ids(target_order(holders({"t1!", "t2", "t3"}), method, 1)), (Ids{"t1", "t2", "t3"}))
        << "the owner first even when down (it answers 503): " << http::method_name(method);
  }
}

TEST(TargetOrderTest, ReadsSpreadOverTheHoldersThatAreUp) {
  const auto all_up = holders({"t1", "t2", "t3"});
  EXPECT_EQ(ids(target_order(all_up, http::Method::kGet, 0)), (Ids{"t1", "t2", "t3"}));
  EXPECT_EQ(ids(target_order(all_up, http::Method::kGet, 1)), (Ids{"t2", "t3", "t1"}));
  EXPECT_EQ(ids(target_order(all_up, http::Method::kHead, 5)), (Ids{"t3", "t1", "t2"}));
  std::map<std::string, int> firsts;
  for (uint64_t turn = 0; turn < 300; ++turn)
    ++firsts[target_order(all_up, http::Method::kGet, turn)[0].id()];
  EXPECT_EQ(firsts, (std::map<std::string, int>{{"t1", 100}, {"t2", 100}, {"t3", 100}}));
}

TEST(TargetOrderTest, DownHoldersComeLastInRankOrder) {
  const auto some_down = holders({"t1!", "t2", "t3!", "t4"});
  EXPECT_EQ(ids(target_order(some_down, http::Method::kGet, 0)), (Ids{"t2", "t4", "t1", "t3"}));
  EXPECT_EQ(ids(target_order(some_down, http::Method::kGet, 1)), (Ids{"t4", "t2", "t1", "t3"}));
  EXPECT_EQ(ids(target_order(holders({"t1!", "t2!"}), http::Method::kGet, 1)), (Ids{"t1", "t2"}))
      << "all down: the owner's 503 first";
  EXPECT_EQ(ids(target_order(holders({"t1!", "t2"}), http::Method::kGet, 7)), (Ids{"t2", "t1"}));
  EXPECT_EQ(ids(target_order(holders({"t1!"}), http::Method::kGet, 3)), (Ids{"t1"}));
}

TEST(AnswersHereTest, AHolderAnswersReadsItselfAndOnlyTheOwnerWrites) {
  const auto order = target_order(holders({"t1", "t2", "t3!"}), http::Method::kGet, 1);  // t2, t1, t3
  EXPECT_TRUE(answers_here(order, "t2", http::Method::kGet)) << "first";
  EXPECT_TRUE(answers_here(order, "t1", http::Method::kGet)) << "a holder that is up, though not its turn";
  EXPECT_TRUE(answers_here(order, "t1", http::Method::kHead));
  EXPECT_FALSE(answers_here(order, "t3", http::Method::kGet)) << "a holder marked down relays";
  EXPECT_FALSE(answers_here(order, "t4", http::Method::kGet)) << "not a holder";
  const auto writes = target_order(holders({"t1", "t2", "t3"}), http::Method::kPut, 1);
  EXPECT_TRUE(answers_here(writes, "t1", http::Method::kPut)) << "the owner";
  EXPECT_FALSE(answers_here(writes, "t2", http::Method::kPut)) << "another holder never takes a write";
  EXPECT_FALSE(answers_here(writes, "t2", http::Method::kDelete));
  EXPECT_FALSE(answers_here({}, "t1", http::Method::kGet));
}

TEST(AccessStepTest, CallerIsCheckedBeforeAnyRelay) {
  const Access admins_on_primary{.admins_only = "only admins", .runs_on = RunsOn::kPrimary};
  EXPECT_EQ(access_step(admins_on_primary, /*is_admin=*/false, /*is_primary=*/false),
            AccessStep::kDeny)
      << "a request the primary would refuse never leaves this proxy";
  EXPECT_EQ(access_step(admins_on_primary, /*is_admin=*/false, /*is_primary=*/true),
            AccessStep::kDeny);
  EXPECT_EQ(access_step(admins_on_primary, /*is_admin=*/true, /*is_primary=*/false),
            AccessStep::kRelay);
  EXPECT_EQ(access_step(admins_on_primary, /*is_admin=*/true, /*is_primary=*/true),
            AccessStep::kRun);

  const Access anyone_here{};
  EXPECT_EQ(access_step(anyone_here, /*is_admin=*/false, /*is_primary=*/false), AccessStep::kRun);
  const Access anyone_on_primary{.admins_only = {}, .runs_on = RunsOn::kPrimary};
  EXPECT_EQ(access_step(anyone_on_primary, /*is_admin=*/false, /*is_primary=*/false),
            AccessStep::kRelay);
}

TEST(AccessKeyTest, ThreeTo128SafeCharacters) {
  for (const std::string& key : std::vector<std::string>{
           "abc", "reader-1", "svc_account.prod", "AKIAIOSFODNN7EXAMPLE", std::string(128, 'k')}) {
    EXPECT_TRUE(validate_access_key(key).is_ok()) << key;
  }
  for (const std::string& key : std::vector<std::string>{
           "", "ab", "a/b/c", "with space", "semi;colon", "uni\xc3\xa9", std::string(129, 'k')}) {
    const Status s = validate_access_key(key);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << key;
  }
}

}  // namespace
}  // namespace silo::proxy::detail
