// silo cluster show, silo node maintenance|decommission, silo mountpath, silo config.
#include <fmt/format.h>

#include <cstdio>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "commands.h"
#include "wire/json.h"

namespace silo::cli {
namespace {

bool stores_objects(const client::NodeEntry& n) { return n.role == "target" || n.role == "all"; }

// The CLI's own rendering (its json_string escaping), not wire::mountpath_json: the output
// stays byte for byte what it has always been.
std::string mountpath_output_json(const client::MountpathEntry& m) {
  return fmt::format(
      R"({{"id":{},"path":{},"state":{},"failure":{},"capacity":{},"available":{},"objects":{}}})",
      json_string(m.id), json_string(m.path), json_string(m.state), json_string(m.failure),
      m.capacity_bytes, m.available_bytes, m.objects);
}

std::string used_percent(uint64_t capacity, uint64_t available) {
  if (capacity == 0) return "-";
  return fmt::format("{:.0f}%", 100.0 *
                                    static_cast<double>(capacity - std::min(capacity, available)) /
                                    static_cast<double>(capacity));
}

// One node with its mountpaths (targets; empty with `error` set when it did not answer).
struct NodeStorage {
  client::NodeEntry node;
  std::vector<client::MountpathEntry> mountpaths;
  client::MountpathWork work;  // the target's current or last resilver or detach
  std::string error;
};

std::vector<NodeStorage> storage_of(client::Client& c, const client::NodeMap& map) {
  std::vector<NodeStorage> out;
  for (const auto& n : map.nodes) {
    NodeStorage s{.node = n, .mountpaths = {}, .work = {}, .error = ""};
    if (stores_objects(n)) {
      if (auto m = c.mountpath_list(n.url)) {
        s.mountpaths = std::move(m->mountpaths);
        s.work = std::move(m->work);
      } else {
        s.error = m.error().message();
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// A JSON merge-patch of the cluster section built from dotted keys; leaves hold JSON text.
struct PatchNode {
  std::string value;  // a leaf's JSON text; "" for an object
  std::map<std::string, PatchNode> members;

  std::string render() const {
    if (!value.empty()) return value;
    std::string out;
    for (const auto& [key, member] : members) out += (out.empty() ? "" : ",") + json_string(key) + ":" + member.render();
    return "{" + out + "}";
  }
};

// `key` without a leading "cluster.", checked: dotted names of the cluster section.
Result<std::string> cluster_key(std::string_view key) {
  if (key.starts_with("cluster.")) key.remove_prefix(8);
  if (key.starts_with("node.") || key == "node") {
    return Status::invalid_argument("{}: node settings are per node and read at start; set them in the node's config file",
                                    key);
  }
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string_view::npos) {
    return Status::invalid_argument("'{}' is not a dotted key of the cluster section (e.g. cache.high_wm)", key);
  }
  return std::string(key);
}

Status add_to_patch(PatchNode& root, const std::string& key, std::string value) {
  PatchNode* at = &root;
  std::string_view rest = key;
  while (!rest.empty()) {
    const size_t dot = rest.find('.');
    if (!at->value.empty()) return Status::invalid_argument("{} is given twice (or inside another key's value)", key);
    at = &at->members[std::string(rest.substr(0, dot))];
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  }
  if (!at->value.empty() || !at->members.empty()) return Status::invalid_argument("{} is given twice", key);
  at->value = std::move(value);
  return Status::ok();
}

// Sends the changes (key, JSON value; null resets) as one merge-patch and prints each key
// with its value before and after.
Status change_config(Context& context, const std::vector<std::pair<std::string, std::string>>& changes) {
  PatchNode patch;
  std::vector<std::string> keys;
  for (const auto& [raw_key, value] : changes) {
    ASSIGN_OR_RETURN(std::string key, cluster_key(raw_key));
    RETURN_IF_ERROR(add_to_patch(patch, key, value));
    keys.push_back(std::move(key));
  }
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const std::string before, c->config());
  ASSIGN_OR_RETURN(const std::string after, c->set_config(patch.render()));
  std::string list;
  std::string lines;
  for (const std::string& key : keys) {
    ASSIGN_OR_RETURN(std::string old_value, wire::json_value_at(before, "cluster." + key));
    ASSIGN_OR_RETURN(std::string new_value, wire::json_value_at(after, "cluster." + key));
    if (old_value.empty()) old_value = "null";
    if (new_value.empty()) new_value = "null";
    list += fmt::format(R"({}{{"key":{},"old":{},"new":{}}})", list.empty() ? "" : ",", json_string(key), old_value,
                        new_value);
    lines += fmt::format("{}: {} -> {}\n", key, old_value, new_value);
  }
  if (context.options.is_json) {
    std::printf("{\"changed\":[%s]}\n", list.c_str());
  } else if (!context.options.is_quiet) {
    std::fputs(lines.c_str(), stdout);
  }
  return Status::ok();
}

Status show_cluster(Context& context) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::NodeMap map, c->node_map());
  const std::vector<NodeStorage> nodes = storage_of(*c, map);
  if (context.options.is_json) {
    std::string list;
    for (const auto& s : nodes) {
      std::string mountpaths;
      uint64_t capacity = 0, available = 0;
      for (const auto& m : s.mountpaths) {
        mountpaths += (mountpaths.empty() ? "" : ",") + mountpath_output_json(m);
        capacity += m.capacity_bytes;
        available += m.available_bytes;
      }
      list += fmt::format(
          R"({}{{"id":{},"role":{},"url":{},"state":{},"mode":{},"is_primary":{},"capacity":{},"available":{},)"
          R"("mountpaths":[{}]{}}})",
          list.empty() ? "" : ",", json_string(s.node.id), json_string(s.node.role),
          json_string(s.node.url), json_string(s.node.state), json_string(s.node.mode),
          s.node.id == map.primary ? "true" : "false", capacity, available, mountpaths,
          s.error.empty() ? "" : ",\"error\":" + json_string(s.error));
    }
    std::printf(
        "{\"version\":%llu,\"primary\":%s,\"rebalance\":{\"job\":%s,\"phase\":%s},\"nodes\":[%s]}"
        "\n",
        static_cast<unsigned long long>(map.version), json_string(map.primary).c_str(),
        json_string(map.rebalance_job()).c_str(), json_string(map.rebalance_phase).c_str(),
        list.c_str());
    return Status::ok();
  }
  std::printf("cluster map version %llu, primary %s", static_cast<unsigned long long>(map.version),
              map.primary.c_str());
  if (!map.rebalance_job().empty())
    std::printf(", last rebalance %s (%s)", map.rebalance_job().c_str(),
                map.rebalance_phase.c_str());
  std::printf("\n\n");
  Table table(
      {"NODE", "ROLE", "STATE", "MODE", "URL", "MOUNTPATHS", "USED", "CAPACITY", "OBJECTS"});
  for (const auto& s : nodes) {
    const std::string id = s.node.id + (s.node.id == map.primary ? " *" : "");
    if (!stores_objects(s.node)) {
      table.add({id, s.node.role, s.node.state, s.node.mode, s.node.url, "-", "-", "-", "-"});
      continue;
    }
    if (!s.error.empty()) {
      table.add({id, s.node.role, s.node.state, s.node.mode, s.node.url, "?", "?", "?", "?"});
      continue;
    }
    uint64_t capacity = 0, available = 0, objects = 0;
    for (const auto& m : s.mountpaths) {
      capacity += m.capacity_bytes;
      available += m.available_bytes;
      objects += m.objects;
    }
    table.add({id, s.node.role, s.node.state, s.node.mode, s.node.url,
               std::to_string(s.mountpaths.size()), used_percent(capacity, available),
               human_bytes(capacity), std::to_string(objects)});
  }
  table.print();
  std::printf("(* primary)\n\n");
  Table mountpaths(
      {"NODE", "MOUNTPATH", "PATH", "STATE", "USED", "AVAILABLE", "CAPACITY", "OBJECTS"});
  for (const auto& s : nodes) {
    for (const auto& m : s.mountpaths) {
      mountpaths.add(
          {s.node.id, m.id, m.path, m.failure.empty() ? m.state : m.state + " (" + m.failure + ")",
           used_percent(m.capacity_bytes, m.available_bytes), human_bytes(m.available_bytes),
           human_bytes(m.capacity_bytes), std::to_string(m.objects)});
    }
    if (!s.error.empty())
      mountpaths.add({s.node.id, "?", "(no answer: " + s.error + ")", "", "", "", "", ""});
  }
  if (mountpaths.rows() > 0) mountpaths.print();
  return Status::ok();
}

Result<client::NodeEntry> find_node(client::Client& c, const std::string& id) {
  ASSIGN_OR_RETURN(const client::NodeMap map, c.node_map());
  const client::NodeEntry* node = map.find(id);
  if (node == nullptr) {
    std::string ids;
    for (const auto& n : map.nodes) ids += (ids.empty() ? "" : ", ") + n.id;
    return Status::not_found("no node '{}' in the cluster map (nodes: {})", id, ids);
  }
  return *node;
}

enum class MembershipAction { kStartMaintenance, kStopMaintenance, kDecommission };

struct NodeOptions {
  std::string node;
  bool is_waiting = false;
};

Status change_membership(Context& context, const NodeOptions& o, MembershipAction action) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::NodeEntry node, find_node(*c, o.node));
  Result<client::MembershipChange> change = Status::unknown("no action");
  std::string done;
  switch (action) {
    case MembershipAction::kStartMaintenance:
      change = c->set_maintenance(node.id, /*on=*/true);
      done = "in maintenance";
      break;
    case MembershipAction::kStopMaintenance:
      change = c->set_maintenance(node.id, /*on=*/false);
      done = "out of maintenance";
      break;
    case MembershipAction::kDecommission:
      change = c->decommission(node.id);
      done = "decommissioning";
      break;
  }
  if (!change) return change.error();
  if (context.options.is_json && !o.is_waiting) {
    std::printf(
        "{\"node\":%s,\"node_map_version\":%llu,\"rebalance\":%s,\"rebalance_phase\":%s}\n",
        json_string(node.id).c_str(), static_cast<unsigned long long>(change->node_map_version),
        json_string(change->rebalance_job).c_str(), json_string(change->rebalance_phase).c_str());
  } else if (!context.options.is_json) {
    std::printf("node %s is %s (cluster map version %llu)", node.id.c_str(), done.c_str(),
                static_cast<unsigned long long>(change->node_map_version));
    if (!change->rebalance_job.empty())
      std::printf("; rebalance %s moves the objects", change->rebalance_job.c_str());
    std::printf("\n");
  }
  if (o.is_waiting && !change->rebalance_job.empty())
    RETURN_IF_ERROR(wait_for_job(context, *c, change->rebalance_job));
  if (o.is_waiting && action == MembershipAction::kDecommission) {
    // The primary removes the node once its rebalance is done: wait for that too, so the
    // node is gone when this returns.
    for (int i = 0;; ++i) {
      ASSIGN_OR_RETURN(const client::NodeMap map, c->node_map());
      const bool is_gone = std::none_of(map.nodes.begin(), map.nodes.end(),
                                        [&](const client::NodeEntry& n) { return n.id == node.id; });
      if (is_gone) break;
      if (i == 600) return Status::deadline_exceeded("node {} is still in the cluster map 60 s after its rebalance", node.id);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!context.options.is_json && !context.options.is_quiet) std::printf("node %s left the cluster\n", node.id.c_str());
  }
  return Status::ok();
}

