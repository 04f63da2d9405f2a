// /v1/internal/tasks/{job id}: a target's part of a job the primary runs on every target
// (docs/jobs.md). The kind the id names picks the service that runs it: scrub-N the scrub
// (src/scrub), prefetch-N the cache (src/cache); both answer to the same three calls.
#include "base/log.h"
#include "http/reply.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace {

constexpr size_t kMaxTaskBody = 1 << 20;

}  // namespace

http::Awaitable<Result<Target::TaskStart>> Target::read_task_start(http::Exchange& exchange,
                                                                   const std::string& id) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxTaskBody));
  TaskStart start;
  CO_ASSIGN_OR_RETURN(start.request, wire::parse_job_request_json(body));
  if (!id.starts_with(start.request.kind + "-")) {
    co_return Status::invalid_argument("task {} is not of kind {}", id, start.request.kind);
  }
  if (!start.request.bucket.empty()) {
    CO_ASSIGN_OR_RETURN(start.bucket, co_await find_bucket(start.request.bucket));
  }
  co_return start;
}

http::Awaitable<void> Target::handle_task(http::Exchange& exchange, std::string id) {
  const http::RequestHead& request = exchange.request();
  const bool is_prefetch = id.starts_with("prefetch-");
  if (!is_prefetch && !id.starts_with("scrub-")) {
    co_await http::send_error(exchange, Status::not_found("no task {} here: tasks are scrub-N or prefetch-N", id));
    co_return;
  }
  Status s;
  if (request.method == http::Method::kPost) {
    auto start = co_await read_task_start(exchange, id);
    if (start) {
      const auto executor = exchange.executor();
      const bool is_started =
          is_prefetch ? cache_.start_prefetch(executor, id, std::move(start->request), std::move(start->bucket))
                      : scrub_.start(executor, id, std::move(start->request), std::move(start->bucket));
      // A retried start answers false.
      co_await http::send_json(exchange, 200, is_started ? R"({"started":true})" : R"({"started":false})");
      co_return;
    }
    s = std::move(start).error();
  } else if (request.method == http::Method::kGet) {
    std::optional<wire::RebalanceProgress> progress = is_prefetch ? cache_.prefetch_progress(id) : scrub_.progress(id);
    if (progress) {
      http::ResponseHead head;
      head.headers.set("Content-Type", "application/x-protobuf");
      std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(*progress)));
      co_return;
    }
    s = Status::not_found("no task {} here", id);
  } else if (request.method == http::Method::kDelete) {
    if (is_prefetch ? cache_.stop_prefetch(id) : scrub_.stop(id)) {
      http::ResponseHead head;
      head.status = 204;
      std::ignore = co_await exchange.response().send(std::move(head), "");
      co_return;
    }
    s = Status::not_found("no task {} here", id);
  } else {
    s = Status::invalid_argument("{} is not supported on a task", request.method_text);
  }
  co_await http::send_error(exchange, s);
}

}  // namespace silo::target
