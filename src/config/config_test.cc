#include "config/config.h"

#include <gtest/gtest.h>

#include "config/live_config.h"

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

TEST(ConfigTest, APrimaryUrlNamingTheNodeItselfMakesItThePrimary) {
  // Every proxy of a StatefulSet gets the same --primary: the one it names is the primary.
  Config c;
  c.node.data_dir = "/d";
  c.node.role = Role::kProxy;
  c.node.public_url = "http://silo-proxy-0.silo-proxy-hl.ns.svc.cluster.local:8080";
  c.node.primary_url = c.node.public_url + "/";
  ASSERT_TRUE(finalize(c).is_ok());
  EXPECT_EQ(c.node.primary_url, "") << "the primary joins nobody";

  Config other = c;
  other.node.public_url = "http://silo-proxy-1.silo-proxy-hl.ns.svc.cluster.local:8080";
  other.node.primary_url = c.node.public_url;
  ASSERT_TRUE(finalize(other).is_ok());
  EXPECT_EQ(other.node.primary_url, c.node.public_url);

  Config target = c;
  target.node.role = Role::kTarget;
  target.node.primary_url = target.node.public_url;
  EXPECT_NE(finalize(target).message().find("only a proxy can be the primary"), std::string::npos);
}

TEST(ConfigTest, TlsMakesTheUrlHttpsAndNeedsItsFilesInPairs) {
  auto c = parse(R"({"node": {"data_dir": "/d", "port": 8443,
                     "tls": {"cert_file": "/t/node.pem", "key_file": "/t/node-key.pem", "ca_file": "/t/ca.pem",
                             "require_client_cert": true}}})");
  ASSERT_TRUE(c.has_value()) << c.status();
  ASSERT_TRUE(finalize(*c).is_ok());
  EXPECT_TRUE(c->node.tls.is_enabled());
  EXPECT_TRUE(c->node.tls.require_client_cert);
  EXPECT_EQ(c->node.public_url, "https://127.0.0.1:8443");
  auto again = parse(to_json(*c));
  ASSERT_TRUE(again.has_value()) << again.status();
  EXPECT_EQ(again->node.tls.ca_file, "/t/ca.pem");

  Config plain_url = *c;
  plain_url.node.public_url = "http://127.0.0.1:8443";
  EXPECT_NE(finalize(plain_url).message().find("must start with https://"), std::string::npos);
  Config https_without_tls;
  https_without_tls.node.data_dir = "/d";
  https_without_tls.node.public_url = "https://127.0.0.1:8443";
  EXPECT_NE(finalize(https_without_tls).message().find("TLS is not configured"), std::string::npos);
  Config no_key = *c;
  no_key.node.tls.key_file.clear();
  EXPECT_NE(finalize(no_key).message().find("both cert_file and key_file"), std::string::npos);
  Config no_ca = *c;
  no_ca.node.tls.ca_file.clear();
  EXPECT_NE(finalize(no_ca).message().find("require_client_cert needs"), std::string::npos);
  EXPECT_NE(parse(R"({"node": {"tls": {"require_client_cert": "yes"}}})").status().message().find("true or false"),
            std::string::npos);
  EXPECT_NE(parse(R"({"node": {"tls": {"cert": "x"}}})").status().message().find("node.tls.cert"), std::string::npos);
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

bool mentions(const Status& s, std::string_view text) { return s.message().find(text) != std::string::npos; }

TEST(ConfigOverridesTest, ApplyOverridesChangesOnlyTheNamedKeys) {
  ClusterConfig c;
  c.cache.low_wm = 60;
  ASSERT_TRUE(apply_overrides(c, R"({"cache":{"high_wm":85},"proxy_mode":"redirect","s3":{"max_object_size":1024}})")
                  .is_ok());
  EXPECT_EQ(c.cache.high_wm, 85u);
  EXPECT_EQ(c.cache.low_wm, 60u) << "a key the overrides do not name keeps the file's value";
  EXPECT_EQ(c.proxy_mode, ProxyMode::kRedirect);
  EXPECT_EQ(c.s3.max_object_size, 1024u);
  EXPECT_TRUE(apply_overrides(c, "").is_ok());
  EXPECT_EQ(c.cache.high_wm, 85u);
}

TEST(ConfigOverridesTest, ApplyOverridesRefusesBadValuesAndLeavesTheConfig) {
  ClusterConfig c;
  const Status order = apply_overrides(c, R"({"cache":{"low_wm":95}})");
  EXPECT_EQ(order.code(), Code::kInvalidArgument);
  EXPECT_TRUE(mentions(order, "low_wm < high_wm")) << order;
  EXPECT_EQ(c.cache.low_wm, 75u);
  const Status type = apply_overrides(c, R"({"cache":{"high_wm":"lots"}})");
  EXPECT_TRUE(mentions(type, "cluster.cache.high_wm must be a non-negative integer")) << type;
  EXPECT_TRUE(mentions(apply_overrides(c, R"({"proxy_mode":"teleport"})"), "cluster.proxy_mode"));
  EXPECT_TRUE(mentions(apply_overrides(c, R"({"http":{"max_connections":5}})"), "read at start"));
  EXPECT_TRUE(mentions(apply_overrides(c, "[1]"), "must be a JSON object"));
  EXPECT_EQ(c.proxy_mode, ProxyMode::kStream);
}

