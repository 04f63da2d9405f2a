// A target's mountpaths at run time: states, failure detection and resilver
// (docs/membership-and-rebalance.md "Resilver").
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/clock.h"
#include "base/log.h"
#include "cluster/reply.h"
#include "cluster/sleep.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace {

namespace asio = boost::asio;

constexpr const char* kMountpathSetFile = "mountpaths";

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

}  // namespace

struct Target::Resilver {
  std::string reason;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> running{true};
  int64_t started_unix_nanos = 0;
  int64_t finished_unix_nanos = 0;  // set once, after running turns false
  store::ResilverStats stats;       // read once running is false
  std::string error;
};

void Target::start_resilver(asio::any_io_executor executor, std::string reason) {
  auto resilver = std::make_shared<Resilver>();
  resilver->reason = std::move(reason);
  resilver->started_unix_nanos = Clock::real().unix_nanos();
  {
    std::lock_guard lock(resilver_mutex_);
    if (resilver_ && resilver_->running) resilver_->cancelled = true;  // the newer layout wins
    resilver_ = resilver;
  }
  asio::co_spawn(executor, run_resilver(resilver), asio::detached);
}

http::Awaitable<void> Target::run_resilver(std::shared_ptr<Resilver> resilver) {
  SILO_LOG_INFO("resilver starts: {}", resilver->reason);
  auto done = co_await store_.resilver([r = resilver.get(), this] { return r->cancelled.load() || is_stopping_.load(); });
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

http::Awaitable<void> Target::watch_mountpaths(std::chrono::milliseconds period) {
  const auto executor = co_await asio::this_coro::executor;
  // A mountpath added, removed or disabled since the last run: objects may sit on the
  // wrong one.
  const std::vector<store::MountpathInfo> now = store_.mountpaths();
  const std::string set_path = options_.state_dir + "/" + kMountpathSetFile;
  const std::string previous = read_text(set_path);
  const bool any_disabled = std::any_of(now.begin(), now.end(), [](const auto& m) {
    return m.state != store::MountpathState::kInService;
  });
  if (previous != mountpath_set(now) || any_disabled) {
    start_resilver(executor, previous.empty() ? "first start" : "the set of mountpaths changed");
    const Status saved = cluster::write_file_atomically(set_path, mountpath_set(now));
    if (!saved.is_ok()) SILO_LOG_WARN("remembering the mountpaths: {}", saved);
  }
  std::unique_ptr<asio::steady_timer> timer;
  while (!is_stopping_) {
    const std::vector<store::MountpathInfo> failed = co_await reader_.run([this] { return store_.check_mountpaths(); });
    for (const auto& m : failed) {
      SILO_LOG_ERROR("mountpath {} is out of service ({}); about {} objects on it are lost here (no other copy on "
                     "this target)", m.path, m.failure, m.objects);
    }
    co_await cluster::pause(timer, period);
  }
}

http::Awaitable<void> Target::handle_mountpaths(http::Exchange& exchange, std::string_view rest, bool is_admin) {
  const http::RequestHead& request = exchange.request();
  Status s;
  if (rest.empty() || rest == "/") {
    if (request.method != http::Method::kGet) {
      s = Status::invalid_argument("{} /v1/mountpaths is not supported (use GET)", request.method_text);
    } else {
      std::string body = R"({"mountpaths":[)";
      bool first = true;
      for (const auto& m : store_.mountpaths()) {
        if (!first) body += ",";
        first = false;
        body += fmt::format(
            R"({{"id":{},"path":{},"state":"{}","failure":{},"capacity":{},"available":{},"objects":{}}})",
            wire::json_string(m.id), wire::json_string(m.path), store::mountpath_state_name(m.state),
            wire::json_string(m.failure), m.capacity_bytes, m.available_bytes, m.objects);
      }
      body += "]";
      std::shared_ptr<Resilver> last;
      {
        std::lock_guard lock(resilver_mutex_);
        last = resilver_;
      }
      if (last) {
        const bool running = last->running;
        body += fmt::format(R"(,"resilver":{{"state":"{}","reason":{},"started":{},"finished":{})",
                            running ? "running" : (last->error.empty() ? "finished" : "failed"),
                            wire::json_string(last->reason), last->started_unix_nanos,
                            running ? 0 : last->finished_unix_nanos);
        if (!running) {
          body += fmt::format(R"(,"objects_scanned":{},"objects_moved":{},"bytes_moved":{},"stale_removed":{},"error":{})",
                              last->stats.objects_scanned, last->stats.objects_moved, last->stats.bytes_moved,
                              last->stats.stale_removed, wire::json_string(last->error));
        }
        body += "}";
      }
      body += "}";
      co_await cluster::send_json(exchange, 200, body);
      co_return;
    }
  } else if (!is_admin) {
    s = Status::permission_denied("only admin users may change mountpaths");
  } else if (request.method != http::Method::kPost) {
    s = Status::invalid_argument("use POST /v1/mountpaths/{{id}}/enable or /disable");
  } else {
    const std::string_view path = rest.substr(1);
    const size_t slash = path.find('/');
    const std::string_view id = path.substr(0, slash);
    const std::string_view action = slash == std::string_view::npos ? "" : path.substr(slash + 1);
    if (action != "enable" && action != "disable") {
      s = Status::not_found("no such endpoint /v1/mountpaths{} (use .../enable or .../disable)", rest);
    } else {
      const bool enable = action == "enable";
      auto changed = co_await reader_.run([this, id, enable] { return store_.set_mountpath_enabled(id, enable); });
      if (changed) {
        start_resilver(exchange.executor(), fmt::format("mountpath {} {}", changed->path, enable ? "enabled" : "disabled"));
        co_await cluster::send_json(
            exchange, 200,
            fmt::format(R"({{"id":{},"state":"{}"}})", wire::json_string(changed->id),
                        store::mountpath_state_name(changed->state)));
        co_return;
      }
      s = std::move(changed).error();
    }
  }
  co_await cluster::send_error(exchange, s);
}

}  // namespace silo::target
