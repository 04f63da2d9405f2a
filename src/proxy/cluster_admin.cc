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
  wire::MembershipChange change;
  change.node_map_version = map.version();
  if (map.rebalance_id() != 0) change.rebalance_job = cluster::rebalance_job_id(map.rebalance_id());
  change.rebalance_phase = std::string(wire::phase_name(map.rebalance_phase()));
  return wire::membership_change_json(change);
}

}  // namespace

http::Awaitable<Status> Proxy::add_node(http::Exchange& exchange) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), 64 * 1024));
  CO_ASSIGN_OR_RETURN(std::string url, wire::parse_url_json(body));
  CO_ASSIGN_OR_RETURN(const wire::NodeMap changed, co_await primary_->add_node(std::move(url)));
  co_await http::send_json(exchange, 200, membership_json(changed));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::remove_node(http::Exchange& exchange, std::string id) {
  CO_ASSIGN_OR_RETURN(const wire::NodeMap changed, co_await primary_->remove_node(id));
  co_await http::send_json(exchange, 200, membership_json(changed));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::set_node_mode(http::Exchange& exchange, std::string id,
                                             wire::NodeMode mode) {
  CO_ASSIGN_OR_RETURN(const wire::NodeMap changed, co_await primary_->set_node_mode(id, mode));
  co_await http::send_json(exchange, 200, membership_json(changed));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::start_job(http::Exchange& exchange) {
  CO_ASSIGN_OR_RETURN(const std::string body,
                      co_await http::read_all(exchange.body(), kMaxJobRequestBody));
  CO_ASSIGN_OR_RETURN(const wire::JobRequest request, wire::parse_job_request_json(body));
  CO_ASSIGN_OR_RETURN(const wire::JobInfo job, co_await primary_->start_task(request, body));
  co_await http::send_json(exchange, 202, wire::job_json(job));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::list_jobs(http::Exchange& exchange) {
  const http::RequestHead& request = exchange.request();
  const std::string kind = request.query_param("kind").value_or("");
  const std::string state = request.query_param("state").value_or("");
  std::vector<wire::JobInfo> jobs;
  for (auto& job : primary_->jobs().list()) {
    if ((kind.empty() || job.kind() == kind) && (state.empty() || job.state() == state)) {
      jobs.push_back(std::move(job));
    }
  }
  co_await http::send_json(exchange, 200, wire::job_list_json(jobs));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::get_job(http::Exchange& exchange, std::string id) {
  const std::optional<wire::JobInfo> job = primary_->jobs().find(id);
  if (!job) co_return Status::not_found("no job {}", id);
  co_await http::send_json(exchange, 200, wire::job_json(*job));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::wait_job(http::Exchange& exchange, std::string id) {
  const std::string text =
      exchange.request().query_param("timeout_s").value_or(std::to_string(kDefaultWaitSeconds));
  int seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
      seconds > kMaxWaitSeconds) {
    co_return Status::invalid_argument("timeout_s must be 0..{}", kMaxWaitSeconds);
  }
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::optional<wire::JobInfo> job = primary_->jobs().find(id);
  while (job && job->state() == "running" && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(kWaitPoll);
    boost::system::error_code ignored;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
    job = primary_->jobs().find(id);
  }
  if (!job) co_return Status::not_found("no job {}", id);
  co_await http::send_json(exchange, 200, wire::job_json(*job));
  co_return Status::ok();
}

http::Awaitable<Status> Proxy::abort_job(http::Exchange& exchange, std::string id) {
  CO_RETURN_IF_ERROR(co_await primary_->abort_job(id));
  const std::optional<wire::JobInfo> job = primary_->jobs().find(id);
  if (!job) co_return Status::not_found("no job {}", id);  // aborted, then pruned at once
  co_await http::send_json(exchange, 200, wire::job_json(*job));
  co_return Status::ok();
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
