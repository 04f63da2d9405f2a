// The primary's side of rebalance (docs/membership-and-rebalance.md): a job per change of
// object owners, polled progress from every target, phase COPY -> CLEANUP -> DONE once all
// targets finished the phase, and the retirement of decommissioned nodes after it.
#include <algorithm>

#include "base/log.h"
#include "async/gather.h"
#include "cluster/primary.h"
#include "async/sleep.h"

namespace silo::cluster {
namespace {

constexpr std::chrono::milliseconds kRebalancePoll{300};
constexpr size_t kMaxProgressBody = 64 * 1024;

}  // namespace

std::string rebalance_job_id(uint64_t rebalance_id) { return fmt::format("rebalance-{}", rebalance_id); }

Status Primary::note_rebalance(const wire::NodeMap& map) {
  if (map.rebalance_id() == 0) return Status::ok();
  const std::string id = rebalance_job_id(map.rebalance_id());
  const int64_t now = clock_.unix_nanos();
  for (const auto& job : jobs_.list()) {
    if (job.kind() != "rebalance" || job.state() != "running" || job.id() == id) continue;
    RETURN_IF_ERROR(jobs_.finish(job.id(), "preempted", fmt::format("node map v{} changed the owners again ({})",
                                                                    map.rebalance_id(), id), now));
  }
  const auto existing = jobs_.find(id);
  if (map.rebalance_phase() == wire::REBALANCE_PHASE_DONE) {
    if (existing && existing->state() == "running") return jobs_.finish(id, "finished", "", now);
    return Status::ok();
  }
  if (existing && existing->state() == "running") {
    wire::JobInfo job = *existing;
    job.set_phase(std::string(wire::phase_name(map.rebalance_phase())));
    jobs_.update(job);
    return Status::ok();
  }
  if (existing) return Status::ok();  // ended (e.g. finished) and seen again in an older push
  wire::JobInfo job;
  job.set_id(id);
  job.set_kind("rebalance");
  job.set_phase(std::string(wire::phase_name(map.rebalance_phase())));
  job.set_started_unix_nanos(now);
  return jobs_.start(std::move(job));
}

http::Awaitable<Result<wire::JobInfo>> Primary::start_rebalance() {
  CO_RETURN_IF_ERROR(co_await mutate([](wire::NodeMap&, wire::BucketMap&, Changed& changed) {
    changed.node_map = true;
    changed.layout = true;  // a new rebalance id, phase copy
    return Status::ok();
  }));
  const std::string id = rebalance_job_id(maps_.node_map()->rebalance_id());
  auto job = jobs_.find(id);
  if (!job) co_return Status::unavailable("{} started, but a newer change replaced it; see GET /v1/jobs", id);
  co_return std::move(*job);
}

http::Awaitable<void> Primary::run_rebalance() {
  while (!stopping_) {
    co_await async::pause(rebalance_timer_, kRebalancePoll);
    if (stopping_) break;
    if (is_active()) co_await rebalance_round();
  }
}

http::Awaitable<void> Primary::rebalance_round() {
  const auto map = maps_.node_map();
  if (map->rebalance_id() != 0) {
    // A primary that restarted, or took over (HA), mid-rebalance finds the job in the map.
    // The current map, read on the state thread where every change is made (one thread):
    // an older snapshot could take a newer job for a preempted one.
    const Status noted = co_await state_disk_.run([this] { return note_rebalance(*maps_.node_map()); });
    if (!noted.is_ok()) SILO_LOG_WARN("rebalance job: {}", noted);
  }
  if (map->rebalance_id() == 0 || map->rebalance_phase() == wire::REBALANCE_PHASE_DONE) {
    co_await retire_decommissioned();
    co_return;
  }
  if (auto job = jobs_.find(rebalance_job_id(map->rebalance_id())); job && job->state() == "failed") {
    co_return;  // until a new rebalance (a change of owners, or POST /v1/jobs {"kind": "rebalance"})
  }
  // Every node that stores objects takes part: owners receive, the others send.
  std::vector<wire::NodeInfo> targets;
  std::vector<std::string> down;
  for (const auto& n : map->nodes()) {
    if (!stores_objects(n)) continue;
    if (n.state() == wire::NODE_STATE_DOWN) {
      down.push_back(n.id());
    } else {
      targets.push_back(n);
    }
  }
  std::vector<std::function<http::Awaitable<Result<wire::RebalanceProgress>>()>> polls;
  for (const auto& n : targets) {
    polls.push_back([this, node = n]() -> http::Awaitable<Result<wire::RebalanceProgress>> {
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest req;
      req.target = kRebalancePath;
      CO_ASSIGN_OR_RETURN(auto response, co_await client_->call(to, std::move(req), "", kMaxProgressBody));
      if (response.status != 200) {
        co_return Status::unavailable("{} answered {}: {}", node.id(), response.status, response.body);
      }
      co_return wire::decode<wire::RebalanceProgress>(response.body, wire::Source::kNetwork);
    });
  }
  const auto results = co_await async::gather<Result<wire::RebalanceProgress>>(std::move(polls));

  wire::JobInfo job;
  if (auto existing = jobs_.find(rebalance_job_id(map->rebalance_id()))) job = *existing;
  job.set_phase(std::string(wire::phase_name(map->rebalance_phase())));
  job.clear_nodes();
  uint64_t done = 0, total = 0, scanned = 0, bytes = 0, errors = 0;
  std::vector<std::string> waiting = down;
  std::vector<std::string> failing;  // why a target is still at it: its last failure
  std::vector<std::string> gave_up;  // targets whose walk failed, and why
  bool all_finished = down.empty();
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& result = results[i];
    const bool is_current = result && result->rebalance_id() == map->rebalance_id() &&
                            result->phase() == map->rebalance_phase();
    if (is_current && result->failed()) {
      gave_up.push_back(fmt::format("{}: {}", targets[i].id(), result->last_error()));
    } else if (!is_current || !result->finished()) {
      all_finished = false;
      waiting.push_back(targets[i].id());
      if (!result) {
        failing.push_back(fmt::format("{}: not answering ({})", targets[i].id(), result.error().message()));
      } else if (is_current && result->errors() > 0) {
        failing.push_back(fmt::format("{}: {} objects failing, walking again; the last: {}", targets[i].id(),
                                      result->errors(), result->last_error()));
      }
    }
    if (!result) continue;
    (*job.mutable_nodes())[targets[i].id()] = *result;
    if (!is_current) continue;
    done += result->objects_moved();
    total += result->objects_total();
    scanned += result->objects_scanned();
    bytes += result->bytes_moved();
    errors += result->errors();
  }
  // The job's figures are the copy's (what moved); cleanup only removes sources.
  if (map->rebalance_phase() == wire::REBALANCE_PHASE_COPY) {
    job.set_objects_done(done);
    job.set_objects_total(total);
    job.set_objects_scanned(scanned);
    job.set_bytes_done(bytes);
  }
  job.set_errors(errors);
  std::string detail;
  if (!down.empty()) {
    detail = fmt::format("waiting for down targets {} (they hold or own objects; DELETE /v1/cluster/nodes/ID "
                         "forgets one that will not return)",
                         fmt::join(down, ", "));
  } else if (!waiting.empty()) {
    detail = fmt::format("waiting for {}", fmt::join(waiting, ", "));
  }
  if (!failing.empty()) detail += fmt::format(" ({})", fmt::join(failing, "; "));
  if (all_finished && !gave_up.empty()) {
    // Every walk ended and some gave up. The phase stays: objects not moved are read
    // from where they are (get-from-neighbor) until a new rebalance moves them.
    const std::string why = fmt::format(
        "objects could not be moved ({}); those not moved stay where they are and are read from there; fix the cause, then start a new "
        "rebalance (silo rebalance)",
        fmt::join(gave_up, "; "));
    jobs_.update(job);
    const Status ended = co_await state_disk_.run(
        [this, &job, &why] { return jobs_.finish(job.id(), "failed", why, clock_.unix_nanos()); });
    if (!ended.is_ok()) SILO_LOG_WARN("{}: {}", job.id(), ended);
    SILO_LOG_ERROR("{} failed in its {} phase: {}", job.id(), wire::phase_name(map->rebalance_phase()), why);
    co_return;
  }
  if (!gave_up.empty()) detail += fmt::format(" (gave up: {})", fmt::join(gave_up, "; "));
  job.set_detail(detail);
  jobs_.update(job);
  if (!all_finished) co_return;

