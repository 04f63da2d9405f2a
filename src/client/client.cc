#include "base/text.h"
#include "client/client.h"

#include <cstdlib>

#include "s3/sigv4.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <thread>

#include "client/detail/decode_answer.h"
#include "client/owner_map.h"
#include "http/reply.h"
#include "wire/json.h"

namespace silo::client {
namespace {

namespace asio = boost::asio;

constexpr size_t kStreamBufferBytes = 1024 * 1024;
constexpr size_t kMaxSmallBody = 1024 * 1024;  // JSON answers of streamed calls

std::string unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

Status with_context(Status s, std::string_view what) {
  s.annotate("{}", what);
  return s;
}

// Hands the rest of `call`'s body to `sink` through one buffer; the bytes it saw. A body
// cut short (the server stopped mid-answer) is the connection's error, after `what`.
http::Awaitable<Result<uint64_t>> stream_body(http::Call& call, const SinkFn& sink, std::string_view what) {
  std::vector<char> buffer(kStreamBufferBytes);
  uint64_t received = 0;
  for (;;) {
    auto n = co_await call.body().read(buffer);
    if (!n) co_return with_context(n.error(), fmt::format("{}: after {} bytes", what, received));
    if (*n == 0) break;
    CO_RETURN_IF_ERROR(sink({buffer.data(), *n}));
    received += *n;
  }
  co_return received;
}

bool is_redirect(int status) { return status == 301 || status == 302 || status == 307 || status == 308; }

Response to_response(http::ClientResponse r) {
  return Response{r.status, std::move(r.headers), r.content_length, std::move(r.body)};
}

Result<PutResult> put_result_of(const Response& response, std::string_view what) {
  // A server that answers with no JSON (or a short one) still sends the ETag header.
  Result<PutResult> answer = wire::parse_object_put_json(response.body);
  PutResult out = answer ? std::move(*answer) : PutResult{};
  if (out.etag.empty()) {
    auto etag = response.headers.get("ETag");
    if (!etag) return Status::internal("{}: the answer has neither an etag field nor an ETag header", what);
    out.etag = unquote(*etag);
  }
  return out;
}

ObjectInfo object_info_of(const Response& response) {
  ObjectInfo info;
  info.status = response.status;
  info.size = response.content_length.value_or(0);
  if (auto etag = response.headers.get("ETag")) info.etag = unquote(*etag);
  info.headers = response.headers;
  return info;
}

}  // namespace

ByteRange ByteRange::first_last(uint64_t first, uint64_t last) {
  return ByteRange{fmt::format("bytes={}-{}", first, last)};
}
ByteRange ByteRange::from(uint64_t first) { return ByteRange{fmt::format("bytes={}-", first)}; }
ByteRange ByteRange::suffix(uint64_t length) { return ByteRange{fmt::format("bytes=-{}", length)}; }

Client::Client(std::string endpoint_url, http::Endpoint endpoint, ClientOptions options)
    : endpoint_url_(std::move(endpoint_url)),
      endpoint_(std::move(endpoint)),
      options_(options),
      work_(io_.get_executor()) {}

void fill_credentials(ClientOptions& options) {
  auto from_env = [](const char* name, const char* fallback) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr && *value != '\0' ? value : fallback);
  };
  if (options.access_key.empty()) options.access_key = from_env("SILO_ACCESS_KEY", "silo-admin");
  if (options.secret_key.empty()) options.secret_key = from_env("SILO_SECRET_KEY", "silo-secret-key");
  if (options.ca_bundle.empty()) options.ca_bundle = from_env("SILO_CA_BUNDLE", "");
  if (options.client_cert.empty()) options.client_cert = from_env("SILO_CLIENT_CERT", "");
  if (options.client_key.empty()) options.client_key = from_env("SILO_CLIENT_KEY", "");
}

std::function<void(const http::Endpoint&, http::ClientRequest&)> sigv4_signer(const ClientOptions& options) {
  return [key = s3::SigningKey{options.access_key, options.secret_key, options.region, "s3"}](
             const http::Endpoint& to, http::ClientRequest& request) {
    const std::string host = request.host.value_or(to.to_string());
    std::vector<std::pair<std::string, std::string>> headers = request.headers.fields();
    headers.emplace_back("host", host);
    const std::string_view target = request.target;
    const size_t q = target.find('?');
    s3::SigningInput input;
    input.method = http::method_name(request.method);
    input.raw_path = target.substr(0, q);
    input.raw_query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    input.headers = &headers;
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    for (auto& [name, value] : s3::sign(input, key, now, "UNSIGNED-PAYLOAD")) request.headers.set(name, std::move(value));
  };
}