struct MountpathOptions {
  std::string node;
  std::string mountpath;
};

Status list_mountpaths(Context& context, const std::string& node_id) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::NodeMap map, c->node_map());
  if (!node_id.empty()) RETURN_IF_ERROR(find_node(*c, node_id).status());
  client::NodeMap chosen = map;
  std::erase_if(chosen.nodes, [&](const client::NodeEntry& n) {
    return !stores_objects(n) || (!node_id.empty() && n.id != node_id);
  });
  const auto nodes = storage_of(*c, chosen);
  if (context.options.is_json) {
    std::string list;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const NodeStorage& s = nodes[i];
      const client::MountpathWork& w = s.work;
      std::string mountpaths;
      for (const auto& m : s.mountpaths)
        mountpaths += (mountpaths.empty() ? "" : ",") + mountpath_output_json(m);
      std::string work;
      if (!w.state.empty()) {
        work = fmt::format(R"(,"resilver":{{"state":{},"reason":{},"detach":{},"error":{},"objects_moved":{},"bytes_moved":{}}})",
                           json_string(w.state), json_string(w.reason), json_string(w.detach_id), json_string(w.error),
                           w.objects_moved, w.bytes_moved);
      }
      list += fmt::format(R"({}{{"node":{},"mountpaths":[{}]{}{}}})", list.empty() ? "" : ",",
                          json_string(s.node.id), mountpaths, work,
                          s.error.empty() ? "" : ",\"error\":" + json_string(s.error));
    }
    std::printf("{\"nodes\":[%s]}\n", list.c_str());
    return Status::ok();
  }
  Table table({"NODE", "MOUNTPATH", "PATH", "STATE", "USED", "AVAILABLE", "CAPACITY", "OBJECTS"});
  for (const auto& s : nodes) {
    for (const auto& m : s.mountpaths) {
      table.add({s.node.id, m.id, m.path,
                 m.failure.empty() ? m.state : m.state + " (" + m.failure + ")",
                 used_percent(m.capacity_bytes, m.available_bytes), human_bytes(m.available_bytes),
                 human_bytes(m.capacity_bytes), std::to_string(m.objects)});
    }
    if (!s.error.empty())
      table.add({s.node.id, "?", "(no answer: " + s.error + ")", "", "", "", "", ""});
  }
  table.print();
  // A resilver or detach that runs, or the last one when it failed.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const client::MountpathWork& w = nodes[i].work;
    if (w.state == "running") std::printf("%s: %s: running\n", nodes[i].node.id.c_str(), w.reason.c_str());
    if (w.state == "failed") {
      std::printf("%s: %s: failed: %s\n", nodes[i].node.id.c_str(), w.reason.c_str(), w.error.c_str());
    }
  }
  return Status::ok();
}

