#include "wire/codec.h"

namespace silo::wire {

std::string_view role_name(NodeRole role) {
  switch (role) {
    case NODE_ROLE_PROXY: return "proxy";
    case NODE_ROLE_TARGET: return "target";
    case NODE_ROLE_ALL: return "all";
    default: return "unspecified";
  }
}

std::string_view state_name(NodeState state) {
  switch (state) {
    case NODE_STATE_ONLINE: return "online";
    case NODE_STATE_DOWN: return "down";
    case NODE_STATE_MAINTENANCE: return "maintenance";
    default: return "unspecified";
  }
}

std::string_view mode_name(NodeMode mode) {
  switch (mode) {
    case NODE_MODE_NORMAL: return "normal";
    case NODE_MODE_MAINTENANCE: return "maintenance";
    case NODE_MODE_DECOMMISSIONING: return "decommissioning";
    default: return "unspecified";
  }
}

std::string_view phase_name(RebalancePhase phase) {
  switch (phase) {
    case REBALANCE_PHASE_DONE: return "done";
    case REBALANCE_PHASE_COPY: return "copy";
    case REBALANCE_PHASE_CLEANUP: return "cleanup";
    default: return "unspecified";
  }
}

Result<NodeRole> parse_role(std::string_view name) {
  if (name == "proxy") return NODE_ROLE_PROXY;
  if (name == "target") return NODE_ROLE_TARGET;
  if (name == "all") return NODE_ROLE_ALL;
  return Status::invalid_argument("unknown role '{}' (use proxy|target|all)", name);
}

}  // namespace silo::wire
