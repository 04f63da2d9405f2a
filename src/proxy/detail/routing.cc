#include "proxy/detail/routing.h"

#include <algorithm>
#include <cctype>

namespace silo::proxy::detail {

bool is_read(http::Method method) {
  return method == http::Method::kGet || method == http::Method::kHead;
}

std::vector<wire::NodeInfo> target_order(std::vector<wire::NodeInfo> holders, http::Method method,
                                         uint64_t turn) {
  if (!is_read(method) || holders.size() <= 1) return holders;
  const auto is_up = [](const wire::NodeInfo& n) { return n.state() != wire::NODE_STATE_DOWN; };
  // Stable: the down holders keep their rank order, so the owner is tried first of them.
  const auto first_down = std::stable_partition(holders.begin(), holders.end(), is_up);
  const auto up = static_cast<uint64_t>(first_down - holders.begin());
  if (up > 1)
    std::rotate(holders.begin(), holders.begin() + static_cast<std::ptrdiff_t>(turn % up),
                first_down);
  return holders;
}

bool answers_here(const std::vector<wire::NodeInfo>& order, std::string_view self, http::Method method) {
  if (order.empty()) return false;
  if (order.front().id() == self) return true;
  if (!is_read(method)) return false;
  return std::any_of(order.begin(), order.end(), [self](const wire::NodeInfo& n) {
    return n.id() == self && n.state() != wire::NODE_STATE_DOWN;
  });
}

AccessStep access_step(const Access& access, bool is_admin, bool is_primary) {
  if (!access.admins_only.empty() && !is_admin) return AccessStep::kDeny;
  if (access.runs_on == RunsOn::kPrimary && !is_primary) return AccessStep::kRelay;
  return AccessStep::kRun;
}

Status validate_access_key(std::string_view key) {
  const bool is_valid = key.size() >= 3 && key.size() <= 128 &&
                        std::all_of(key.begin(), key.end(), [](unsigned char c) {
                          return std::isalnum(c) || c == '-' || c == '_' || c == '.';
                        });
  if (!is_valid)
    return Status::invalid_argument("an access key is 3..128 letters, digits, '-', '_' or '.'");
  return Status::ok();
}

}  // namespace silo::proxy::detail
