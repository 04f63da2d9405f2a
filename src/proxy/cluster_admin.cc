// Membership changes, the job registry (docs/membership-and-rebalance.md) and the run-time
// config (docs/configuration.md) on the native API. Changes run on the primary; other proxies relay to it (after checking the caller here:
// a relayed request carries the cluster's signature, which the primary trusts).
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <charconv>

#include "base/log.h"
#include "http/reply.h"
#include "proxy/proxy.h"
#include "wire/json.h"

namespace silo::proxy {
namespace {

constexpr int kDefaultWaitSeconds = 30;
constexpr int kMaxWaitSeconds = 300;
constexpr std::chrono::milliseconds kWaitPoll{100};
constexpr size_t kMaxJobRequestBody = 64 * 1024;
constexpr size_t kMaxConfigBody = 64 * 1024;

std::string membership_json(const wire::NodeMap& map) {
  std::string rebalance;
  if (map.rebalance_id() != 0) rebalance = cluster::rebalance_job_id(map.rebalance_id());
  return fmt::format(R"({{"node_map_version":{},"rebalance":"{}","rebalance_phase":"{}"}})", map.version(),
                     rebalance, wire::phase_name(map.rebalance_phase()));
}

// "/{id}[/{action}]" -> {id, action}; "" or "/" -> {"", ""}.
std::pair<std::string, std::string> split_id_action(std::string_view rest) {
  if (rest.size() <= 1) return {};
  std::string_view id = rest.substr(1);
  std::string_view action;
  if (const size_t slash = id.find('/'); slash != std::string_view::npos) {
    action = id.substr(slash + 1);
    id = id.substr(0, slash);
  }
  return {std::string(id), std::string(action)};
}

}  // namespace

http::Awaitable<void> Proxy::handle_nodes(http::Exchange& exchange, std::string rest, bool is_admin) {
  const http::RequestHead& request = exchange.request();
  Status s;
  // rest: "", "/{id}", "/{id}/maintenance" or "/{id}/decommission"
  const std::pair<std::string, std::string> parts = split_id_action(rest);
  const std::string& id = parts.first;
  const std::string& action = parts.second;
  if (!is_admin) {
    s = Status::permission_denied("only admin users may change the cluster's membership");
  } else if (id.empty() && request.method != http::Method::kPost) {
    s = Status::not_found("no such endpoint {} /v1/cluster/nodes{} (GET /v1/cluster/map lists the nodes)",
                          request.method_text, rest);
  } else if (!is_primary()) {
    s = co_await relay_to_primary(exchange);
    if (s.is_ok()) co_return;
  } else {
    Result<wire::NodeMap> changed = Status::not_found("no such endpoint: {} /v1/cluster/nodes{}", request.method_text, rest);
    if (id.empty()) {  // POST /v1/cluster/nodes {"url": "http://host:port"}
      auto body = co_await http::read_all(exchange.body(), 64 * 1024);
      auto url = body ? wire::parse_url_json(*body) : Result<std::string>(body.error());
      if (url) {
        changed = co_await primary_->add_node(std::move(*url));
      } else {
        changed = std::move(url).error();
      }
    } else if (action == "maintenance" && request.method == http::Method::kPost) {
      changed = co_await primary_->set_node_mode(id, wire::NODE_MODE_MAINTENANCE);
    } else if (action == "maintenance" && request.method == http::Method::kDelete) {
      changed = co_await primary_->set_node_mode(id, wire::NODE_MODE_NORMAL);
    } else if (action == "decommission" && request.method == http::Method::kPost) {
      changed = co_await primary_->set_node_mode(id, wire::NODE_MODE_DECOMMISSIONING);
    } else if (action.empty() && request.method == http::Method::kDelete) {
      changed = co_await primary_->remove_node(id);
    }
    if (changed) {
      co_await http::send_json(exchange, 200, membership_json(*changed));
      co_return;
    }
    s = std::move(changed).error();
  }
  errors_.add();
  co_await http::send_error(exchange, s);
}

http::Awaitable<void> Proxy::handle_jobs(http::Exchange& exchange, std::string rest, bool is_admin) {
  const http::RequestHead& request = exchange.request();
  Status s;
  const std::pair<std::string, std::string> parts = split_id_action(rest);
  const std::string& id = parts.first;
  const std::string& action = parts.second;
  const bool is_abort = action == "abort";
  const bool is_start = id.empty() && request.method == http::Method::kPost;
  if ((is_abort || is_start) && !is_admin) {
    s = Status::permission_denied("only admin users may start or abort jobs");
  } else if (!is_primary()) {
    s = co_await relay_to_primary(exchange);
    if (s.is_ok()) co_return;
  } else if (is_start) {
    auto body = co_await http::read_all(exchange.body(), kMaxJobRequestBody);
    auto parsed = body ? wire::parse_job_request_json(*body) : Result<wire::JobRequest>(body.error());
    if (!parsed) {
      s = std::move(parsed).error();
    } else {
      auto job = co_await primary_->start_task(*parsed, *body);
      if (job) {
        co_await http::send_json(exchange, 202, wire::job_json(*job));
        co_return;
      }
      s = std::move(job).error();
    }
  } else if (id.empty()) {
    if (request.method != http::Method::kGet) {
      s = Status::invalid_argument("{} /v1/jobs is not supported (use GET, or POST to start one)", request.method_text);
    } else {
      const std::string kind = request.query_param("kind").value_or("");
      const std::string state = request.query_param("state").value_or("");
      std::vector<wire::JobInfo> jobs;
      for (auto& job : primary_->jobs().list()) {
        if ((kind.empty() || job.kind() == kind) && (state.empty() || job.state() == state)) {
          jobs.push_back(std::move(job));
        }
      }
      co_await http::send_json(exchange, 200, wire::job_list_json(jobs));
      co_return;
    }
  } else if (action.empty() && request.method == http::Method::kGet) {
    if (auto job = primary_->jobs().find(id)) {
      co_await http::send_json(exchange, 200, wire::job_json(*job));
      co_return;
    }
    s = Status::not_found("no job {}", id);
  } else if (action == "wait" && request.method == http::Method::kGet) {
    const std::string text = request.query_param("timeout_s").value_or(std::to_string(kDefaultWaitSeconds));
    int seconds = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 || seconds > kMaxWaitSeconds) {
      s = Status::invalid_argument("timeout_s must be 0..{}", kMaxWaitSeconds);
    } else {
      boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
      std::optional<wire::JobInfo> job = primary_->jobs().find(id);
      while (job && job->state() == "running" && std::chrono::steady_clock::now() < deadline) {
        timer.expires_after(kWaitPoll);
        boost::system::error_code ignored;
        co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
        job = primary_->jobs().find(id);
      }
      if (job) {
        co_await http::send_json(exchange, 200, wire::job_json(*job));
        co_return;
      }
      s = Status::not_found("no job {}", id);
    }
  } else if (is_abort && request.method == http::Method::kPost) {
    s = co_await primary_->abort_job(id);
    if (s.is_ok()) {
      if (auto job = primary_->jobs().find(id)) {
        co_await http::send_json(exchange, 200, wire::job_json(*job));
        co_return;
      }
    }
  } else {
    s = Status::not_found("no such endpoint: {} /v1/jobs{}", request.method_text, rest);
  }
  errors_.add();
  co_await http::send_error(exchange, s);
}