// The target named by `node_id`; kInvalidArgument when it stores no objects.
Result<client::NodeEntry> find_target(client::Client& c, const std::string& node_id) {
  ASSIGN_OR_RETURN(const client::NodeEntry node, find_node(c, node_id));
  if (!stores_objects(node))
    return Status::invalid_argument("node {} is a {}, which has no mountpaths", node.id, node.role);
  return node;
}

// The mountpath of `node` named by its id or its path.
Result<client::MountpathEntry> find_mountpath(client::Client& c, const client::NodeEntry& node,
                                              const std::string& id_or_path) {
  ASSIGN_OR_RETURN(const auto mountpaths, c.mountpaths(node.url));
  std::string known;
  for (const auto& m : mountpaths) {
    if (m.id == id_or_path || m.path == id_or_path) return m;
    known += (known.empty() ? "" : ", ") + m.id + " (" + m.path + ")";
  }
  return Status::not_found("node {} has no mountpath '{}' (it has: {})", node.id, id_or_path, known);
}

Status set_mountpath(Context& context, const MountpathOptions& o, bool is_enabling) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::NodeEntry node, find_target(*c, o.node));
  ASSIGN_OR_RETURN(const client::MountpathEntry found, find_mountpath(*c, node, o.mountpath));
  const std::string& id = found.id;
  ASSIGN_OR_RETURN(const client::MountpathEntry changed, is_enabling
                                                             ? c->enable_mountpath(node.url, id)
                                                             : c->disable_mountpath(node.url, id));
  if (context.options.is_json) {
    std::printf("{\"node\":%s,\"mountpath\":%s,\"state\":%s}\n", json_string(node.id).c_str(),
                json_string(changed.id).c_str(), json_string(changed.state).c_str());
  } else {
    std::printf("mountpath %s of node %s is %s (the target resilvers its objects)\n",
                changed.id.c_str(), node.id.c_str(), changed.state.c_str());
  }
  return Status::ok();
}

