#include "batch/owner_fetcher.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/text.h"
#include "http/reply.h"
#include "s3/http_time.h"
#include "s3/names.h"
#include "wire/json.h"

namespace silo::batch {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

// An owner's answer whose body is still on its connection.
class CallBody final : public EntryBody {
 public:
  CallBody(std::unique_ptr<http::Call> call, uint64_t size, int64_t mtime, bool is_tar)
      : EntryBody(size, mtime, is_tar), call_(std::move(call)) {}

  http::Awaitable<Result<size_t>> read(std::span<char> out) override {
    Result<size_t> n = co_await call_->body().read(out);
    if (!n) co_return n;
    got_ += *n;
    // Read past the last byte: the call ends and its connection goes back to the pool.
    if (got_ == size() && *n > 0) {
      char past = 0;
      CO_RETURN_IF_ERROR((co_await call_->body().read(std::span<char>(&past, 1))).status());
    }
    co_return n;
  }

 private:
  std::unique_ptr<http::Call> call_;
  uint64_t got_ = 0;
};

// The native GET of `entry` (percent-encoded path and query).
std::string entry_target(const wire::BatchEntry& entry) {
  std::string target = "/v1/objects/" + text::percent_encode(entry.bucket) + "/" + text::percent_encode_path(entry.name);
  char separator = '?';
  const auto add = [&target, &separator](std::string_view key, std::string_view value) {
    target += separator;
    target += key;
    target += '=';
    target += text::percent_encode(value);
    separator = '&';
  };
  if (entry.archpath) add("archpath", *entry.archpath);
  if (entry.archmode) {
    add("archmode", *entry.archmode);
    add("batchprefix", entry.selection_prefix());
  }
  return target;
}

}  // namespace

std::vector<wire::NodeInfo> holders_to_ask(const cluster::TargetPlacement& placement, const wire::Bucket& bucket,
                                           const std::string& name, uint64_t turn) {
  std::vector<wire::NodeInfo> holders =
      placement.holders(ObjectRef{BucketId(bucket.id()), name}, wire::holder_count(bucket.props()));
  const auto up_end = std::stable_partition(holders.begin(), holders.end(), [](const wire::NodeInfo& node) {
    return node.state() != wire::NODE_STATE_DOWN;
  });
  const auto up = static_cast<size_t>(up_end - holders.begin());
  if (up > 1) std::rotate(holders.begin(), holders.begin() + static_cast<std::ptrdiff_t>(turn % up), up_end);
  return holders;
}

OwnerFetcher::OwnerFetcher(cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client, std::string self_id)
    : maps_(maps), client_(std::move(client)), self_id_(std::move(self_id)) {}

http::Awaitable<Result<std::unique_ptr<EntryBody>>> OwnerFetcher::open(const wire::BatchEntry& entry) {
  const std::optional<wire::Bucket> bucket = maps_.find_bucket(entry.bucket);
  if (!bucket) {
    co_return Status::not_found("The specified bucket does not exist: {}", entry.bucket).with_reason("NoSuchBucket");
  }
  CO_RETURN_IF_ERROR(s3::validate_object_name(entry.name));
  const auto placement = maps_.placement();
  if (placement->empty()) co_return Status::unavailable("the cluster has no targets yet");
  const std::vector<wire::NodeInfo> holders = holders_to_ask(*placement, *bucket, entry.name, turn_.fetch_add(1));
  http::ClientRequest request;
  request.method = http::Method::kGet;
  request.target = entry_target(entry);
  request.headers.set(http::kForwardedHeader, self_id_);
  request.headers.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
  request.headers.set(http::kBucketMapVersionHeader, std::to_string(maps_.bucket_map()->version()));
  if (entry.start || entry.length) {
    const uint64_t start = entry.start.value_or(0);
    std::string range = "bytes=" + std::to_string(start) + "-";
    if (entry.length) range += std::to_string(start + *entry.length - 1);
    request.headers.set("Range", range);
  }
  Status last = Status::unavailable("no holder of {}/{} could be reached", entry.bucket, entry.name);
  for (const wire::NodeInfo& holder : holders) {
    CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(holder.url()));
    http::ClientRequest attempt = request;
    Result<std::unique_ptr<http::Call>> started = co_await client_->start(to, std::move(attempt), 0);
    if (!started) {
      last = std::move(started).error();
      continue;
    }
    std::unique_ptr<http::Call> call = std::move(*started);
    Result<http::ClientResponse> head = co_await call->finish();
    if (!head) {
      last = std::move(head).error();
      continue;
    }
    if (head->status == 200 || head->status == 206) {
      if (!head->content_length) {
        co_return Status::internal("{} answered {}/{} without a Content-Length", holder.id(), entry.bucket, entry.name);
      }
      int64_t mtime = 0;
      if (auto modified = head->headers.get("Last-Modified")) mtime = s3::parse_http_date(*modified).value_or(0);
      co_return std::unique_ptr<EntryBody>(
          std::make_unique<CallBody>(std::move(call), *head->content_length, mtime, entry.archmode.has_value()));
    }
    Result<std::string> body = co_await http::read_all(call->body(), kMaxErrorBody);
    const std::string answer = body ? std::move(*body) : std::string();
    Status refused = http::status_of_answer(head->status, answer, entry.tar_name());
    // A holder that cannot serve now (down, starting, moving): the next one may.
    if (refused.code() != Code::kUnavailable) co_return refused;
    last = std::move(refused);
  }
  co_return last;
}

}  // namespace silo::batch
