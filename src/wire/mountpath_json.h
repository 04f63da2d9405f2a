#pragma once

// The mountpath documents of a target's native API (GET /v1/mountpaths, the answers of
// POST /v1/mountpaths, of .../{id}/enable|disable and DELETE .../{id}): one codec each, the encoder for the target
// (rebalance/mountpaths.cc writes the same bytes by hand today), the decoder for the client.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

// One mountpath of a target.
struct MountpathEntry {
  std::string id;
  std::string path;
  std::string state;    // "enabled" | "disabled" | "failed" ...
  std::string failure;  // why it failed, or ""
  uint64_t capacity_bytes = 0;
  uint64_t available_bytes = 0;
  uint64_t objects = 0;
  bool operator==(const MountpathEntry&) const = default;
};

// The last resilver or detach of a target's mountpaths ("resilver" in GET /v1/mountpaths).
struct MountpathWork {
  std::string state;      // "running" | "finished" | "failed"; "" when there was none
  std::string reason;     // "mountpath /x attached", ...
  std::string detach_id;  // the mountpath a detach takes out, "" for a resilver
  std::string detach_path;
  int64_t started_unix_nanos = 0;
  int64_t finished_unix_nanos = 0;  // 0 while running
  // The figures below are sent once the work is over (0 while running).
  uint64_t objects_scanned = 0;
  uint64_t objects_moved = 0;
  uint64_t bytes_moved = 0;
  uint64_t stale_removed = 0;
  std::string error;
  bool operator==(const MountpathWork&) const = default;
};

// GET /v1/mountpaths of a target, whole.
struct MountpathList {
  std::vector<MountpathEntry> mountpaths;
  MountpathWork work;  // the current or last resilver or detach
  bool operator==(const MountpathList&) const = default;
};

// {"id", "path", "state", "failure", "capacity", "available", "objects"}
std::string mountpath_json(const MountpathEntry& mountpath);
Result<MountpathEntry> parse_mountpath_json(std::string_view text);
// What POST /v1/mountpaths/{id}/enable|disable answers (and DELETE, with "detaching").
struct MountpathStateChange {
  std::string id;
  std::string state;  // the mountpath's new state: "enabled" | "disabled" | "detaching"
  bool operator==(const MountpathStateChange&) const = default;
};

// {"id", "state"}
std::string mountpath_state_json(const MountpathStateChange& change);
Result<MountpathStateChange> parse_mountpath_state_json(std::string_view text);
// {"mountpaths": [mountpath_json...], "resilver": {"state", "reason", "detach",
//  "detach_path", "started", "finished"[, "objects_scanned", "objects_moved",
//  "bytes_moved", "stale_removed", "error"]}}: "resilver" only when one ran, its figures
// only once it is over.
std::string mountpath_list_json(const MountpathList& list);
Result<MountpathList> parse_mountpath_list_json(std::string_view text);

}  // namespace silo::wire
