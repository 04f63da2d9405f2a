// The primary's side of jobs that every target runs a part of (scrub, prefetch): start
// the parts, poll their progress into the job, end the job once all are done, stop them
// on abort.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <charconv>

#include "base/log.h"
#include "async/gather.h"
#include "cluster/primary.h"
#include "async/sleep.h"

namespace silo::cluster {
namespace {

namespace asio = boost::asio;

constexpr std::chrono::milliseconds kTaskPoll{300};
constexpr size_t kMaxTaskBody = 64 * 1024;

// The next free "<kind>-<n>" of the registry.
std::string next_job_id(const JobRegistry& jobs, std::string_view kind) {
  uint64_t last = 0;
  const std::string prefix = std::string(kind) + "-";
  for (const auto& job : jobs.list()) {
    if (!job.id().starts_with(prefix)) continue;
    uint64_t n = 0;
    const std::string_view digits = std::string_view(job.id()).substr(prefix.size());
    std::from_chars(digits.data(), digits.data() + digits.size(), n);
    last = std::max(last, n);
  }
  return fmt::format("{}{}", prefix, last + 1);
}

}  // namespace

http::Awaitable<Result<http::ClientResponse>> Primary::call_task(const wire::NodeInfo& node, http::Method method,
                                                                 const std::string& id, std::string body) {
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
  http::ClientRequest req;
  req.method = method;
  req.target = kTasksPath + id;
  co_return co_await client_->call(to, std::move(req), std::move(body), kMaxTaskBody);
}

http::Awaitable<Result<wire::JobInfo>> Primary::start_task(wire::JobRequest request, std::string body) {
  if (!is_active()) co_return Status::unavailable("node {} is not the primary (any more); retry", self_.id());
  if (request.kind == "rebalance") co_return co_await start_rebalance();
  if (const auto runner = runners_.find(request.kind); runner != runners_.end()) {
    co_return co_await runner->second->start(std::move(body));
  }
  const std::string& bucket = request.bucket;
  const auto found = bucket.empty() ? std::nullopt : maps_.find_bucket(bucket);
  if (!bucket.empty() && !found) {
    co_return Status::not_found("bucket {} does not exist", bucket).with_reason("NoSuchBucket");
  }
  if (request.kind == "prefetch" && !wire::is_remote(found->props())) {
    co_return Status::invalid_argument("bucket {} is not a remote bucket: there is nothing to prefetch", bucket);
  }
  std::vector<wire::NodeInfo> targets;
  std::vector<std::string> down;
  for (const auto& n : maps_.node_map()->nodes()) {
    if (!stores_objects(n)) continue;
    if (n.state() == wire::NODE_STATE_DOWN) {
      down.push_back(n.id());
    } else {
      targets.push_back(n);
    }
  }
  if (targets.empty()) co_return Status::unavailable("no target is up to run a {}", request.kind);
  wire::JobInfo job;
  job.set_kind(request.kind);
  job.set_started_unix_nanos(clock_.unix_nanos());
  job.set_phase(bucket.empty() ? "all buckets" : "bucket " + bucket);
  if (!down.empty()) job.set_detail(fmt::format("not run on (down): {}", fmt::join(down, ", ")));
  CO_RETURN_IF_ERROR(co_await state_disk_.run([this, &job]() -> Status {
    job.set_id(next_job_id(jobs_, job.kind()));
    return jobs_.start(job);
  }));
  std::vector<std::function<http::Awaitable<Status>()>> starts;
  for (const auto& node : targets) {
    starts.push_back([this, node, &job, &body]() -> http::Awaitable<Status> {
      CO_ASSIGN_OR_RETURN(const auto answer, co_await call_task(node, http::Method::kPost, job.id(), body));
      if (answer.status != 200) {
        co_return Status::unavailable("{} did not start its part: HTTP {} {}", node.id(), answer.status, answer.body);
      }
      co_return Status::ok();
    });
  }
  std::vector<std::string> failed;
  const auto started = co_await async::gather<Status>(std::move(starts));
  for (size_t i = 0; i < started.size(); ++i) {
    if (!started[i].is_ok()) failed.push_back(started[i].to_string());
  }
  if (!failed.empty()) SILO_LOG_WARN("{}: {}", job.id(), fmt::join(failed, "; "));
  SILO_LOG_INFO("{} starts on {} targets ({})", job.id(), targets.size(), job.phase());
  const auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, watch_task(job.id(), std::move(targets)), asio::detached);
  co_return job;
}

