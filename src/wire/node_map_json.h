#pragma once

// The node map and membership documents of the native API: one codec each, the
// encoder for the proxy and the decoder for the client (src/client, the `silo` CLI).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

class NodeMap;  // node_map.proto

// One node of GET /v1/cluster/map.
struct NodeEntry {
  std::string id;
  std::string role;   // "proxy" | "target" | "all"
  std::string url;    // "http://127.0.0.1:PORT"
  std::string state;  // "online" | "down" | ...
  std::string mode;   // "normal" | "maintenance" | "decommissioning"
  bool operator==(const NodeEntry&) const = default;
};

// GET /v1/cluster/map as a client reads it (NodeMap is the protobuf record it is made
// from, with enums where this has their names).
struct NodeMapAnswer {
  uint64_t version = 0;
  std::string primary;
  std::vector<NodeEntry> nodes;
  uint64_t rebalance_id = 0;    // the current or last rebalance; 0 before the first
  std::string rebalance_phase;  // "copy" | "cleanup" | "done"
  const NodeEntry* find(std::string_view id) const;
  // "rebalance-<rebalance_id>", or "" when there was none.
  std::string rebalance_job() const;
  bool operator==(const NodeMapAnswer&) const = default;
};

// {"version", "primary", "nodes": [{"id", "role", "url", "state", "mode"}],
//  "rebalance": {"id", "phase"}} (CONTRACT.md).
std::string node_map_json(const NodeMap& map);
// Requires "version"; "rebalance" may be absent (servers before rebalance ids).
Result<NodeMapAnswer> parse_node_map_json(std::string_view text);

// What a membership change answers (POST|DELETE /v1/cluster/nodes...).
struct MembershipChange {
  uint64_t node_map_version = 0;  // the map with the change
  std::string rebalance_job;      // the rebalance that moves the objects ("" when none ran yet)
  std::string rebalance_phase;    // "copy" | "cleanup" | "done"
  bool operator==(const MembershipChange&) const = default;
};

// {"node_map_version", "rebalance": "rebalance-N" | "", "rebalance_phase"}
std::string membership_change_json(const MembershipChange& change);
Result<MembershipChange> parse_membership_change_json(std::string_view text);

}  // namespace silo::wire
