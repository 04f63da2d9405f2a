// The proxy's native routes through a real route table and a Proxy, on a node that is not
// the primary and whose node map names none: every answer comes from this proxy alone (a
// relay fails at once with 503), so no test touches the network.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "http/testing/fake_exchange.h"
#include "cluster/cluster_maps.h"
#include "config/live_config.h"
#include "http/route_table.h"
#include "proxy/proxy.h"
#include "stats/registry.h"
#include "testing/temp_dir.h"

namespace silo::proxy {
namespace {

using http::Method;

// An exchange with an empty body whose response keeps what the handler sent.
using http::testing::FakeExchange;

struct Answer {
  int status = 0;  // 0: nothing sent; -1: no route
  std::string body;
};

// A non-primary proxy with one target ("t1") and one bucket ("photos"), its routes in a
// table as silod's dispatcher holds them.
class NativeRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::create("silo-proxy-routes");
    ASSERT_TRUE(dir.has_value()) << dir.status();
    dir_ = std::make_unique<testing::TempDir>(std::move(*dir));
    auto maps = cluster::ClusterMaps::open(dir_->path());
    ASSERT_TRUE(maps.has_value()) << maps.status();
    maps_ = std::move(*maps);
    wire::NodeMap nodes;
    nodes.set_version(1);
    wire::NodeInfo& target = *nodes.add_nodes();
    target.set_id("t1");
    target.set_role(wire::NODE_ROLE_TARGET);
    target.set_state(wire::NODE_STATE_ONLINE);
    target.set_url("http://127.0.0.1:1");
    ASSERT_TRUE(maps_->install(nodes).has_value());
    wire::BucketMap buckets;
    buckets.set_version(1);
    buckets.set_next_bucket_id(2);
    wire::Bucket& photos = *buckets.add_buckets();
    photos.set_name("photos");
    photos.set_id(1);
    photos.mutable_props()->set_owner("alice");
    ASSERT_TRUE(maps_->install(buckets).has_value());

    config::ClusterConfig cluster;
    cluster.auth.admin_access_key = "root-key";
    ProxyOptions options;
    options.self.set_id("p1");
    options.config = std::make_shared<config::LiveConfig>(std::move(cluster));
    proxy_ =
        std::make_unique<Proxy>(std::move(options), *maps_, nullptr, /*primary=*/nullptr, stats_);
    proxy_->add_routes(routes_, &Caller::subject);
  }

  // An admin, or a user: "alice" (who owns "photos") unless `key` says otherwise.
  Answer call(Method method, const std::string& path, bool is_admin, std::string key = "alice") {
    std::string_view rest;
    const auto* handler = routes_.find(method, path, rest);
    if (handler == nullptr) return {-1, ""};
    boost::asio::io_context io;
    FakeExchange exchange(io.get_executor(), method, path);
    Caller caller;
    caller.subject.access_key = is_admin ? "root-key" : key;
    caller.subject.is_admin = is_admin;
    boost::asio::co_spawn(io, (*handler)(exchange, caller, rest), boost::asio::detached);
    io.run();
    return {exchange.status(), exchange.sent()};
  }
  Answer admin(Method method, const std::string& path) { return call(method, path, true); }
  Answer user(Method method, const std::string& path) { return call(method, path, false); }

  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<cluster::ClusterMaps> maps_;
  stats::Registry stats_;
  std::unique_ptr<Proxy> proxy_;
  http::RouteTable<Caller> routes_;
};

// `answer` is `status` with `text` in its body.
::testing::AssertionResult is(const Answer& answer, int status, std::string_view text = "") {
  if (answer.status == status && answer.body.find(text) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << answer.status << " " << answer.body << "; want "
                                       << status << " with \"" << text << "\"";
}

TEST_F(NativeRoutesTest, BucketsCollectionTakesOnlyGet) {
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets"), 200, "\"photos\""));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets/"), 200, "\"photos\""))
      << "a trailing '/' is the same";
  EXPECT_TRUE(
      is(user(Method::kPost, "/v1/buckets"), 400, "POST /v1/buckets is not supported (use GET)"));
  EXPECT_EQ(user(Method::kGet, "/v1/bucketsx").status, -1) << "a sibling path is no bucket route";
}

