#pragma once

// The proxy's pure routing decisions, apart from the coroutines that act on them so that
// they can be tested without a cluster: which targets an object request goes to, and who
// may call a native endpoint and where it runs.
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "http/message.h"
#include "wire/codec.h"

namespace silo::proxy::detail {

// The targets to send an object request to, in order, from the object's `holders` (its
// HRW ranking, owner first; docs/data-protection.md). Anything but a read goes to the
// owner, whatever its state: the owner alone writes, and a down owner answers 503. A read
// goes to the holders that are up, starting at the `turn`-th of them (the caller advances
// `turn` per read, so reads spread over the copies), then to those that are down.
std::vector<wire::NodeInfo> target_order(std::vector<wire::NodeInfo> holders, http::Method method,
                                         uint64_t turn);
// Whether the node `self` (with a target of its own) answers a request routed to `order`
// (target_order's) itself: when it is first, and for a read when it is any holder that
// is up (any holder may answer a read: relaying it to another over loopback only adds a
// hop; a GET of a 2+1 coded object reached through a holder's S3 port went two times in
// three to another holder).
bool answers_here(const std::vector<wire::NodeInfo>& order, std::string_view self, http::Method method);

bool is_read(http::Method method);

// Where a native endpoint runs.
enum class RunsOn {
  kThisProxy,  // reads of this node's maps, or steps that relay by themselves
  kPrimary,    // changes of cluster metadata: other proxies relay the request there
};

// Who may call a native endpoint, and where it runs.
struct Access {
  // Empty: every authenticated caller. Otherwise only admins, and this is what others are
  // told (403).
  std::string_view admins_only;
  RunsOn runs_on = RunsOn::kThisProxy;
};

enum class AccessStep { kDeny, kRelay, kRun };

// What a proxy does with a request for an endpoint of `access`. The caller is checked
// before any relay: a request the primary would refuse never leaves this proxy.
AccessStep access_step(const Access& access, bool is_admin, bool is_primary);

// An access key: 3..128 letters, digits, '-', '_' or '.'; kInvalidArgument otherwise.
Status validate_access_key(std::string_view key);

}  // namespace silo::proxy::detail
