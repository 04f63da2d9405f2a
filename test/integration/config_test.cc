// Changing cluster settings at run time (docs/configuration.md "Changing settings at run
// time", docs/adr/0012): `silo config set|reset` against a real cluster of 2 proxies and
// 2 targets. A change made through any node reaches every node, takes effect on the next
// request, survives restarts, reaches nodes added later, and a refused one changes nothing.
#include <gtest/gtest.h>

#include "cli_util.h"
#include "test_util.h"
#include "wire/json.h"

namespace silo::integration {
namespace {

constexpr std::string_view kBucket = "cfg";
constexpr uint64_t kDefaultMaxObjectSize = 5ULL * 1024 * 1024 * 1024 * 1024;

class RuntimeConfigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = LocalCluster::start({.proxies = 2, .targets = 2, .mountpaths = 1,
                                        .env = {{"SILO_DURABILITY", "page_cache"}}});
    ASSERT_TRUE(started.has_value()) << started.status();
    cluster_ = std::move(*started).release();
    ASSERT_TRUE(cluster_->client().create_bucket(kBucket).is_ok());
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr) << "the cluster did not start"; }

  // The URL of the proxy that is not the primary.
  static std::string other_proxy_url() {
    for (const auto& id : cluster_->proxy_ids()) {
      auto node = cluster_->node(id);
      if (node && node->url != cluster_->endpoint()) return node->url;
    }
    return cluster_->endpoint();
  }

  static std::string primary_id() {
    for (const auto& id : cluster_->proxy_ids()) {
      auto node = cluster_->node(id);
      if (node && node->url == cluster_->endpoint()) return id;
    }
    return "p1";
  }

  // GET /v1/config on node `id`: the value at `key` ("cluster.s3.max_object_size") as JSON.
  static std::string config_value(std::string_view id, std::string_view key) {
    auto c = cluster_->client_of(id);
    if (!c) return "<no client: " + c.status().message() + ">";
    auto doc = (*c)->config();
    if (!doc) return "<" + doc.status().message() + ">";
    auto value = wire::json_value_at(*doc, key);
    return value ? *value : "<not JSON>";
  }

  // Waits until every node's GET /v1/config shows `want` at `key`; the nodes that do not.
  static std::string nodes_without(std::string_view key, const std::string& want) {
    std::string missing;
    const Status s = silo::testing::wait_until(
        [&] {
          missing.clear();
          for (const auto& id : cluster_->node_ids()) {
            const std::string got = config_value(id, key);
            if (got != want) missing += fmt::format("{} has {}; ", id, got);
          }
          return missing.empty();
        },
        seconds(20), "every node has the change");
    return s.is_ok() ? "" : missing;
  }

  // An S3 PutObject of `size` bytes through the proxy at `url`: the HTTP status and body.
  static std::pair<int, std::string> s3_put(const std::string& url, std::string_view name, size_t size) {
    auto c = client::Client::create(url, silo::testing::admin_client_options());
    if (!c) return {-1, c.status().message()};
    auto r = (*c)->request(http::Method::kPut, fmt::format("/{}/{}", kBucket, name), std::string(size, 'x'));
    if (!r) return {-1, r.status().message()};
    return {r->status, r->body};
  }

  static LocalCluster* cluster_;
};

LocalCluster* RuntimeConfigTest::cluster_ = nullptr;