TEST(ConfigOverridesTest, MergePatchNullRemovesAnOverride) {
  auto merged = merge_overrides("", R"({"cache":{"high_wm":85,"low_wm":50},"durability":"page_cache"})");
  ASSERT_TRUE(merged.has_value()) << merged.status();
  auto next = merge_overrides(*merged, R"({"cache":{"high_wm":null},"proxy_mode":"redirect"})");
  ASSERT_TRUE(next.has_value()) << next.status();
  EXPECT_EQ(*next, R"({"cache":{"low_wm":50},"durability":"page_cache","proxy_mode":"redirect"})");
  // Removing the last key of a section removes the section; nothing left is "".
  auto emptied = merge_overrides(*next, R"({"cache":{"low_wm":null},"durability":null,"proxy_mode":null})");
  ASSERT_TRUE(emptied.has_value()) << emptied.status();
  EXPECT_EQ(*emptied, "");
  auto whole = merge_overrides(*next, R"({"cache":null})");
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(*whole, R"({"durability":"page_cache","proxy_mode":"redirect"})");

  ClusterConfig file;
  file.cache.high_wm = 80;
  ClusterConfig effective = file;
  ASSERT_TRUE(apply_overrides(effective, *next).is_ok());
  EXPECT_EQ(effective.cache.high_wm, 80u) << "a removed override falls back to the file's value";
  EXPECT_EQ(effective.cache.low_wm, 50u);
}

TEST(ConfigOverridesTest, OnlyRuntimeSettableKeysMayBeSet) {
  for (const char* key : {"durability", "proxy_mode", "s3.region", "s3.max_object_size", "s3.multipart_upload_ttl_h",
                          "cache.high_wm", "cache.s3.secret_key", "cluster.cache.first_access"}) {
    EXPECT_TRUE(is_runtime_settable(key)) << key;
  }
  for (const char* key : {"http.max_connections", "auth.admin_secret_key", "meta_store.kind", "keepalive_interval_ms",
                          "s3.domains", "s3.min_part_size", "cache"}) {
    EXPECT_FALSE(is_runtime_settable(key)) << key;
  }
  const auto start_only = merge_overrides("", R"({"s3":{"min_part_size":1048576}})");
  ASSERT_FALSE(start_only.has_value());
  EXPECT_TRUE(mentions(start_only.error(), "cluster.s3.min_part_size is read at start")) << start_only.error();
  const auto section = merge_overrides("", R"({"auth":{"admin_secret_key":"x"}})");
  ASSERT_FALSE(section.has_value());
  EXPECT_TRUE(mentions(section.error(), "cluster.auth.admin_secret_key is read at start")) << section.error();
  const auto whole_section = merge_overrides("", R"({"http":null})");
  ASSERT_FALSE(whole_section.has_value());
  EXPECT_TRUE(mentions(whole_section.error(), "cluster.http is read at start")) << whole_section.error();
  const auto keepalive = merge_overrides("", R"({"keepalive_interval_ms":100})");
  ASSERT_FALSE(keepalive.has_value());
  EXPECT_TRUE(mentions(keepalive.error(), "cluster.keepalive_interval_ms is read at start"));
  const auto unknown = merge_overrides("", R"({"cache":{"hihg_wm":1}})");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_TRUE(mentions(unknown.error(), "unknown key cluster.cache.hihg_wm")) << unknown.error();
  const auto top = merge_overrides("", R"({"nope":1})");
  ASSERT_FALSE(top.has_value());
  EXPECT_TRUE(mentions(top.error(), "unknown key cluster.nope"));
  EXPECT_FALSE(merge_overrides("", "not json").has_value());
}

TEST(ConfigOverridesTest, TheMaskKeepsTheSecret) {
  auto merged = merge_overrides("", R"({"cache":{"s3":{"access_key":"AK","secret_key":"SK"}}})");
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(mask_overrides(*merged), R"({"cache":{"s3":{"access_key":"AK","secret_key":"********"}}})");
  // What GET shows, sent back with another change: the secret stays.
  auto again = merge_overrides(*merged, R"({"cache":{"s3":{"access_key":"AK2","secret_key":"********"}}})");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, R"({"cache":{"s3":{"access_key":"AK2","secret_key":"SK"}}})");
  // With no override of the secret, the mask keeps the file's.
  auto file_secret = merge_overrides("", R"({"cache":{"gs":{"secret_key":"********"}}})");
  ASSERT_TRUE(file_secret.has_value());
  EXPECT_EQ(*file_secret, "");
  EXPECT_EQ(mask_overrides(""), "{}");
}

TEST(ConfigOverridesTest, CheckClusterIsWhatFinalizeChecks) {
  ClusterConfig c;
  EXPECT_TRUE(check_cluster(c).is_ok());
  c.cache.high_wm = 99;
  EXPECT_TRUE(mentions(check_cluster(c), "low_wm < high_wm <= oos_wm"));
  Config whole;
  whole.node.data_dir = "/d";
  whole.cluster = c;
  EXPECT_EQ(finalize(whole).message(), check_cluster(c).message());
}

TEST(LiveConfigTest, KeepsThePreviousConfigWhenOverridesDoNotApply) {
  ClusterConfig file;
  file.cache.high_wm = 80;
  LiveConfig live(file);
  ASSERT_TRUE(live.set_overrides(R"({"cache":{"low_wm":70}})").is_ok());
  const auto before = live.get();
  EXPECT_EQ(before->cache.low_wm, 70u);
  EXPECT_FALSE(live.set_overrides(R"({"cache":{"low_wm":85}})").is_ok()) << "85 is past this file's high_wm";
  EXPECT_EQ(live.get(), before);
  EXPECT_EQ(live.overrides(), R"({"cache":{"low_wm":70}})");
  ASSERT_TRUE(live.set_overrides("").is_ok());
  EXPECT_EQ(live.get()->cache.low_wm, 75u);
  EXPECT_EQ(before->cache.low_wm, 70u) << "a snapshot taken stays as it was";
}

}  // namespace
}  // namespace silo::config
