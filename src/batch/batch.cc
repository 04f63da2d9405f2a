#include "batch/batch.h"

#include "base/log.h"
#include "batch/run_fetcher.h"
#include "http/message.h"
#include "http/reply.h"
#include "wire/batch_json.h"

namespace silo::batch {

Batch::Batch(std::unique_ptr<Fetcher> fetcher, StreamOptions options, stats::Registry& stats,
             std::optional<RunSource> runs)
    : fetcher_(std::move(fetcher)),
      options_(options),
      runs_(std::move(runs)),
      requests_(stats.counter("silo_batch_requests_total", "Batch GET requests (POST /v1/batch) served here.")),
      entries_(stats.counter("silo_batch_entries_total", "Entries sent by batch GETs (missing ones included).")),
      missing_(stats.counter("silo_batch_missing_entries_total",
                             "Batch entries sent as empty __404__/ members (continue_on_error).")),
      bytes_(stats.counter("silo_batch_bytes_total", "Entry bytes sent by batch GETs.")),
      failures_(stats.counter("silo_batch_failures_total",
                              "Batch GETs refused, failed before their first byte or cut short.")) {}

http::Awaitable<void> Batch::handle(http::Exchange& exchange, Authorize authorize) {
  requests_.add();
  Result<std::string> body = co_await http::read_all(exchange.body(), kMaxRequestBytes);
  Result<wire::BatchRequest> request = body ? wire::parse_batch_request_json(*body) : Result<wire::BatchRequest>(body.error());
  if (request) {
    for (const wire::BatchEntry& entry : request->entries) {
      if (Status allowed = authorize(entry); !allowed.is_ok()) {
        request = std::move(allowed);
        break;
      }
    }
  }
  if (!request) {
    failures_.add();
    co_await http::send_error(exchange, request.error());
    co_return;
  }
  StreamTally tally;
  std::optional<RunFetcher> run_fetcher;
  if (runs_) run_fetcher.emplace(*runs_->maps, runs_->client, *fetcher_);
  Fetcher& fetcher = run_fetcher ? static_cast<Fetcher&>(*run_fetcher) : *fetcher_;
  const Status outcome = co_await stream_batch(exchange, *request, fetcher, options_, tally);
  entries_.add(tally.entries);
  missing_.add(tally.missing);
  bytes_.add(tally.bytes);
  if (outcome.is_ok()) co_return;
  failures_.add();
  if (exchange.response().has_begun()) {
    SILO_LOG_INFO("batch of {} entries cut after {}: {}", request->entries.size(), tally.entries, outcome);
    co_return;
  }
  co_await http::send_error(exchange, outcome);
}

}  // namespace silo::batch