TEST_F(RuntimeConfigTest, MaxObjectSizeSetThroughAnyProxyAppliesEverywhereAndResets) {
  Cli cli(other_proxy_url());  // not the primary: the change is relayed there
  CliResult r = cli.run({"config", "set", "s3.max_object_size=1024"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, fmt::format("s3.max_object_size: {} -> 1024", kDefaultMaxObjectSize))) << r;
  EXPECT_EQ(nodes_without("cluster.s3.max_object_size", "1024"), "");

  for (const auto& id : cluster_->proxy_ids()) {
    const std::string url = cluster_->node(id)->url;
    const auto [status, body] = s3_put(url, "big-" + id, 2048);
    EXPECT_EQ(status, 400) << id << ": " << body;
    EXPECT_TRUE(contains(body, "EntityTooLarge")) << id << ": " << body;
    EXPECT_EQ(s3_put(url, "small-" + id, 512).first, 200) << id;
  }
  // The native API has the same bound (with a Content-Length, and streamed without one).
  auto native = cluster_->client().put(kBucket, "big-native", std::string(2048, 'n'));
  ASSERT_FALSE(native.has_value());
  EXPECT_EQ(native.status().code(), Code::kInvalidArgument) << native.status();
  EXPECT_TRUE(contains(native.status().message(), "exceeds the maximum allowed size of 1024")) << native.status();
  EXPECT_EQ(cluster_->client().head(kBucket, "big-native").status().code(), Code::kNotFound);
  ASSERT_TRUE(cluster_->client().put(kBucket, "small-native", std::string(512, 'n')).has_value());

  r = cli.run({"config", "reset", "cluster.s3.max_object_size"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, fmt::format("s3.max_object_size: 1024 -> {}", kDefaultMaxObjectSize))) << r;
  EXPECT_EQ(nodes_without("cluster.s3.max_object_size", std::to_string(kDefaultMaxObjectSize)), "");
  for (const auto& id : cluster_->proxy_ids()) {
    const auto [status, body] = s3_put(cluster_->node(id)->url, "big-" + id, 2048);
    EXPECT_EQ(status, 200) << id << ": " << body;
  }
  r = cli.run({"config", "show", "--overrides"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(r.out, "{}\n");
}

TEST_F(RuntimeConfigTest, ProxyModeRedirectMakesProxiesAnswer307) {
  ASSERT_TRUE(cluster_->client().put(kBucket, "routed", "bytes").has_value());
  Cli cli(cluster_->endpoint());
  CliResult r = cli.run({"config", "set", "cluster.proxy_mode=redirect", "--json"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, R"({"key":"proxy_mode","old":"stream","new":"redirect"})")) << r;
  EXPECT_EQ(nodes_without("cluster.proxy_mode", "\"redirect\""), "");
  for (const auto& id : cluster_->proxy_ids()) {
    auto c = cluster_->client_of(id);
    ASSERT_TRUE(c.has_value());
    auto got = (*c)->request(http::Method::kGet, fmt::format("/v1/objects/{}/routed", kBucket));
    ASSERT_TRUE(got.has_value()) << got.status();
    EXPECT_EQ(got->status, 307) << id << ": " << got->body;
  }

  r = cli.run({"config", "reset", "proxy_mode"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(nodes_without("cluster.proxy_mode", "\"stream\""), "");
  for (const auto& id : cluster_->proxy_ids()) {
    auto got = cluster_->client_of(id).value()->request(http::Method::kGet, fmt::format("/v1/objects/{}/routed", kBucket));
    ASSERT_TRUE(got.has_value()) << got.status();
    EXPECT_EQ(got->status, 200) << id << ": " << got->body;
  }
}

TEST_F(RuntimeConfigTest, RestartedAndAddedNodesHaveTheOverrides) {
  Cli cli(cluster_->endpoint());
  CliResult r = cli.run({"config", "set", "cache.high_wm=85", "cache.low_wm=60"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_TRUE(contains(r.out, "cache.high_wm: 90 -> 85") && contains(r.out, "cache.low_wm: 75 -> 60")) << r;

  // A restarted target and a restarted primary read them back from their state.
  ASSERT_TRUE(cluster_->restart("t1").is_ok());
  const std::string primary = primary_id();
  ASSERT_TRUE(cluster_->restart(primary).is_ok());
  EXPECT_EQ(config_value("t1", "cluster.cache.high_wm"), "85");
  EXPECT_EQ(config_value(primary, "cluster.cache.high_wm"), "85");
  // A node that joins later gets them with the bucket map.
  auto added = cluster_->add_node("target");
  ASSERT_TRUE(added.has_value()) << added.status();
  EXPECT_EQ(nodes_without("cluster.cache.high_wm", "85"), "");
  EXPECT_EQ(config_value(*added, "cluster.cache.low_wm"), "60");

  r = cli.run({"config", "show", "--overrides"});
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(r.out, "{\"cache\":{\"high_wm\":85,\"low_wm\":60}}\n");
  r = cli.run({"config", "reset", "cache"});  // a whole section
  ASSERT_EQ(r.code, kOk) << r;
  EXPECT_EQ(nodes_without("cluster.cache.high_wm", "90"), "");
  EXPECT_EQ(cli.run({"config", "show", "--overrides"}).out, "{}\n");
}

TEST_F(RuntimeConfigTest, RefusedChangesNameTheKeyAndChangeNothing) {
  Cli cli(other_proxy_url());
  ASSERT_EQ(cli.run({"config", "set", "durability=fsync"}).code, kOk);
  const std::string before = cli.run({"config", "show", "--overrides"}).out;
  ASSERT_EQ(before, "{\"durability\":\"fsync\"}\n");

  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"cache.high_wm=lots"}, "cluster.cache.high_wm must be a non-negative integer"},
      {{"cache.low_wm=95"}, "low_wm < high_wm"},
      {{"proxy_mode=teleport"}, "cluster.proxy_mode"},
      {{"http.max_connections=5"}, "cluster.http.max_connections is read at start"},
      {{"s3.min_part_size=1"}, "cluster.s3.min_part_size is read at start"},
      {{"keepalive_interval_ms=500"}, "cluster.keepalive_interval_ms is read at start"},
      {{"cache.bogus=1"}, "unknown key cluster.cache.bogus"},
      // One refused key refuses the whole change.
      {{"durability=page_cache", "auth.admin_secret_key=x"}, "cluster.auth.admin_secret_key is read at start"},
  };
  for (const auto& [pairs, message] : refused) {
    std::vector<std::string> args = {"config", "set"};
    args.insert(args.end(), pairs.begin(), pairs.end());
    const CliResult r = cli.run(args);
    EXPECT_EQ(r.code, kUsage) << pairs.front() << ": " << r;
    EXPECT_TRUE(contains(r.err, message)) << pairs.front() << ": " << r;
  }
  const CliResult node_key = cli.run({"config", "set", "node.port=1"});
  EXPECT_EQ(node_key.code, kUsage) << node_key;
  EXPECT_TRUE(contains(node_key.err, "node settings are per node")) << node_key;
  EXPECT_EQ(cli.run({"config", "set", "novalue"}).code, kUsage);

  EXPECT_EQ(cli.run({"config", "show", "--overrides"}).out, before) << "nothing changed";
  EXPECT_EQ(nodes_without("cluster.durability", "\"fsync\""), "");

  // Other methods than GET and PUT are refused, naming the allowed ones.
  auto deleted = cluster_->client().request(http::Method::kDelete, "/v1/config");
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ(deleted->status, 400);
  EXPECT_TRUE(contains(deleted->body, "use GET or PUT")) << deleted->body;

  ASSERT_EQ(cli.run({"config", "reset", "durability"}).code, kOk);
  EXPECT_EQ(cli.run({"config", "show", "--overrides"}).out, "{}\n");
}

TEST_F(RuntimeConfigTest, OnlyAdminsMayReadOrChangeIt) {
  auto added = cluster_->client().request(http::Method::kPut, "/v1/users/reader",
                                          R"({"secret_key":"reader-secret-1","admin":false})");
  ASSERT_TRUE(added.has_value());
  ASSERT_EQ(added->status, 200) << added->body;
  Cli cli(other_proxy_url());
  const EnvVars reader = {{"SILO_ACCESS_KEY", "reader"}, {"SILO_SECRET_KEY", "reader-secret-1"}};
  const CliResult set = cli.run({"config", "set", "proxy_mode=redirect"}, reader);
  EXPECT_EQ(set.code, kAuth) << set;
  EXPECT_EQ(cli.run({"config", "reset", "proxy_mode"}, reader).code, kAuth);
  EXPECT_EQ(cli.run({"config", "show"}, reader).code, kAuth);
  // The endpoint itself, not only the CLI's GET before it: 403 AccessDenied.
  client::ClientOptions options;
  options.access_key = "reader";
  options.secret_key = "reader-secret-1";
  auto as_reader = client::Client::create(other_proxy_url(), options);
  ASSERT_TRUE(as_reader.has_value());
  auto put = (*as_reader)->request(http::Method::kPut, "/v1/config", R"({"proxy_mode":"redirect"})");
  ASSERT_TRUE(put.has_value()) << put.status();
  EXPECT_EQ(put->status, 403) << put->body;
  EXPECT_EQ(config_value(primary_id(), "cluster.proxy_mode"), "\"stream\"");
}

}  // namespace
}  // namespace silo::integration
