#include "wire/node_map_json.h"

#include <gtest/gtest.h>

#include "wire/codec.h"

namespace silo::wire {
namespace {

NodeMap two_node_map() {
  NodeMap map;
  map.set_version(7);
  map.set_primary_id("p1");
  map.set_rebalance_id(3);
  map.set_rebalance_phase(REBALANCE_PHASE_COPY);
  NodeInfo* proxy = map.add_nodes();
  proxy->set_id("p1");
  proxy->set_role(NODE_ROLE_PROXY);
  proxy->set_url("http://127.0.0.1:8080");
  NodeInfo* target = map.add_nodes();
  target->set_id("t\"1");
  target->set_role(NODE_ROLE_TARGET);
  target->set_url("http://127.0.0.1:8081");
  target->set_mode(NODE_MODE_MAINTENANCE);
  return map;
}

TEST(NodeMapJsonTest, DecodesWhatTheProxyEncodes) {
  const NodeMap map = two_node_map();
  auto decoded = parse_node_map_json(node_map_json(map));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(decoded->version, 7u);
  EXPECT_EQ(decoded->primary, "p1");
  EXPECT_EQ(decoded->rebalance_id, 3u);
  EXPECT_EQ(decoded->rebalance_phase, phase_name(REBALANCE_PHASE_COPY));
  EXPECT_EQ(decoded->rebalance_job(), "rebalance-3");
  ASSERT_EQ(decoded->nodes.size(), 2u);
  for (int i = 0; i < map.nodes_size(); ++i) {
    const NodeInfo& want = map.nodes(i);
    const NodeEntry& got = decoded->nodes[static_cast<size_t>(i)];
    EXPECT_EQ(got.id, want.id());
    EXPECT_EQ(got.role, role_name(want.role()));
    EXPECT_EQ(got.url, want.url());
    EXPECT_EQ(got.state, state_name(want.state()));
    EXPECT_EQ(got.mode, mode_name(want.mode()));
  }
  ASSERT_NE(decoded->find("t\"1"), nullptr);
  EXPECT_EQ(decoded->find("t\"1")->mode, mode_name(NODE_MODE_MAINTENANCE));
  EXPECT_EQ(decoded->find("t9"), nullptr);
}

TEST(NodeMapJsonTest, NoRebalanceYet) {
  auto decoded = parse_node_map_json(R"({"version": 1, "primary": "p1", "nodes": []})");
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(decoded->rebalance_id, 0u);
  EXPECT_EQ(decoded->rebalance_job(), "");
}

TEST(NodeMapJsonTest, MalformedNamesTheDocumentAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "the node map: not valid JSON"},
      {"[1]", "the node map: not a JSON object"},
      {R"({"nodes": []})", "the node map: 'version' is missing"},
      {R"({"version": -1, "nodes": []})", "the node map: 'version' must be a non-negative integer"},
      {R"({"version": 1})", "the node map: 'nodes' is missing"},
      {R"({"version": 1, "nodes": [{"id": "t1", "role": "target", "url": 5, "state": "online"}]})",
       "the node map: 'nodes[0].url' must be a string"},
      {R"({"version": 1, "nodes": [7]})", "the node map: 'nodes[0]' must be an object"},
      {R"({"version": 1, "nodes": [], "rebalance": {"phase": "copy"}})", "the node map: 'rebalance.id' is missing"},
  };
  for (const auto& [text, message] : cases) {
    auto decoded = parse_node_map_json(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument) << text;
    EXPECT_EQ(decoded.error().message(), message) << text;
  }
}

TEST(MembershipChangeJsonTest, RoundTrip) {
  for (const MembershipChange& change :
       {MembershipChange{12, "rebalance-4", "copy"}, MembershipChange{1, "", "done"}}) {
    auto decoded = parse_membership_change_json(membership_change_json(change));
    ASSERT_TRUE(decoded.has_value()) << decoded.error();
    EXPECT_EQ(*decoded, change);
  }
}

TEST(MembershipChangeJsonTest, BytesAreTheProxys) {
  // proxy/cluster_admin.cc writes this document by hand; the codec writes the same bytes.
  EXPECT_EQ(membership_change_json({12, "rebalance-4", "copy"}),
            R"({"node_map_version":12,"rebalance":"rebalance-4","rebalance_phase":"copy"})");
}

TEST(MembershipChangeJsonTest, Malformed) {
  auto missing = parse_membership_change_json(R"({"rebalance": ""})");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "a membership change: 'node_map_version' is missing");
  auto wrong = parse_membership_change_json(R"({"node_map_version": 3, "rebalance": 4})");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().message(), "a membership change: 'rebalance' must be a string");
}

}  // namespace
}  // namespace silo::wire