Result<std::unique_ptr<Client>> Client::create(std::string_view endpoint_url, ClientOptions options) {
  std::string url(endpoint_url);
  while (!url.empty() && url.back() == '/') url.pop_back();
  ASSIGN_OR_RETURN(http::Endpoint endpoint, http::Endpoint::parse(url));
  fill_credentials(options);
  std::unique_ptr<Client> client(new Client(url, std::move(endpoint), options));
  http::ClientOptions http_options;
  http_options.connect_timeout = options.connect_timeout;
  http_options.io_timeout = options.io_timeout;
  http_options.decorate = sigv4_signer(options);
  http_options.tls_ca_file = options.ca_bundle;
  http_options.tls_cert_file = options.client_cert;
  http_options.tls_key_file = options.client_key;
  client->http_ = http::Client::create(client->io_.get_executor(), http_options);
  client->thread_ = std::thread([io = &client->io_] { io->run(); });
  return client;
}

Client::~Client() {
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
  // Pooled connections hold sockets of io_: close them before io_ goes away.
  http_.reset();
}

template <typename T, typename MakeFn>
Result<T> Client::run(MakeFn make) {
  // The slot is shared with the completion handler, which may still be returning on the
  // io thread when the caller wakes up.
  struct Slot {
    std::optional<Result<T>> result;
    std::promise<void> done;
  };
  auto slot = std::make_shared<Slot>();
  std::future<void> done = slot->done.get_future();
  asio::co_spawn(
      io_,
      [slot, make = std::move(make)]() mutable -> http::Awaitable<void> { slot->result.emplace(co_await make()); },
      [slot](std::exception_ptr e) {
        if (!slot->result) {
          std::string what = "unknown exception";
          try {
            if (e) std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            what = ex.what();
          } catch (...) {
          }
          slot->result.emplace(Status::internal("client call failed: {}", what));
        }
        slot->done.set_value();
      });
  done.wait();
  return std::move(*slot->result);
}

Result<std::pair<http::Endpoint, std::string>> Client::resolve(std::string_view target) const {
  const size_t scheme_end = target.starts_with("http://") ? 7 : target.starts_with("https://") ? 8 : 0;
  if (scheme_end == 0) {
    if (target.empty() || target.front() != '/') {
      return Status::invalid_argument("request target '{}' is neither a path nor an http(s):// URL", target);
    }
    return std::make_pair(endpoint_, std::string(target));
  }
  const size_t slash = target.find('/', scheme_end);
  const std::string_view base = target.substr(0, slash);
  ASSIGN_OR_RETURN(http::Endpoint endpoint, http::Endpoint::parse(base));
  return std::make_pair(std::move(endpoint),
                        slash == std::string_view::npos ? std::string("/") : std::string(target.substr(slash)));
}

std::string Client::object_target(std::string_view bucket, std::string_view name) {
  return fmt::format("/v1/objects/{}/{}", text::percent_encode(bucket),
                     text::percent_encode_path(name));
}

std::string Client::object_url(std::string_view bucket, std::string_view name) {
  std::string target = object_target(bucket, name);
  if (!options_.direct) return target;
  constexpr auto kRoutesTtl = std::chrono::seconds(10);
  std::shared_ptr<const OwnerMap> owners;
  std::optional<uint64_t> bucket_id;
  {
    MutexLock lock(routes_mutex_);
    if (owners_ && std::chrono::steady_clock::now() - owners_at_ < kRoutesTtl) owners = owners_;
    if (const auto it = bucket_ids_.find(bucket); it != bucket_ids_.end()) bucket_id = it->second;
  }
  // Fetched without the lock (calls through the endpoint); a failure leaves the call on
  // the endpoint, which answers it (and names the problem, as with no such bucket).
  if (!owners) {
    Result<NodeMap> map = node_map();
    Result<OwnerMap> made = map ? OwnerMap::create(*map) : Result<OwnerMap>(map.error());
    if (!made) return target;
    owners = std::make_shared<const OwnerMap>(std::move(*made));
    MutexLock lock(routes_mutex_);
    owners_ = owners;
    owners_at_ = std::chrono::steady_clock::now();
    bucket_ids_.clear();  // a bucket deleted and made again has a new id
  }
  if (!bucket_id) {
    Result<BucketEntry> entry = bucket_props(bucket);
    if (!entry) return target;
    bucket_id = entry->id;
    MutexLock lock(routes_mutex_);
    bucket_ids_.emplace(std::string(bucket), entry->id);
  }
  return owners->owner_url(*bucket_id, name) + target;
}

