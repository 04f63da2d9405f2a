// The mountpaths of a target: list, enable/disable, attach/detach, and the resilver or
// detach that runs (GET/POST/DELETE /v1/mountpaths on the target).
#include <fmt/format.h>

#include "base/text.h"
#include "client/client.h"
#include "client/json_reader.h"
#include "http/message.h"
#include "wire/json.h"

namespace silo::client {


namespace {

MountpathEntry mountpath_of(const JsonValue& m) {
  MountpathEntry entry;
  entry.id = m["id"].str();
  entry.path = m["path"].str();
  entry.state = m["state"].str();
  entry.failure = m["failure"].str();
  if (auto n = m["capacity"].to_u64()) entry.capacity_bytes = *n;
  if (auto n = m["available"].to_u64()) entry.available_bytes = *n;
  if (auto n = m["objects"].to_u64()) entry.objects = *n;
  return entry;
}

std::string node_base(std::string_view node_url) {
  while (!node_url.empty() && node_url.back() == '/') node_url.remove_suffix(1);
  return std::string(node_url);
}

}  // namespace

Result<MountpathList> Client::mountpath_list(std::string_view node_url) {
  const std::string target = node_base(node_url) + "/v1/mountpaths";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  ASSIGN_OR_RETURN(const JsonValue doc, parse_answer_object(r.body, "GET " + target));
  MountpathList list;
  for (const JsonValue& m : doc["mountpaths"].items()) {
    list.mountpaths.push_back(mountpath_of(m));
  }
  const JsonValue& w = doc["resilver"];
  MountpathWork& work = list.work;
  work.state = w["state"].str();
  work.reason = w["reason"].str();
  work.detach_id = w["detach"].str();
  work.error = w["error"].str();
  if (auto n = w["started"].to_u64()) work.started_unix_nanos = static_cast<int64_t>(*n);
  if (auto n = w["objects_moved"].to_u64()) work.objects_moved = *n;
  if (auto n = w["bytes_moved"].to_u64()) work.bytes_moved = *n;
  return list;
}

Result<std::vector<MountpathEntry>> Client::mountpaths(std::string_view node_url) {
  ASSIGN_OR_RETURN(MountpathList list, mountpath_list(node_url));
  return std::move(list.mountpaths);
}

Result<MountpathEntry> Client::mountpath_call(std::string_view node_url, std::string_view id,
                                              std::string_view action) {
  const std::string target =
      fmt::format("{}/v1/mountpaths/{}/{}", node_base(node_url), text::percent_encode(id), action);
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPost, target));
  RETURN_IF_ERROR(status_of(r, "POST " + target));
  ASSIGN_OR_RETURN(const JsonValue doc, parse_answer_object(r.body, "POST " + target));
  return mountpath_of(doc);
}

Result<MountpathEntry> Client::attach_mountpath(std::string_view node_url, std::string_view path) {
  const std::string target = node_base(node_url) + "/v1/mountpaths";
  ASSIGN_OR_RETURN(const Response r,
                   request(http::Method::kPost, target, fmt::format(R"({{"path":{}}})", wire::json_string(path))));
  RETURN_IF_ERROR(status_of(r, "POST " + target));
  ASSIGN_OR_RETURN(const JsonValue doc, parse_answer_object(r.body, "POST " + target));
  return mountpath_of(doc);
}

Status Client::detach_mountpath(std::string_view node_url, std::string_view id) {
  const std::string target = fmt::format("{}/v1/mountpaths/{}", node_base(node_url), text::percent_encode(id));
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kDelete, target));
  return status_of(r, "DELETE " + target);
}

Result<MountpathWork> Client::mountpath_work(std::string_view node_url) {
  ASSIGN_OR_RETURN(MountpathList list, mountpath_list(node_url));
  return std::move(list.work);
}

Result<MountpathEntry> Client::enable_mountpath(std::string_view node_url, std::string_view id) {
  return mountpath_call(node_url, id, "enable");
}

Result<MountpathEntry> Client::disable_mountpath(std::string_view node_url, std::string_view id) {
  return mountpath_call(node_url, id, "disable");
}

}  // namespace silo::client
