// A target's mountpaths at run time: states, failure detection and resilver
// (docs/membership-and-rebalance.md "Resilver").
#include "rebalance/mountpaths.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "base/clock.h"
#include "base/log.h"
#include "http/reply.h"
#include "async/sleep.h"
#include "cluster/cluster_maps.h"
#include "wire/json.h"

namespace silo::rebalance {
namespace {

namespace asio = boost::asio;

constexpr const char* kMountpathSetFile = "mountpaths";
constexpr const char* kMountpathChangesFile = "mountpath_changes";
constexpr size_t kMaxAttachBody = 64 * 1024;

// The ids of the mountpaths, sorted, one per line: what the last run used.
std::string mountpath_set(const std::vector<store::MountpathInfo>& mountpaths) {
  std::vector<std::string> ids;
  for (const auto& m : mountpaths) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (const auto& id : ids) out += id + "\n";
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// <state_dir>/mountpath_changes, one line per path: "attached <path>" or "detached <path>"
// (the last change of each path made at run time). Path -> attached.
std::map<std::string, bool> read_mountpath_changes(const std::string& state_dir) {
  std::map<std::string, bool> changes;
  std::istringstream in(read_text(state_dir + "/" + kMountpathChangesFile));
  std::string line;
  while (std::getline(in, line)) {
    for (const auto& [prefix, attached] : {std::pair{"attached ", true}, std::pair{"detached ", false}}) {
      if (line.starts_with(prefix)) changes[line.substr(std::string_view(prefix).size())] = attached;
    }
  }
  return changes;
}

wire::MountpathEntry mountpath_entry(const store::MountpathInfo& m) {
  return wire::MountpathEntry{m.id, m.path, std::string(store::mountpath_state_name(m.state)), m.failure,
                              m.capacity_bytes, m.available_bytes, m.objects};
}

std::string mountpath_json(const store::MountpathInfo& m) { return wire::mountpath_json(mountpath_entry(m)); }

}  // namespace

std::vector<std::string> mountpaths_to_open(const std::vector<std::string>& configured, const std::string& state_dir) {
  const std::map<std::string, bool> changes = read_mountpath_changes(state_dir);
  std::vector<std::string> paths;
  for (const std::string& path : configured) {
    const auto it = changes.find(without_trailing_slash(path));
    if (it != changes.end() && !it->second) {
      SILO_LOG_WARN("mountpath {} is in the config but was detached at run time: not used ('silo mountpath attach' "
                    "brings it back)", path);
      continue;
    }
    paths.push_back(path);
  }
  for (const auto& [changed, attached] : changes) {
    const std::string& path = changed;  // a lambda may not capture a structured binding in clang 14
    const bool is_listed = std::any_of(paths.begin(), paths.end(), [&](const std::string& p) {
      return without_trailing_slash(p) == path;
    });
    if (attached && !is_listed) paths.push_back(path);
  }
  return paths;
}

Status remember_mountpath_change(const std::string& state_dir, const std::string& path, bool attached) {
  std::map<std::string, bool> changes = read_mountpath_changes(state_dir);
  changes[without_trailing_slash(path)] = attached;
  std::string text;
  for (const auto& [p, a] : changes) text += fmt::format("{} {}\n", a ? "attached" : "detached", p);
  return cluster::write_file_atomically(state_dir + "/" + kMountpathChangesFile, text);
}

struct Mountpaths::Resilver {
  std::string reason;
  std::string detach_id;  // a detach of this mountpath, not a resilver
  std::string detach_path;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> running{true};
  int64_t started_unix_nanos = 0;
  int64_t finished_unix_nanos = 0;  // set once, after running turns false
  store::ResilverStats stats;       // read once running is false
  std::string error;
};

void Mountpaths::start_resilver(asio::any_io_executor executor, std::string reason, std::string detach_id) {
  auto resilver = std::make_shared<Resilver>();
  resilver->reason = std::move(reason);
  resilver->detach_id = std::move(detach_id);
  for (const auto& m : store_.mountpaths()) {
    if (m.id == resilver->detach_id) resilver->detach_path = m.path;
  }
  if (!resilver->detach_id.empty()) resilver->reason = fmt::format("detach of mountpath {}", resilver->detach_path);
  resilver->started_unix_nanos = Clock::real().unix_nanos();
  {
    MutexLock lock(mutex_);
    if (resilver_ && resilver_->running) resilver_->cancelled = true;  // the newer layout wins
    resilver_ = resilver;
  }
  asio::co_spawn(executor, run_resilver(resilver), asio::detached);
}

http::Awaitable<void> Mountpaths::run_resilver(std::shared_ptr<Resilver> resilver) {
  SILO_LOG_INFO("resilver starts: {}", resilver->reason);
  std::function<bool()> cancelled = [r = resilver.get(), this] { return r->cancelled.load() || is_stopping_.load(); };
  std::optional<Result<store::ResilverStats>> result;
  if (resilver->detach_id.empty()) {
    Result<store::ResilverStats> moved = co_await store_.resilver(std::move(cancelled));
    result.emplace(std::move(moved));
  } else {
    Result<store::ResilverStats> moved = co_await store_.detach_mountpath(resilver->detach_id, std::move(cancelled));
    if (moved) {
      // By reference: a string copied into a lambda beside co_await is freed twice (ADR 0003).
      const std::string& path = resilver->detach_path;
      const Status remembered = co_await disk_.run([this, &path] {
        return remember_mountpath_change(state_dir_, path, /*attached=*/false);
      });
      if (!remembered.is_ok()) {
        SILO_LOG_ERROR("mountpath {} is detached, but a restart will open it again: {}", resilver->detach_path,
                       remembered);
      }
      remember_mountpath_set();
    }
    result.emplace(std::move(moved));
  }
  const Result<store::ResilverStats>& done = *result;
  if (done) {
    resilver->stats = *done;
    SILO_LOG_INFO("resilver {}: {} objects scanned, {} moved ({} bytes), {} stale copies removed",
                  resilver->cancelled ? "preempted" : "finished", done->objects_scanned, done->objects_moved,
                  done->bytes_moved, done->stale_removed);
  } else {
    resilver->error = done.error().to_string();
    SILO_LOG_ERROR("resilver failed: {}", done.error());
  }
  resilver->finished_unix_nanos = Clock::real().unix_nanos();
  resilver->running = false;
}

http::Awaitable<void> Mountpaths::watch(std::chrono::milliseconds period) {
  const auto executor = co_await asio::this_coro::executor;
  // A mountpath added, removed or disabled since the last run: objects may sit on the
  // wrong one.
  const std::vector<store::MountpathInfo> now = store_.mountpaths();
  const std::string previous = read_text(state_dir_ + "/" + kMountpathSetFile);
  const bool any_disabled = std::any_of(now.begin(), now.end(), [](const auto& m) {
    return m.state != store::MountpathState::kInService;
  });
  if (previous != mountpath_set(now) || any_disabled) {
    start_resilver(executor, previous.empty() ? "first start" : "the set of mountpaths changed");
    remember_mountpath_set();
  }
  std::unique_ptr<asio::steady_timer> timer;
  while (!is_stopping_) {
    const std::vector<store::MountpathInfo> failed = co_await disk_.run([this] { return store_.check_mountpaths(); });
    for (const auto& m : failed) {
      SILO_LOG_ERROR("mountpath {} is out of service ({}); about {} objects on it are lost here (no other copy on "
                     "this target)", m.path, m.failure, m.objects);
    }
    co_await async::pause(timer, period);
  }
}

void Mountpaths::remember_mountpath_set() {
  const Status saved =
      cluster::write_file_atomically(state_dir_ + "/" + kMountpathSetFile, mountpath_set(store_.mountpaths()));
  if (!saved.is_ok()) SILO_LOG_WARN("remembering the mountpaths: {}", saved);
}

http::Awaitable<void> Mountpaths::attach(http::Exchange& exchange) {
  Result<store::MountpathInfo> attached = Status::internal("unset");
  Result<std::string> body = co_await http::read_all(exchange.body(), kMaxAttachBody);
  Result<std::string> requested = body ? wire::parse_string_field_json(
                                             *body, "path", R"("path": "/absolute/dir" of the mountpath to attach)")
                                       : Result<std::string>(body.error());
  if (requested) {
    attached = co_await store_.attach_mountpath(*requested);
  } else {
    attached = std::move(requested).error();
  }
  if (!attached) {
    co_await http::send_error(exchange, attached.error());
    co_return;
  }
  const std::string& path = attached->path;  // by reference beside co_await (ADR 0003)
  const Status remembered = co_await disk_.run([this, &path] {
    return remember_mountpath_change(state_dir_, path, /*attached=*/true);
  });
  if (!remembered.is_ok()) {
    SILO_LOG_ERROR("mountpath {} is attached, but a restart will not open it: {}", attached->path, remembered);
  }
  start_resilver(exchange.executor(), fmt::format("mountpath {} attached", attached->path));
  remember_mountpath_set();
  const std::string answer = mountpath_json(*attached);
  co_await http::send_json(exchange, 200, answer);
}

std::string Mountpaths::listing_json() {
  wire::MountpathList list;
  for (const auto& m : store_.mountpaths()) list.mountpaths.push_back(mountpath_entry(m));
  std::shared_ptr<Resilver> last;
  {
    MutexLock lock(mutex_);
    last = resilver_;
  }
  if (last) {
    const bool running = last->running;
    wire::MountpathWork& work = list.work;
    work.state = running ? "running" : (last->error.empty() ? "finished" : "failed");
    work.reason = last->reason;
    work.detach_id = last->detach_id;
    work.detach_path = last->detach_path;
    work.started_unix_nanos = last->started_unix_nanos;
    if (!running) {
      work.finished_unix_nanos = last->finished_unix_nanos;
      work.objects_scanned = last->stats.objects_scanned;
      work.objects_moved = last->stats.objects_moved;
      work.bytes_moved = last->stats.bytes_moved;
      work.stale_removed = last->stats.stale_removed;
      work.error = last->error;
    }
  }
  return wire::mountpath_list_json(list);
}

http::Awaitable<void> Mountpaths::handle(http::Exchange& exchange, std::string_view rest, bool is_admin) {
  const http::RequestHead& request = exchange.request();
  const bool is_root = rest.empty() || rest == "/";
  Status s;
  if (is_root && request.method == http::Method::kGet) {
    const std::string answer = listing_json();
    co_await http::send_json(exchange, 200, answer);
    co_return;
  }
  if (!is_admin) {
    s = Status::permission_denied("only admin users may change mountpaths");
  } else if (is_root && request.method == http::Method::kPost) {
    co_await attach(exchange);
    co_return;
  } else if (is_root) {
    s = Status::invalid_argument("{} /v1/mountpaths is not supported (use GET, or POST {{\"path\"}} to attach)",
                                 request.method_text);
  } else {
    const std::string_view path = rest.substr(1);
    const size_t slash = path.find('/');
    const std::string_view id = path.substr(0, slash);
    const std::string_view action = slash == std::string_view::npos ? "" : path.substr(slash + 1);
    if (request.method == http::Method::kDelete && action.empty()) {
      s = start_detach(exchange.executor(), std::string(id));
      if (s.is_ok()) {
        // Named, not a temporary beside co_await (docs/adr/0003).
        const std::string answer = wire::mountpath_state_json({std::string(id), "detaching"});
        co_await http::send_json(exchange, 202, answer);
        co_return;
      }
    } else if (request.method != http::Method::kPost) {
      s = Status::invalid_argument("use POST /v1/mountpaths/{{id}}/enable or /disable, or DELETE /v1/mountpaths/{{id}}");
    } else if (action != "enable" && action != "disable") {
      s = Status::not_found("no such endpoint /v1/mountpaths{} (use .../enable or .../disable)", rest);
    } else {
      const bool enable = action == "enable";
      auto changed = co_await disk_.run([this, id, enable] { return store_.set_mountpath_enabled(id, enable); });
      if (changed) {
        start_resilver(exchange.executor(), fmt::format("mountpath {} {}", changed->path, enable ? "enabled" : "disabled"));
        const std::string answer =
            wire::mountpath_state_json({changed->id, std::string(store::mountpath_state_name(changed->state))});
        co_await http::send_json(exchange, 200, answer);
        co_return;
      }
      s = std::move(changed).error();
    }
  }
  co_await http::send_error(exchange, s);
}

Status Mountpaths::start_detach(asio::any_io_executor executor, std::string id) {
  // What the store would refuse at once is refused here, before the 202; the rest (uploads
  // in progress, objects that do not move) shows in GET /v1/mountpaths when it ends.
  RETURN_IF_ERROR(store_.check_detach(id));
  {
    MutexLock lock(mutex_);
    if (resilver_ && resilver_->running && !resilver_->detach_id.empty()) {
      return Status::unavailable("mountpath {} is being detached; retry when that ends", resilver_->detach_path);
    }
  }
  start_resilver(std::move(executor), /*reason=*/"", std::move(id));
  return Status::ok();
}

}  // namespace silo::rebalance