void Client::forget_routes() {
  MutexLock lock(routes_mutex_);
  owners_.reset();
  bucket_ids_.clear();
}

Result<Response> Client::request_object(http::Method method, std::string_view bucket, std::string_view name,
                                        std::string_view body, const http::Headers& headers,
                                        std::string_view query) {
  const std::string suffix = query.empty() ? "" : "?" + std::string(query);
  const std::string url = object_url(bucket, name) + suffix;
  Result<Response> r = request_following(method, url, body, headers);
  if (r || url.front() == '/') return r;
  forget_routes();  // the owner did not answer: the map may be stale, or targets unreachable from here
  return request_following(method, object_target(bucket, name) + suffix, body, headers);
}

Status Client::status_of(const Response& response, std::string_view what) {
  if (response.status < 400) return Status::ok();
  return http::status_of_answer(response.status, response.body, what);
}

Result<Response> Client::request(http::Method method, std::string_view target, std::string body,
                                 http::Headers headers) {
  ASSIGN_OR_RETURN(auto resolved, resolve(target));
  return run<Response>([&]() -> http::Awaitable<Result<Response>> {
    http::ClientRequest request;
    request.method = method;
    request.target = std::move(resolved.second);
    request.headers = std::move(headers);
    CO_ASSIGN_OR_RETURN(http::ClientResponse r, co_await http_->call(resolved.first, std::move(request),
                                                                      std::move(body), options_.max_body_bytes));
    co_return to_response(std::move(r));
  });
}

Result<Response> Client::request_following(http::Method method, std::string target, std::string_view body,
                                           const http::Headers& headers) {
  for (int hops = 0;; ++hops) {
    ASSIGN_OR_RETURN(Response r, request(method, target, std::string(body), headers));
    const auto location = r.headers.get("Location");
    if (!is_redirect(r.status) || !location || hops >= options_.max_redirects) return r;
    target = std::string(*location);
  }
}

Status Client::health() {
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, "/v1/health"));
  if (r.status != 200) return Status::unavailable("GET /v1/health: HTTP {}: {}", r.status, r.body);
  return Status::ok();
}

Result<NodeMap> Client::node_map() {
  constexpr std::string_view kWhat = "GET /v1/cluster/map";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, "/v1/cluster/map"));
  RETURN_IF_ERROR(status_of(r, kWhat));
  return detail::decode_answer(r, kWhat, wire::parse_node_map_json);
}

Result<MembershipChange> Client::membership_call(http::Method method, std::string target, std::string body,
                                                 http::Headers headers) {
  const std::string what = fmt::format("{} {}", http::method_name(method), target);
  ASSIGN_OR_RETURN(const Response r, request(method, target, std::move(body), std::move(headers)));
  RETURN_IF_ERROR(status_of(r, what));
  return detail::decode_answer(r, what, wire::parse_membership_change_json);
}

Result<MembershipChange> Client::set_maintenance(std::string_view node_id, bool on) {
  return membership_call(on ? http::Method::kPost : http::Method::kDelete,
                         "/v1/cluster/nodes/" + text::percent_encode(node_id) + "/maintenance");
}

Result<MembershipChange> Client::decommission(std::string_view node_id) {
  return membership_call(http::Method::kPost, "/v1/cluster/nodes/" + text::percent_encode(node_id) + "/decommission");
}

Result<MembershipChange> Client::add_node(std::string_view url) {
  http::Headers headers;
  headers.set("Content-Type", "application/json");
  std::string body = fmt::format(R"({{"url":{}}})", wire::json_string(url));
  return membership_call(http::Method::kPost, "/v1/cluster/nodes", std::move(body), std::move(headers));
}

Result<MembershipChange> Client::remove_node(std::string_view node_id) {
  return membership_call(http::Method::kDelete, "/v1/cluster/nodes/" + text::percent_encode(node_id));
}

