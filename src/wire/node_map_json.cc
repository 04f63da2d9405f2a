#include "wire/node_map_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "wire/codec.h"
#include "wire/detail/json_fields.h"

namespace silo::wire {

using nlohmann::json;

const NodeEntry* NodeMapAnswer::find(std::string_view id) const {
  for (const auto& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

std::string NodeMapAnswer::rebalance_job() const {
  return rebalance_id == 0 ? std::string() : fmt::format("rebalance-{}", rebalance_id);
}

std::string node_map_json(const NodeMap& map) {
  json nodes = json::array();
  for (const auto& n : map.nodes()) {
    nodes.push_back({{"id", n.id()},
                     {"role", role_name(n.role())},
                     {"url", n.url()},
                     {"state", state_name(n.state())},
                     {"mode", mode_name(n.mode())}});
  }
  return json{{"version", map.version()},
              {"primary", map.primary_id()},
              {"nodes", nodes},
              {"rebalance", {{"id", map.rebalance_id()}, {"phase", phase_name(map.rebalance_phase())}}}}
      .dump();
}

Result<NodeMapAnswer> parse_node_map_json(std::string_view text) {
  constexpr std::string_view kDocument = "the node map";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  NodeMapAnswer map;
  ASSIGN_OR_RETURN(map.version, fields.u64("version"));
  ASSIGN_OR_RETURN(map.primary, fields.string_or("primary", ""));
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> nodes, fields.objects("nodes"));
  for (const detail::JsonFields& n : nodes) {
    NodeEntry& node = map.nodes.emplace_back();
    ASSIGN_OR_RETURN(node.id, n.string("id"));
    ASSIGN_OR_RETURN(node.role, n.string("role"));
    ASSIGN_OR_RETURN(node.url, n.string("url"));
    ASSIGN_OR_RETURN(node.state, n.string("state"));
    ASSIGN_OR_RETURN(node.mode, n.string_or("mode", ""));
  }
  ASSIGN_OR_RETURN(const std::optional<detail::JsonFields> rebalance, fields.object_or_none("rebalance"));
  if (rebalance) {
    ASSIGN_OR_RETURN(map.rebalance_id, rebalance->u64("id"));
    ASSIGN_OR_RETURN(map.rebalance_phase, rebalance->string_or("phase", ""));
  }
  return map;
}

std::string membership_change_json(const MembershipChange& change) {
  return json{{"node_map_version", change.node_map_version},
              {"rebalance", change.rebalance_job},
              {"rebalance_phase", change.rebalance_phase}}
      .dump();
}

Result<MembershipChange> parse_membership_change_json(std::string_view text) {
  constexpr std::string_view kDocument = "a membership change";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  MembershipChange change;
  ASSIGN_OR_RETURN(change.node_map_version, fields.u64("node_map_version"));
  ASSIGN_OR_RETURN(change.rebalance_job, fields.string_or("rebalance", ""));
  ASSIGN_OR_RETURN(change.rebalance_phase, fields.string_or("rebalance_phase", ""));
  return change;
}

}  // namespace silo::wire