  const uint64_t id = map->rebalance_id();
  const wire::RebalancePhase phase = map->rebalance_phase();
  const wire::RebalancePhase next =
      phase == wire::REBALANCE_PHASE_COPY ? wire::REBALANCE_PHASE_CLEANUP : wire::REBALANCE_PHASE_DONE;
  // The copy's figures survive a restart of the primary.
  const Status saved = co_await state_disk_.run([this, &job] { return jobs_.checkpoint(job); });
  if (!saved.is_ok()) SILO_LOG_WARN("{}: saving its progress: {}", job.id(), saved);
  const Status s = co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap&, Changed& changed) {
    // A newer change of owners may have replaced this rebalance meanwhile.
    if (nodes.rebalance_id() != id || nodes.rebalance_phase() != phase) return Status::ok();
    nodes.set_rebalance_phase(next);
    changed.node_map = true;
    SILO_LOG_INFO("{}: every target finished {}; now {}", rebalance_job_id(id), wire::phase_name(phase),
                  wire::phase_name(next));
    return Status::ok();
  });
  if (!s.is_ok()) SILO_LOG_WARN("{}: advancing the phase failed (will retry): {}", rebalance_job_id(id), s);
}

http::Awaitable<void> Primary::retire_decommissioned() {
  const auto map = maps_.node_map();
  for (const auto& n : map->nodes()) {
    if (n.mode() != wire::NODE_MODE_DECOMMISSIONING) continue;
    // Best effort: a node that does not hear this (down, gone) is removed all the same.
    auto to = http::Endpoint::parse(n.url());
    if (to && n.state() != wire::NODE_STATE_DOWN) {
      http::ClientRequest req;
      req.method = http::Method::kPost;
      req.target = kLeavePath;
      auto answer = co_await client_->call(*to, std::move(req), "", kMaxProgressBody);
      if (!answer || answer->status != 200) {
        SILO_LOG_WARN("node {} did not confirm it leaves: {}", n.id(),
                      answer ? fmt::format("HTTP {}", answer->status) : answer.error().to_string());
      }
    }
    const std::string id = n.id();
    const Status s = co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap&, Changed& changed) {
      auto* list = nodes.mutable_nodes();
      auto it = std::find_if(list->begin(), list->end(), [&](const auto& x) { return x.id() == id; });
      if (it == list->end() || it->mode() != wire::NODE_MODE_DECOMMISSIONING) return Status::ok();
      list->erase(it);
      changed.node_map = true;
      SILO_LOG_INFO("node {} decommissioned: its objects are on other targets; removed from the map", id);
      return Status::ok();
    });
    if (!s.is_ok()) SILO_LOG_WARN("removing decommissioned node {}: {}", id, s);
    MutexLock lock(seen_mutex_);
    last_seen_.erase(id);
  }
}

}  // namespace silo::cluster