Result<std::vector<JobEntry>> Client::jobs() {
  constexpr std::string_view kWhat = "GET /v1/jobs";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, "/v1/jobs"));
  RETURN_IF_ERROR(status_of(r, kWhat));
  return detail::decode_answer(r, kWhat, wire::parse_job_list_json);
}

Result<std::string> Client::config(bool overrides_only) {
  const std::string_view target = overrides_only ? "/v1/config?overrides=true" : "/v1/config";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET /v1/config"));
  return r.body;
}

Result<std::string> Client::set_config(std::string patch) {
  http::Headers headers;
  headers.set("Content-Type", "application/json");
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPut, "/v1/config", std::move(patch), std::move(headers)));
  RETURN_IF_ERROR(status_of(r, "PUT /v1/config"));
  return r.body;
}

Result<JobEntry> Client::job(std::string_view id) {
  const std::string target = "/v1/jobs/" + text::percent_encode(id);
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return detail::decode_answer(r, "GET " + target, wire::parse_job_json);
}

Result<JobEntry> Client::wait_job(std::string_view id, std::chrono::seconds timeout) {
  const std::string target =
      fmt::format("/v1/jobs/{}/wait?timeout_s={}", text::percent_encode(id), timeout.count());
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return detail::decode_answer(r, "GET " + target, wire::parse_job_json);
}

Result<JobEntry> Client::start_job(std::string job_json) {
  http::Headers headers;
  headers.set("Content-Type", "application/json");
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPost, "/v1/jobs", std::move(job_json), headers));
  RETURN_IF_ERROR(status_of(r, "POST /v1/jobs"));
  return detail::decode_answer(r, "POST /v1/jobs", wire::parse_job_json);
}

Status Client::abort_job(std::string_view id) {
  const std::string target = "/v1/jobs/" + text::percent_encode(id) + "/abort";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPost, target));
  return status_of(r, "POST " + target);
}

Status Client::create_bucket(std::string_view bucket, std::string props_json) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket);
  http::Headers headers;
  if (!props_json.empty()) headers.set("Content-Type", "application/json");
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPut, target, std::move(props_json), headers));
  return status_of(r, "PUT " + target);
}

Status Client::delete_bucket(std::string_view bucket) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket);
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kDelete, target));
  return status_of(r, "DELETE " + target);
}

Result<uint64_t> Client::evict(std::string_view bucket, std::string request_json) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket) + "/evict";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPost, target, std::move(request_json)));
  RETURN_IF_ERROR(status_of(r, "POST " + target));
  return detail::decode_answer(r, "POST " + target, wire::parse_evicted_json);
}

Status Client::head_bucket(std::string_view bucket) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket);
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kHead, target));
  return status_of(r, "HEAD " + target);
}

Result<std::vector<BucketEntry>> Client::list_buckets() {
  constexpr std::string_view kWhat = "GET /v1/buckets";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, "/v1/buckets"));
  RETURN_IF_ERROR(status_of(r, kWhat));
  return detail::decode_answer(r, kWhat, wire::parse_bucket_list_json);
}

Result<BucketEntry> Client::bucket_props(std::string_view bucket) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket) + "/props";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return detail::decode_answer(r, "GET " + target, wire::parse_bucket_json);
}

Status Client::set_bucket_props(std::string_view bucket, std::string props_json) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket) + "/props";
  http::Headers headers;
  headers.set("Content-Type", "application/json");
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kPut, target, std::move(props_json), headers));
  return status_of(r, "PUT " + target);
}

Result<PutResult> Client::put(std::string_view bucket, std::string_view name, std::string_view bytes,
                              http::Headers headers) {
  const std::string target = object_target(bucket, name);
  ASSIGN_OR_RETURN(const Response r, request_object(http::Method::kPut, bucket, name, bytes, headers));
  RETURN_IF_ERROR(status_of(r, "PUT " + target));
  return put_result_of(r, "PUT " + target);
}

Result<std::string> Client::get(std::string_view bucket, std::string_view name, std::optional<ByteRange> range) {
  const std::string target = object_target(bucket, name);
  http::Headers headers;
  if (range) headers.set("Range", range->header);
  ASSIGN_OR_RETURN(Response r, request_object(http::Method::kGet, bucket, name, {}, headers));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return std::move(r.body);
}

