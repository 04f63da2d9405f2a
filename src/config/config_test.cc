#include "config/config.h"

#include <gtest/gtest.h>

namespace silo::config {
namespace {

TEST(ConfigTest, ParsesBothSections) {
  auto c = parse(R"({"node": {"id": "t1", "role": "target", "port": 0, "data_dir": "/d",
                     "primary_url": "http://127.0.0.1:8080", "mountpaths": ["/d/a", "/d/b"]},
                     "cluster": {"keepalive_interval_ms": 200, "keepalive_timeout_ms": 1000,
                                 "durability": "page_cache", "proxy_mode": "redirect",
                                 "http": {"max_header_bytes": 8192, "idle_timeout_s": 5}}})");
  ASSERT_TRUE(c.has_value()) << c.status();
  ASSERT_TRUE(finalize(*c).is_ok());
  EXPECT_EQ(c->node.role, Role::kTarget);
  EXPECT_EQ(c->node.mountpaths.size(), 2u);
  EXPECT_EQ(c->node.public_url, "http://127.0.0.1:0");
  EXPECT_EQ(c->cluster.keepalive_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(c->cluster.durability, Durability::kPageCache);
  EXPECT_EQ(c->cluster.proxy_mode, ProxyMode::kRedirect);
  EXPECT_EQ(c->cluster.http.max_header_bytes, 8192u);
  EXPECT_EQ(c->cluster.http.idle_timeout, std::chrono::seconds(5));
}

// to_json() reads back as the same config, and shows no secret.
TEST(ConfigTest, ToJsonRoundTripsAndMasksSecrets) {
  auto c = parse(R"({"node": {"id": "t1", "role": "target", "data_dir": "/d"},
                     "cluster": {"cache": {"s3": {"endpoint": "http://s3:9000", "access_key": "AK", "secret_key": "SK"},
                                           "first_access": "s3", "low_wm": 60, "high_wm": 80, "oos_wm": 90},
                                 "auth": {"admin_secret_key": "super-secret-1"}}})");
  ASSERT_TRUE(c.has_value()) << c.status();
  ASSERT_TRUE(finalize(*c).is_ok());
  const std::string shown = to_json(*c);
  EXPECT_EQ(shown.find("SK"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("super-secret-1"), std::string::npos) << shown;
  auto again = parse(shown);
  ASSERT_TRUE(again.has_value()) << again.status() << "\n" << shown;
  EXPECT_EQ(again->cluster.cache.s3.endpoint, "http://s3:9000");
  EXPECT_EQ(again->cluster.cache.first_access, "s3");
  EXPECT_EQ(again->cluster.cache.high_wm, 80u);
  EXPECT_EQ(again->node.mountpaths, c->node.mountpaths);
}

TEST(ConfigTest, ErrorsNameTheProblem) {
  auto typo = parse(R"({"node": {"prot": 80}})");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().message().find("unknown key node.prot"), std::string::npos);

  auto type = parse(R"({"node": {"port": "80"}})");
  EXPECT_NE(type.error().message().find("node.port must be a non-negative integer"), std::string::npos);

  auto range = parse(R"({"node": {"port": 70000}})");
  EXPECT_NE(range.error().message().find("node.port"), std::string::npos);

  auto role = parse(R"({"node": {"role": "gateway"}})");
  EXPECT_NE(role.error().message().find("valid: proxy|target|all"), std::string::npos);

  auto http = parse(R"({"cluster": {"http": {"max_conns": 1}}})");
  EXPECT_NE(http.error().message().find("unknown key cluster.http.max_conns"), std::string::npos);

  EXPECT_FALSE(parse("{not json").has_value());
  EXPECT_FALSE(parse("[]").has_value());
  EXPECT_FALSE(parse(R"({"nodes": {}})").has_value());
}

TEST(ConfigTest, FinalizeChecksCrossFieldRules) {
  Config c;
  c.node.data_dir = "/d";
  c.node.role = Role::kTarget;
  EXPECT_TRUE(finalize(c).is_ok()) << "a target without primary_url waits for an admin to add it";
  c.cluster.meta_store.kind = MetaStoreConfig::Kind::kEtcd;
  EXPECT_NE(finalize(c).message().find("etcd_endpoints"), std::string::npos);

  Config no_dir;
  EXPECT_NE(finalize(no_dir).message().find("data_dir"), std::string::npos);

  Config keepalive;
  keepalive.node.data_dir = "/d";
  keepalive.cluster.keepalive_timeout = std::chrono::milliseconds(100);
  EXPECT_NE(finalize(keepalive).message().find("keepalive_timeout_ms"), std::string::npos);

  Config all;
  all.node.data_dir = "/d";
  ASSERT_TRUE(finalize(all).is_ok());
  EXPECT_EQ(all.node.mountpaths, std::vector<std::string>{"/d/mp0"});
  EXPECT_EQ(all.node.id, "127.0.0.1-8080");
}

}  // namespace
}  // namespace silo::config
