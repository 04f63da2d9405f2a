// A target's mountpaths at run time (mountpaths.h): which ones a restart opens after
// attaches and detaches, and the /v1/mountpaths admin on a real store.
#include "rebalance/mountpaths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "http/testing/fake_exchange.h"
#include "replication/testing/test_targets.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace silo::rebalance {
namespace {

using Paths = std::vector<std::string>;

TEST(MountpathsToOpenTest, NothingChangedAtRunTimeOpensTheConfiguredOnes) {
  ASSERT_OK_AND_ASSIGN(auto state, silo::testing::TempDir::create("silo-mountpaths"));
  EXPECT_EQ(mountpaths_to_open({"/d/a", "/d/b"}, state.path()), (Paths{"/d/a", "/d/b"}));
  EXPECT_EQ(mountpaths_to_open({}, state.path()), Paths{});
}

TEST(MountpathsToOpenTest, AttachesAreAddedAndDetachesLeftOutAcrossRestarts) {
  ASSERT_OK_AND_ASSIGN(auto state, silo::testing::TempDir::create("silo-mountpaths"));
  const Paths configured = {"/d/a", "/d/b/"};
  ASSERT_OK(remember_mountpath_change(state.path(), "/d/c", /*attached=*/true));
  EXPECT_EQ(mountpaths_to_open(configured, state.path()), (Paths{"/d/a", "/d/b/", "/d/c"}));
  // A configured path detached at run time stays out, however its slashes are written.
  ASSERT_OK(remember_mountpath_change(state.path(), "/d/b", /*attached=*/false));
  EXPECT_EQ(mountpaths_to_open(configured, state.path()), (Paths{"/d/a", "/d/c"}));
  ASSERT_OK(remember_mountpath_change(state.path(), "/d/a//", /*attached=*/false));
  EXPECT_EQ(mountpaths_to_open(configured, state.path()), (Paths{"/d/c"}));
  // The last change of a path wins; attaching a configured one adds it once.
  ASSERT_OK(remember_mountpath_change(state.path(), "/d/b/", /*attached=*/true));
  ASSERT_OK(remember_mountpath_change(state.path(), "/d/c", /*attached=*/false));
  EXPECT_EQ(mountpaths_to_open(configured, state.path()), (Paths{"/d/b/"}));
}

class MountpathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    targets_ = std::make_unique<replication::testing::TestTargets>(1, std::vector<wire::Bucket>{});
    mountpaths_ = std::make_unique<Mountpaths>(*target().store, target().dir + "/state");
  }
  void TearDown() override {
    mountpaths_.reset();
    targets_.reset();
  }
  replication::testing::TestTarget& target() { return (*targets_)[0]; }

  http::testing::FakeExchange handle(http::Method method, const std::string& rest, bool is_admin, std::string body = "") {
    http::testing::FakeExchange exchange(targets_->io().get_executor(), method, "/v1/mountpaths" + rest, std::move(body));
    targets_->run(mountpaths_->handle(exchange, rest, is_admin));
    return exchange;
  }

  std::unique_ptr<replication::testing::TestTargets> targets_;
  std::unique_ptr<Mountpaths> mountpaths_;
};

TEST_F(MountpathsTest, OnlyAdminsChangeMountpathsAndAnAttachIsRememberedAndResilvered) {
  auto listed = handle(http::Method::kGet, "", /*is_admin=*/false);
  EXPECT_EQ(listed.status(), 200);
  EXPECT_NE(listed.sent().find(target().dir + "/mp1"), std::string::npos) << listed.sent();
  EXPECT_EQ(listed.sent().find("resilver"), std::string::npos) << "none ran yet";

  const std::string added = target().dir + "/mp2";
  const std::string request = R"({"path": ")" + added + R"("})";
  EXPECT_EQ(handle(http::Method::kPost, "", /*is_admin=*/false, request).status(), 403);
  EXPECT_EQ(target().store->mountpaths().size(), 1u);

  auto attached = handle(http::Method::kPost, "", /*is_admin=*/true, request);
  EXPECT_EQ(attached.status(), 200) << attached.sent();
  EXPECT_EQ(target().store->mountpaths().size(), 2u);
  const Paths reopened = mountpaths_to_open({target().dir + "/mp1"}, target().dir + "/state");
  EXPECT_EQ(reopened, (Paths{target().dir + "/mp1", added})) << "a restart opens it too";
  // The resilver it started ends (the store has nothing to move).
  EXPECT_TRUE(targets_->run_until([&] {
    return handle(http::Method::kGet, "", /*is_admin=*/false).sent().find(R"("state":"finished")") != std::string::npos;
  })) << handle(http::Method::kGet, "", false).sent();

  EXPECT_EQ(handle(http::Method::kPost, "/nope/enable", /*is_admin=*/true).status(), 404);
  EXPECT_EQ(handle(http::Method::kPut, "", /*is_admin=*/true).status(), 400);
}

}  // namespace
}  // namespace silo::rebalance