Result<std::string> Client::get_archive(std::string_view bucket, std::string_view name, const ArchiveQuery& query,
                                        std::optional<ByteRange> range) {
  std::string text = query.lists ? "archlist=true" : "archpath=" + text::percent_encode(query.path);
  if (!query.mode.empty()) text += "&archmode=" + text::percent_encode(query.mode);
  http::Headers headers;
  if (range) headers.set("Range", range->header);
  ASSIGN_OR_RETURN(Response r, request_object(http::Method::kGet, bucket, name, {}, headers, text));
  RETURN_IF_ERROR(status_of(r, "GET " + object_target(bucket, name) + "?" + text));
  return std::move(r.body);
}

Result<wire::ArchiveList> Client::list_members(std::string_view bucket, std::string_view name) {
  ArchiveQuery query;
  query.lists = true;
  ASSIGN_OR_RETURN(const std::string body, get_archive(bucket, name, query));
  return wire::parse_archive_list_json(body);
}

Result<ObjectInfo> Client::head(std::string_view bucket, std::string_view name) {
  const std::string target = object_target(bucket, name);
  ASSIGN_OR_RETURN(const Response r, request_object(http::Method::kHead, bucket, name, {}, {}));
  RETURN_IF_ERROR(status_of(r, "HEAD " + target));
  return object_info_of(r);
}

Status Client::remove(std::string_view bucket, std::string_view name) {
  const std::string target = object_target(bucket, name);
  ASSIGN_OR_RETURN(const Response r, request_object(http::Method::kDelete, bucket, name, {}, {}));
  return status_of(r, "DELETE " + target);
}

std::string Client::list_target(std::string_view bucket, std::string_view prefix, size_t limit,
                                std::string_view token) {
  std::string target = "/v1/buckets/" + text::percent_encode(bucket);
  char sep = '?';
  auto add = [&](std::string_view key, std::string_view value) {
    target += sep;
    target += key;
    target += '=';
    target += text::percent_encode(value);
    sep = '&';
  };
  if (!prefix.empty()) add("prefix", prefix);
  if (limit != 0) add("limit", std::to_string(limit));
  if (!token.empty()) add("token", token);
  return target;
}

Result<ListPage> Client::parse_list_page(std::string_view body) { return wire::parse_object_list_json(body); }

Result<ListPage> Client::list(std::string_view bucket, std::string_view prefix, size_t limit, std::string_view token) {
  const std::string target = list_target(bucket, prefix, limit, token);
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return detail::decode_answer(r, "GET " + target, wire::parse_object_list_json);
}

Result<std::vector<ObjectEntry>> Client::list_all(std::string_view bucket, std::string_view prefix,
                                                  size_t page_limit) {
  std::vector<ObjectEntry> out;
  std::string token;
  for (;;) {
    ASSIGN_OR_RETURN(ListPage page, list(bucket, prefix, page_limit, token));
    for (auto& o : page.objects) out.push_back(std::move(o));
    if (page.next_token.empty()) return out;
    if (page.next_token == token) return Status::internal("listing {}: the next token did not advance", bucket);
    token = std::move(page.next_token);
  }
}

Result<PutResult> Client::put_stream(std::string_view bucket, std::string_view name, uint64_t size,
                                     const FillFn& fill, http::Headers headers) {
  const std::string what = "PUT " + object_target(bucket, name);
  ASSIGN_OR_RETURN(auto resolved, resolve(object_url(bucket, name)));
  return run<PutResult>([&]() -> http::Awaitable<Result<PutResult>> {
    http::ClientRequest request;
    request.method = http::Method::kPut;
    request.target = resolved.second;
    request.headers = std::move(headers);
    CO_ASSIGN_OR_RETURN(std::unique_ptr<http::Call> call,
                        co_await http_->start(resolved.first, std::move(request), size));
    std::vector<char> buffer(kStreamBufferBytes);
    for (uint64_t left = size; left > 0;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), left));
      const size_t n = fill({buffer.data(), want});
      if (n == 0 || n > want) {
        co_return Status::invalid_argument("{}: the fill callback gave {} bytes with {} of {} left", what, n, left,
                                           size);
      }
      Status written = co_await call->write({buffer.data(), n});
      if (!written.is_ok()) co_return with_context(std::move(written), what);
      left -= n;
    }
    auto head = co_await call->finish();
    if (!head) co_return with_context(head.error(), what);
    auto body = co_await http::read_all(call->body(), kMaxSmallBody);
    if (!body) co_return with_context(body.error(), what + ": answer");
    head->body = std::move(*body);
    const Response r = to_response(std::move(*head));
    CO_RETURN_IF_ERROR(status_of(r, what));
    co_return put_result_of(r, what);
  });
}