Status attach_mountpath(Context& context, const MountpathOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::NodeEntry node, find_target(*c, o.node));
  ASSIGN_OR_RETURN(const client::MountpathEntry m, c->attach_mountpath(node.url, o.mountpath));
  if (context.options.is_json) {
    std::printf("{\"node\":%s,\"mountpath\":%s,\"path\":%s,\"state\":%s}\n", json_string(node.id).c_str(),
                json_string(m.id).c_str(), json_string(m.path).c_str(), json_string(m.state).c_str());
  } else {
    std::printf("mountpath %s (%s) attached to node %s; the target resilvers its share of the objects onto it\n",
                m.id.c_str(), m.path.c_str(), node.id.c_str());
  }
  return Status::ok();
}

struct DetachOptions : MountpathOptions {
  bool is_waiting = false;
};

Status detach_mountpath(Context& context, const DetachOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::NodeEntry node, find_target(*c, o.node));
  ASSIGN_OR_RETURN(const client::MountpathEntry m, find_mountpath(*c, node, o.mountpath));
  ASSIGN_OR_RETURN(const client::MountpathWork before, c->mountpath_work(node.url));
  RETURN_IF_ERROR(c->detach_mountpath(node.url, m.id));
  if (!o.is_waiting) {
    if (context.options.is_json) {
      std::printf("{\"node\":%s,\"mountpath\":%s,\"path\":%s,\"state\":\"detaching\"}\n",
                  json_string(node.id).c_str(), json_string(m.id).c_str(), json_string(m.path).c_str());
    } else {
      std::printf("mountpath %s (%s) of node %s is being detached; 'silo mountpath ls %s' shows when it is gone\n",
                  m.id.c_str(), m.path.c_str(), node.id.c_str(), node.id.c_str());
    }
    return Status::ok();
  }
  if (!context.options.is_json && !context.options.is_quiet) {
    std::printf("detaching mountpath %s (%s) of node %s: moving its objects to the other mountpaths...\n",
                m.id.c_str(), m.path.c_str(), node.id.c_str());
    std::fflush(stdout);
  }
  for (;;) {
    ASSIGN_OR_RETURN(const client::MountpathWork work, c->mountpath_work(node.url));
    const bool is_ours = work.detach_id == m.id && work.started_unix_nanos != before.started_unix_nanos;
    if (is_ours && work.state != "running") {
      if (work.state == "failed") {
        return Status::failed_precondition("detach of mountpath {} ({}) of node {} failed: {}", m.id, m.path, node.id,
                                           work.error);
      }
      if (context.options.is_json) {
        std::printf("{\"node\":%s,\"mountpath\":%s,\"path\":%s,\"state\":\"detached\",\"objects_moved\":%llu,"
                    "\"bytes_moved\":%llu}\n",
                    json_string(node.id).c_str(), json_string(m.id).c_str(), json_string(m.path).c_str(),
                    static_cast<unsigned long long>(work.objects_moved),
                    static_cast<unsigned long long>(work.bytes_moved));
      } else {
        std::printf("mountpath %s (%s) detached from node %s: %llu objects moved (%s); its drive can be unmounted\n",
                    m.id.c_str(), m.path.c_str(), node.id.c_str(), static_cast<unsigned long long>(work.objects_moved),
                    human_bytes(work.bytes_moved).c_str());
      }
      return Status::ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

}  // namespace

void add_cluster_commands(CLI::App& app, Context& context) {
  CLI::App* cluster =
      app.add_subcommand("cluster", "Show the cluster: nodes, roles, states, primary, capacity");
  cluster->require_subcommand(1);
  CLI::App* show_cmd =
      add_command(*cluster, "show",
                  "Nodes with role, state, mode and the primary; capacity per node and mountpath",
                  "silo cluster show --json");
  on_run(show_cmd, context, [&context] { return show_cluster(context); });

  CLI::App* node =
      app.add_subcommand("node", "Take nodes into and out of maintenance, or decommission them");
  node->require_subcommand(1);
  CLI::App* maintenance = node->add_subcommand("maintenance", "Start or stop a node's maintenance");
  maintenance->require_subcommand(1);
  const std::pair<const char*, MembershipAction> maintenance_actions[] = {
      {"start", MembershipAction::kStartMaintenance}, {"stop", MembershipAction::kStopMaintenance}};
  for (const auto& [name, action] : maintenance_actions) {
    auto o = std::make_shared<NodeOptions>();
    CLI::App* cmd = add_command(
        *maintenance, name,
        action == MembershipAction::kStartMaintenance
            ? "Put a node in maintenance: it stops owning objects, which rebalance moves"
            : "Take a node out of maintenance: it owns objects again",
        fmt::format("silo node maintenance {} t2 --wait", name));
    cmd->add_option("node", o->node, "Node id (see 'silo cluster show')")->required();
    cmd->add_flag("--wait", o->is_waiting, "Wait for the rebalance it starts");
    on_run(cmd, context,
           [&context, o, action = action] { return change_membership(context, *o, action); });
  }
  auto decommission = std::make_shared<NodeOptions>();
  CLI::App* decommission_cmd = add_command(
      *node, "decommission", "Move every object off a node and remove it from the cluster",
      "silo node decommission t3 --wait");
  decommission_cmd->add_option("node", decommission->node, "Node id")->required();
  decommission_cmd->add_flag("--wait", decommission->is_waiting,
                             "Wait for the rebalance it starts");
  on_run(decommission_cmd, context, [&context, decommission] {
    return change_membership(context, *decommission, MembershipAction::kDecommission);
  });

  CLI::App* mountpath =
      app.add_subcommand("mountpath", "List, attach, detach, enable and disable the mountpaths (disks) of targets");
  mountpath->require_subcommand(1);
  auto ls_node = std::make_shared<std::string>();
  CLI::App* ls_cmd =
      add_command(*mountpath, "ls", "List mountpaths with state, usage and object counts",
                  "silo mountpath ls t1");
  ls_cmd->add_option("node", *ls_node, "Target id (none: every target)");
  on_run(ls_cmd, context, [&context, ls_node] { return list_mountpaths(context, *ls_node); });
  for (const bool is_enabling : {true, false}) {
    auto o = std::make_shared<MountpathOptions>();
    const std::string name = is_enabling ? "enable" : "disable";
    CLI::App* cmd =
        add_command(*mountpath, name,
                    is_enabling ? "Put a mountpath back in service (the target resilvers onto it)"
                                : "Take a mountpath out of service (the target resilvers off it)",
                    "silo mountpath " + name + " t1 mp2");
    cmd->add_option("node", o->node, "Target id")->required();
    cmd->add_option("mountpath", o->mountpath, "Mountpath id or path (see 'silo mountpath ls')")
        ->required();
    on_run(cmd, context,
           [&context, o, is_enabling] { return set_mountpath(context, *o, is_enabling); });
  }
  auto attach = std::make_shared<MountpathOptions>();
  CLI::App* attach_cmd = add_command(
      *mountpath, "attach",
      "Add a directory (a drive) to a target as a mountpath while it runs; the target resilvers its share of "
      "the objects onto it, and opens it again after a restart",
      "silo mountpath attach t1 /data/disk3");
  attach_cmd->add_option("node", attach->node, "Target id")->required();
  attach_cmd->add_option("path", attach->mountpath, "Absolute directory on the target's machine")->required();
  on_run(attach_cmd, context, [&context, attach] { return attach_mountpath(context, *attach); });
  auto detach = std::make_shared<DetachOptions>();
  CLI::App* detach_cmd = add_command(
      *mountpath, "detach",
      "Take a mountpath out of a target for good: its objects move to the other mountpaths, then it is closed "
      "(its drive can be unmounted) and not opened again after a restart",
      "silo mountpath detach t1 /data/disk3 --wait");
  detach_cmd->add_option("node", detach->node, "Target id")->required();
  detach_cmd->add_option("mountpath", detach->mountpath, "Mountpath id or path (see 'silo mountpath ls')")->required();
  detach_cmd->add_flag("--wait", detach->is_waiting, "Wait until it is detached (its objects moved)");
  on_run(detach_cmd, context, [&context, detach] { return detach_mountpath(context, *detach); });

  CLI::App* config = app.add_subcommand(
      "config", "Show the configuration, or change cluster settings at run time (docs/configuration.md)");
  config->require_subcommand(1);
  auto only_overrides = std::make_shared<bool>(false);
  CLI::App* config_show = add_command(
      *config, "show",
      "Show the node's configuration as JSON: its node section and the cluster settings in effect (the config "
      "file's with the run-time overrides); secrets masked. --overrides: only what `config set` changed",
      "silo config show --overrides");
  config_show->add_flag("--overrides", *only_overrides, "Only the run-time overrides (what `config set` changed)");
  on_run(config_show, context, [&context, only_overrides] {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    ASSIGN_OR_RETURN(const std::string body, c->config(*only_overrides));
    std::printf("%s\n", body.c_str());
    return Status::ok();
  });
  auto pairs = std::make_shared<std::vector<std::string>>();
  CLI::App* config_set = add_command(
      *config, "set",
      "Change cluster settings on every node at run time, kept across restarts (KEY is dotted, with or without "
      "'cluster.'; VALUE is JSON when it parses as JSON, else a string). Only some keys may change at run time "
      "(docs/configuration.md); the others are read at start",
      "silo config set cache.high_wm=85 cache.low_wm=70 cluster.proxy_mode=redirect");
  config_set->add_option("pairs", *pairs, "KEY=VALUE pairs")->required();
  on_run(config_set, context, [&context, pairs] {
    std::vector<std::pair<std::string, std::string>> changes;
    for (const std::string& pair : *pairs) {
      const size_t eq = pair.find('=');
      if (eq == std::string::npos) {
        return Status::invalid_argument("'{}' is not KEY=VALUE (e.g. cache.high_wm=85)", pair);
      }
      const std::string value = pair.substr(eq + 1);
      changes.emplace_back(pair.substr(0, eq), wire::is_json(value) ? value : json_string(value));
    }
    return change_config(context, changes);
  });
  auto keys = std::make_shared<std::vector<std::string>>();
  CLI::App* config_reset = add_command(
      *config, "reset",
      "Undo `config set` for these keys: each takes the value of each node's config file again (a section, "
      "e.g. cache, resets every key in it)",
      "silo config reset cache.high_wm proxy_mode");
  config_reset->add_option("keys", *keys, "Dotted keys (or sections)")->required();
  on_run(config_reset, context, [&context, keys] {
    std::vector<std::pair<std::string, std::string>> changes;
    for (const std::string& key : *keys) changes.emplace_back(key, "null");
    return change_config(context, changes);
  });
}

}  // namespace silo::cli
