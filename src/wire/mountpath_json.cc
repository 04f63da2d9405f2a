#include "wire/mountpath_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "wire/detail/json_fields.h"
#include "wire/json.h"

namespace silo::wire {
namespace {

using nlohmann::json;

Result<MountpathEntry> mountpath_of(const detail::JsonFields& m) {
  MountpathEntry entry;
  ASSIGN_OR_RETURN(entry.id, m.string("id"));
  ASSIGN_OR_RETURN(entry.path, m.string("path"));
  ASSIGN_OR_RETURN(entry.state, m.string("state"));
  ASSIGN_OR_RETURN(entry.failure, m.string_or("failure", ""));
  ASSIGN_OR_RETURN(entry.capacity_bytes, m.u64_or("capacity", 0));
  ASSIGN_OR_RETURN(entry.available_bytes, m.u64_or("available", 0));
  ASSIGN_OR_RETURN(entry.objects, m.u64_or("objects", 0));
  return entry;
}

Result<MountpathWork> work_of(const detail::JsonFields& w) {
  MountpathWork work;
  ASSIGN_OR_RETURN(work.state, w.string("state"));
  ASSIGN_OR_RETURN(work.reason, w.string_or("reason", ""));
  ASSIGN_OR_RETURN(work.detach_id, w.string_or("detach", ""));
  ASSIGN_OR_RETURN(work.detach_path, w.string_or("detach_path", ""));
  ASSIGN_OR_RETURN(work.started_unix_nanos, w.i64_or("started", 0));
  ASSIGN_OR_RETURN(work.finished_unix_nanos, w.i64_or("finished", 0));
  ASSIGN_OR_RETURN(work.objects_scanned, w.u64_or("objects_scanned", 0));
  ASSIGN_OR_RETURN(work.objects_moved, w.u64_or("objects_moved", 0));
  ASSIGN_OR_RETURN(work.bytes_moved, w.u64_or("bytes_moved", 0));
  ASSIGN_OR_RETURN(work.stale_removed, w.u64_or("stale_removed", 0));
  ASSIGN_OR_RETURN(work.error, w.string_or("error", ""));
  return work;
}

}  // namespace

std::string mountpath_json(const MountpathEntry& m) {
  return fmt::format(R"({{"id":{},"path":{},"state":{},"failure":{},"capacity":{},"available":{},"objects":{}}})",
                     json_string(m.id), json_string(m.path), json_string(m.state), json_string(m.failure),
                     m.capacity_bytes, m.available_bytes, m.objects);
}

Result<MountpathEntry> parse_mountpath_json(std::string_view text) {
  constexpr std::string_view kDocument = "a mountpath";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  return mountpath_of(detail::JsonFields(doc, kDocument));
}

std::string mountpath_state_json(const MountpathStateChange& change) {
  return fmt::format(R"({{"id":{},"state":{}}})", json_string(change.id), json_string(change.state));
}

Result<MountpathStateChange> parse_mountpath_state_json(std::string_view text) {
  constexpr std::string_view kDocument = "a mountpath state change";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  MountpathStateChange change;
  ASSIGN_OR_RETURN(change.id, fields.string("id"));
  ASSIGN_OR_RETURN(change.state, fields.string("state"));
  return change;
}

std::string mountpath_list_json(const MountpathList& list) {
  std::string body = R"({"mountpaths":[)";
  for (const MountpathEntry& m : list.mountpaths) {
    if (body.back() != '[') body += ',';
    body += mountpath_json(m);
  }
  body += ']';
  const MountpathWork& w = list.work;
  if (!w.state.empty()) {
    body += fmt::format(R"(,"resilver":{{"state":{},"reason":{},"detach":{},"detach_path":{},"started":{},"finished":{})",
                        json_string(w.state), json_string(w.reason), json_string(w.detach_id),
                        json_string(w.detach_path), w.started_unix_nanos, w.finished_unix_nanos);
    if (w.state != "running") {
      body += fmt::format(R"(,"objects_scanned":{},"objects_moved":{},"bytes_moved":{},"stale_removed":{},"error":{})",
                          w.objects_scanned, w.objects_moved, w.bytes_moved, w.stale_removed, json_string(w.error));
    }
    body += '}';
  }
  body += '}';
  return body;
}

Result<MountpathList> parse_mountpath_list_json(std::string_view text) {
  constexpr std::string_view kDocument = "the mountpath list";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  MountpathList list;
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> mountpaths, fields.objects("mountpaths"));
  for (const detail::JsonFields& m : mountpaths) {
    ASSIGN_OR_RETURN(MountpathEntry entry, mountpath_of(m));
    list.mountpaths.push_back(std::move(entry));
  }
  ASSIGN_OR_RETURN(const std::optional<detail::JsonFields> work, fields.object_or_none("resilver"));
  if (work) {
    ASSIGN_OR_RETURN(list.work, work_of(*work));
  }
  return list;
}

}  // namespace silo::wire