TEST_F(NativeRoutesTest, OthersUsersBucketsAreNeitherListedNorReachable) {
  EXPECT_TRUE(is(call(Method::kGet, "/v1/buckets", false, "mallory"), 200));
  EXPECT_EQ(call(Method::kGet, "/v1/buckets", false, "mallory").body.find("photos"), std::string::npos);
  EXPECT_TRUE(is(call(Method::kHead, "/v1/buckets/photos", false, "mallory"), 403));
  EXPECT_TRUE(is(call(Method::kGet, "/v1/buckets/photos/props", false, "mallory"), 403, "Access Denied"));
  EXPECT_TRUE(is(call(Method::kGet, "/v1/buckets/photos/policy", false, "mallory"), 403));
  EXPECT_TRUE(is(call(Method::kGet, "/v1/buckets/photos/policy", false), 404, "has no policy"));
}

TEST_F(NativeRoutesTest, BucketPathsAnswerPerMethodAndSuffix) {
  EXPECT_TRUE(is(user(Method::kHead, "/v1/buckets/photos"), 200));
  EXPECT_TRUE(is(user(Method::kHead, "/v1/buckets/videos"), 404, "bucket videos does not exist"));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets/photos/props"), 200, "\"photos\""));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets/videos/props"), 404));
  EXPECT_TRUE(
      is(user(Method::kPost, "/v1/buckets/photos"), 400, "POST is not supported on a bucket"));
  EXPECT_TRUE(is(user(Method::kDelete, "/v1/buckets/photos/props"), 400,
                 "DELETE is not supported on bucket properties (use GET or PUT)"));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets/photos/evict"), 400,
                 "GET is not supported on /evict (use POST)"));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets/photos/xyz"), 404,
                 "no such endpoint /v1/buckets/photos/xyz"));
  EXPECT_TRUE(
      is(user(Method::kGet, "/v1/buckets/photos/"), 404, "no such endpoint /v1/buckets/photos/"));
  // Changes go to the primary; none is known here.
  EXPECT_TRUE(is(user(Method::kPut, "/v1/buckets/videos"), 503, "no primary"));
  EXPECT_TRUE(is(user(Method::kPost, "/v1/buckets/photos/evict"), 503, "no primary"));
}

TEST_F(NativeRoutesTest, MalformedBucketNameComesBeforeMethodAndSuffix) {
  for (const Method method : {Method::kPut, Method::kPost, Method::kGet}) {
    EXPECT_TRUE(is(user(method, "/v1/buckets/Bad_Name"), 400, "")) << http::method_name(method);
  }
  EXPECT_TRUE(is(user(Method::kPut, "/v1/buckets/Bad_Name/props"), 400));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets/Bad_Name/xyz"), 400))
      << "not 404: the name is what is wrong";
  EXPECT_TRUE(is(user(Method::kGet, "/v1/buckets//props"), 400)) << "an empty name";
}

TEST_F(NativeRoutesTest, UsersAreForAdminsOnly) {
  for (const char* path : {"/v1/users", "/v1/users/bob", "/v1/users/a/b"}) {
    EXPECT_TRUE(is(user(Method::kGet, path), 403, "only admin users may manage users")) << path;
  }
  EXPECT_TRUE(is(admin(Method::kGet, "/v1/users"), 200, "root-key"));
  EXPECT_TRUE(
      is(admin(Method::kDelete, "/v1/users"), 400, "DELETE /v1/users is not supported (use GET)"));
  // A user's changes run on the primary, before the key is even looked at.
  EXPECT_TRUE(is(admin(Method::kPut, "/v1/users/bob"), 503, "no primary"));
  EXPECT_TRUE(is(admin(Method::kPut, "/v1/users/a/b"), 503, "no primary"));
}