http::Awaitable<void> Proxy::handle_config(http::Exchange& exchange, const config::NodeConfig& node, bool is_admin) {
  const http::RequestHead& request = exchange.request();
  Status s;
  if (!is_admin) {
    s = Status::permission_denied("only admin users may read or change the configuration");
  } else if (request.method == http::Method::kGet) {
    // Named, not temporaries inside co_await (docs/adr/0003).
    const bool only_overrides = request.query.find("overrides=true") != std::string::npos;
    const std::string body = only_overrides ? config::mask_overrides(options_.config->overrides())
                                            : config::to_json(config::Config{node, *live_config()});
    co_await http::send_json(exchange, 200, body);
    co_return;
  } else if (request.method != http::Method::kPut) {
    s = Status::invalid_argument("{} /v1/config is not supported (use GET or PUT)", request.method_text);
  } else if (!is_primary()) {
    s = co_await relay_to_primary(exchange);
    if (s.is_ok()) co_return;
  } else {
    auto body = co_await http::read_all(exchange.body(), kMaxConfigBody);
    if (!body) {
      s = std::move(body).error();
    } else {
      auto effective = co_await primary_->set_config(std::move(*body));
      if (effective) {
        const std::string answer = config::to_json(config::Config{node, *effective});
        co_await http::send_json(exchange, 200, answer);
        co_return;
      }
      s = std::move(effective).error();
    }
  }
  errors_.add();
  co_await http::send_error(exchange, s);
}

}  // namespace silo::proxy