Result<uint64_t> Client::get_batch(const wire::BatchRequest& batch, const SinkFn& sink) {
  constexpr std::string_view kWhat = "POST /v1/batch";
  const std::string body = wire::batch_request_json(batch);
  ASSIGN_OR_RETURN(auto resolved, resolve("/v1/batch"));
  return run<uint64_t>([&]() -> http::Awaitable<Result<uint64_t>> {
    http::ClientRequest request;
    request.method = http::Method::kPost;
    request.target = resolved.second;
    request.headers.set("Content-Type", "application/json");
    CO_ASSIGN_OR_RETURN(std::unique_ptr<http::Call> call,
                        co_await http_->start(resolved.first, std::move(request), uint64_t{body.size()}));
    CO_RETURN_IF_ERROR(co_await call->write({body.data(), body.size()}));
    auto head = co_await call->finish();
    if (!head) co_return with_context(head.error(), kWhat);
    if (head->status != 200) {
      auto error_body = co_await http::read_all(call->body(), kMaxSmallBody);
      if (error_body) head->body = std::move(*error_body);
      co_return status_of(to_response(std::move(*head)), kWhat);
    }
    co_return co_await stream_body(*call, sink, kWhat);
  });
}

Result<ObjectInfo> Client::get_stream(std::string_view bucket, std::string_view name, const SinkFn& sink,
                                      std::optional<ByteRange> range) {
  std::string target = object_url(bucket, name);
  const std::string what = "GET " + object_target(bucket, name);
  http::Headers headers;
  if (range) headers.set("Range", range->header);
  bool is_answered = false;  // a direct call that got no answer goes again through the endpoint
  for (int hops = 0;; ++hops) {
    ASSIGN_OR_RETURN(auto resolved, resolve(target));
    std::optional<std::string> location;
    auto info = run<ObjectInfo>([&]() -> http::Awaitable<Result<ObjectInfo>> {
      http::ClientRequest request;
      request.method = http::Method::kGet;
      request.target = resolved.second;
      request.headers = headers;
      CO_ASSIGN_OR_RETURN(std::unique_ptr<http::Call> call,
                          co_await http_->start(resolved.first, std::move(request), uint64_t{0}));
      auto head = co_await call->finish();
      if (!head) co_return with_context(head.error(), what);
      is_answered = true;
      if (head->status < 200 || head->status >= 300) {
        auto body = co_await http::read_all(call->body(), kMaxSmallBody);
        if (body) head->body = std::move(*body);
        Response r = to_response(std::move(*head));
        if (auto l = r.headers.get("Location"); is_redirect(r.status) && l) {
          location = std::string(*l);
          co_return object_info_of(r);
        }
        co_return status_of(r, what);
      }
      CO_ASSIGN_OR_RETURN(const uint64_t received, co_await stream_body(*call, sink, what));
      if (head->content_length && received != *head->content_length) {
        co_return Status::unavailable("{}: the body ended after {} of {} bytes", what, received,
                                      *head->content_length);
      }
      co_return object_info_of(to_response(std::move(*head)));
    });
    if (!info && !is_answered && hops == 0 && target.front() != '/') {
      forget_routes();
      target = object_target(bucket, name);
      continue;
    }
    if (!info || !location || hops >= options_.max_redirects) return info;
    target = std::move(*location);
  }
}

Result<BucketInfo> Client::bucket_info(std::string_view bucket) {
  const std::string target = "/v1/buckets/" + text::percent_encode(bucket) + "/props";
  ASSIGN_OR_RETURN(Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  ASSIGN_OR_RETURN(BucketEntry entry, detail::decode_answer(r, "GET " + target, wire::parse_bucket_json));
  return BucketInfo{std::move(entry), std::move(r.body)};
}

Result<ListPage> Client::list_page(std::string_view bucket, const ListOptions& options) {
  std::string target = list_target(bucket, options.prefix, options.limit, options.token);
  if (options.cached_only) target += target.find('?') == std::string::npos ? "?cached=true" : "&cached=true";
  ASSIGN_OR_RETURN(const Response r, request(http::Method::kGet, target));
  RETURN_IF_ERROR(status_of(r, "GET " + target));
  return detail::decode_answer(r, "GET " + target, wire::parse_object_list_json);
}

}  // namespace silo::client