TEST_F(NativeRoutesTest, MembershipIsForAdminsAndTheCollectionOnlyTakesPost) {
  EXPECT_TRUE(is(user(Method::kPost, "/v1/cluster/nodes"), 403,
                 "only admin users may change the cluster's membership"));
  EXPECT_TRUE(is(user(Method::kDelete, "/v1/cluster/nodes/t1"), 403));
  // Answered here, not relayed: the node map lists the nodes.
  EXPECT_TRUE(is(admin(Method::kGet, "/v1/cluster/nodes"), 404,
                 "no such endpoint GET /v1/cluster/nodes (GET /v1/cluster/map lists the nodes)"));
  EXPECT_TRUE(is(admin(Method::kPost, "/v1/cluster/nodes"), 503, "no primary"));
  EXPECT_TRUE(is(admin(Method::kPost, "/v1/cluster/nodes/t1/maintenance"), 503, "no primary"));
  EXPECT_TRUE(is(admin(Method::kGet, "/v1/cluster/nodes/t1/other"), 503))
      << "the primary answers unknown paths";
}

TEST_F(NativeRoutesTest, OnlyAdminsStartReadOrAbortJobs) {
  EXPECT_TRUE(is(user(Method::kPost, "/v1/jobs"), 403, "only admin users may start, read or abort jobs"));
  EXPECT_TRUE(is(user(Method::kPost, "/v1/jobs/scrub-1/abort"), 403));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/jobs/scrub-1/abort"), 403)) << "whatever the method";
  // Jobs name other users' buckets and objects: reading them is for admins too.
  EXPECT_TRUE(is(user(Method::kGet, "/v1/jobs"), 403));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/jobs/scrub-1"), 403));
  EXPECT_TRUE(is(user(Method::kGet, "/v1/jobs/scrub-1/wait"), 403));
  EXPECT_TRUE(is(user(Method::kDelete, "/v1/jobs/scrub-1"), 403));
  // Admins' requests go to the primary, which has the jobs.
  EXPECT_TRUE(is(admin(Method::kGet, "/v1/jobs"), 503, "no primary"));
  EXPECT_TRUE(is(admin(Method::kGet, "/v1/jobs/scrub-1/wait"), 503, "no primary"));
  EXPECT_TRUE(is(admin(Method::kDelete, "/v1/jobs/scrub-1"), 503, "no primary"));
}

TEST_F(NativeRoutesTest, RoutesCarryTheirParameters) {
  const auto pattern = [this](Method method, std::string_view path) -> std::string {
    const http::PathPattern* found = routes_.find_pattern(method, path);
    return found == nullptr ? "none" : found->text();
  };
  EXPECT_EQ(pattern(Method::kGet, "/v1/jobs/scrub-1/wait"), "/v1/jobs/{id}/wait");
  EXPECT_EQ(pattern(Method::kPost, "/v1/jobs/scrub-1/wait"), "/v1/jobs/{path...}");
  EXPECT_EQ(pattern(Method::kDelete, "/v1/cluster/nodes/t1/maintenance"),
            "/v1/cluster/nodes/{id}/maintenance");
  EXPECT_EQ(pattern(Method::kPut, "/v1/buckets/photos/props"), "/v1/buckets/{bucket}/props");
  EXPECT_EQ(pattern(Method::kOther, "/v1/buckets/photos/props"), "/v1/buckets/{bucket}/props");
  EXPECT_EQ(pattern(Method::kDelete, "/v1/users/bob"), "/v1/users/{access_key}");
  EXPECT_EQ(pattern(Method::kGet, "/v1/objects/b/n"), "none") << "objects stay silod's to route";
}

}  // namespace
}  // namespace silo::proxy
