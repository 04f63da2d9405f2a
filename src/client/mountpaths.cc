// The mountpaths of a target: list, enable/disable, attach/detach, and the resilver or
// detach that runs (GET/POST/DELETE /v1/mountpaths on the target).
#include <fmt/format.h>

#include "base/text.h"
#include "client/client.h"
#include "client/detail/decode_answer.h"
#include "http/message.h"
#include "wire/json.h"

namespace silo::client {
namespace {

std::string node_base(std::string_view node_url) {
  while (!node_url.empty() && node_url.back() == '/') node_url.remove_suffix(1);
  return std::string(node_url);
}

}  // namespace

Result<MountpathList> Client::mountpath_list(std::string_view node_url) {
  const std::string target = node_base(node_url) + "/v1/mountpaths";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return detail::decode_answer(r, "GET " + target, wire::parse_mountpath_list_json);
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
  ASSIGN_OR_RETURN(wire::MountpathStateChange change,
                   detail::decode_answer(r, "POST " + target, wire::parse_mountpath_state_json));
  MountpathEntry entry;  // the answer names the mountpath and its new state only
  entry.id = std::move(change.id);
  entry.state = std::move(change.state);
  return entry;
}

Result<MountpathEntry> Client::attach_mountpath(std::string_view node_url, std::string_view path) {
  const std::string target = node_base(node_url) + "/v1/mountpaths";
  ASSIGN_OR_RETURN(const Response r,
                   request(http::Method::kPost, target, fmt::format(R"({{"path":{}}})", wire::json_string(path))));
  RETURN_IF_ERROR(status_of(r, "POST " + target));
  return detail::decode_answer(r, "POST " + target, wire::parse_mountpath_json);
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