http::Awaitable<void> Primary::watch_task(std::string id, std::vector<wire::NodeInfo> targets) {
  std::unique_ptr<asio::steady_timer> timer;
  while (!stopping_ && is_active()) {
    co_await async::pause(timer, kTaskPoll);
    auto job = jobs_.find(id);
    if (!job || job->state() != "running") co_return;  // aborted
    std::vector<std::function<http::Awaitable<Result<wire::RebalanceProgress>>()>> polls;
    for (const auto& n : targets) {
      polls.push_back([this, n, &id]() -> http::Awaitable<Result<wire::RebalanceProgress>> {
        CO_ASSIGN_OR_RETURN(const auto answer, co_await call_task(n, http::Method::kGet, id));
        if (answer.status != 200) co_return Status::not_found("{} answered {}: {}", n.id(), answer.status, answer.body);
        co_return wire::decode<wire::RebalanceProgress>(answer.body, wire::Source::kNetwork);
      });
    }
    const auto results = co_await async::gather<Result<wire::RebalanceProgress>>(std::move(polls));
    uint64_t scanned = 0, total = 0, done = 0, bytes = 0, errors = 0, corrupt = 0, repaired = 0, restored = 0;
    bool all_finished = true;
    std::vector<std::string> lost;
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto& r = results[i];
      if (!r) {
        // Restarted (its part is gone) or down: that part will not finish.
        const auto now = maps_.find_node(targets[i].id());
        if (r.error().code() == Code::kNotFound || !now || now->state() == wire::NODE_STATE_DOWN) {
          lost.push_back(targets[i].id());
        } else {
          all_finished = false;  // unreachable for now: ask again
        }
        continue;
      }
      (*job->mutable_nodes())[targets[i].id()] = *r;
      all_finished = all_finished && r->finished();
      scanned += r->objects_scanned();
      total += r->objects_total();
      done += r->objects_moved();
      bytes += r->bytes_moved();
      errors += r->errors();
      corrupt += r->corrupt_found();
      repaired += r->corrupt_repaired();
      restored += r->copies_restored();
    }
    job->set_objects_scanned(scanned);
    job->set_objects_total(std::max(total, scanned));
    job->set_objects_done(done);
    job->set_bytes_done(bytes);
    job->set_errors(errors);
    job->set_corrupt_found(corrupt);
    job->set_corrupt_repaired(repaired);
    job->set_copies_restored(restored);
    jobs_.update(*job);
    if (!all_finished) continue;
    std::string state = "finished";
    std::string detail = job->detail();
    if (!lost.empty()) {
      state = "failed";
      detail = fmt::format("{}the part of {} was lost (restarted or down); run the job again",
                           detail.empty() ? "" : detail + "; ", fmt::join(lost, ", "));
    } else if (errors > 0) {
      // A prefetch that missed objects did not do its work (rerun it: the cached ones are skipped).
      if (job->kind() == "prefetch") state = "failed";
      detail = fmt::format("{}{} objects failed (see nodes.*.last_error)", detail.empty() ? "" : detail + "; ", errors);
    }
    const int64_t now = clock_.unix_nanos();
    const Status saved = co_await state_disk_.run([this, &job, &id, &state, &detail, now]() -> Status {
      RETURN_IF_ERROR(jobs_.checkpoint(*job));
      return jobs_.finish(id, state, detail, now);
    });
    if (!saved.is_ok()) SILO_LOG_WARN("{}: ending the job: {}", id, saved);
    SILO_LOG_INFO("{} {}: {} objects, {} corrupt, {} repaired, {} copies restored, {} errors", id, state, scanned,
                  corrupt, repaired, restored, errors);
    co_return;
  }
}

http::Awaitable<Result<wire::JobInfo>> Primary::open_job(std::string kind, std::string phase) {
  if (!is_active()) co_return Status::unavailable("node {} is not the primary (any more); retry", self_.id());
  wire::JobInfo job;
  job.set_kind(std::move(kind));
  job.set_phase(std::move(phase));
  job.set_started_unix_nanos(clock_.unix_nanos());
  CO_RETURN_IF_ERROR(co_await state_disk_.run([this, &job]() -> Status {
    job.set_id(next_job_id(jobs_, job.kind()));
    return jobs_.start(job);
  }));
  job.set_state("running");
  co_return job;
}

http::Awaitable<Status> Primary::close_job(wire::JobInfo job, std::string state, std::string detail) {
  const int64_t now = clock_.unix_nanos();
  co_return co_await state_disk_.run([this, &job, &state, &detail, now]() -> Status {
    RETURN_IF_ERROR(jobs_.checkpoint(job));
    return jobs_.finish(job.id(), state, detail, now);
  });
}

http::Awaitable<Status> Primary::abort_job(std::string id) {
  auto job = jobs_.find(id);
  if (!job) co_return Status::not_found("no job {}", id);
  if (job->state() != "running") {
    co_return Status::failed_precondition("job {} is not running (it is {})", id, job->state());
  }
  if (job->kind() == "rebalance") {
    // Stopping it would leave objects where their holders do not look for them.
    co_return Status::failed_precondition(
        "a rebalance cannot be aborted: objects would stay away from their holders; the next membership or "
        "layout change preempts it");
  }
  if (const auto runner = runners_.find(job->kind()); runner != runners_.end()) {
    co_return co_await runner->second->abort(id);
  }
  if (job->kind() != "scrub" && job->kind() != "prefetch") {
    co_return Status::failed_precondition("jobs of kind {} cannot be aborted", job->kind());
  }
  std::vector<std::function<http::Awaitable<Status>()>> stops;
  for (const auto& n : maps_.node_map()->nodes()) {
    if (!stores_objects(n) || n.state() == wire::NODE_STATE_DOWN) continue;
    stops.push_back([this, n, &id]() -> http::Awaitable<Status> {
      CO_ASSIGN_OR_RETURN(const auto answer, co_await call_task(n, http::Method::kDelete, id));
      std::ignore = answer;  // 404: that target has no part (any more)
      co_return Status::ok();
    });
  }
  std::ignore = co_await async::gather<Status>(std::move(stops));
  const int64_t now = clock_.unix_nanos();
  co_return co_await state_disk_.run([this, &id, now] { return jobs_.finish(id, "aborted", "aborted by an admin", now); });
}

}  // namespace silo::cluster
