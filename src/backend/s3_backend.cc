#include "backend/s3_backend.h"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <random>

#include "base/text.h"
#include "s3/http_time.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace silo::backend {
namespace {

namespace asio = boost::asio;

constexpr size_t kMaxSmallBody = 16 * 1024 * 1024;  // XML answers (a listing of 1,000 keys)
constexpr size_t kStreamChunk = 256 * 1024;
constexpr uint64_t kMinPartSize = 5ull << 20;  // S3's least part (but the last)

std::string unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
    etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

uint64_t to_u64(std::string_view text) {
  uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// What an S3 answer that is not a success means, its XML <Code> as the reason (a HEAD
// answer has no body: the status alone then).
Status status_of(const http::ClientResponse& r, std::string_view what) {
  std::string code;
  std::string message;
  if (!r.body.empty()) {
    if (auto xml = s3::parse_xml(r.body)) {
      if (const auto* c = xml->child("Code")) code = c->text;
      if (const auto* m = xml->child("Message")) message = m->text;
    }
  }
  if (message.empty()) message = fmt::format("HTTP {}", r.status);
  Status s;
  if (r.status == 404) {
    if (code.empty()) code = "NoSuchKey";
    s = Status::not_found("{}: {} ({})", what, message, code);
  } else if (r.status == 403 || r.status == 401) {
    s = Status::permission_denied("{}: {} ({})", what, message,
                                  code.empty() ? "AccessDenied" : code);
  } else if (r.status == 412) {
    s = Status::failed_precondition("{}: {}", what, message);
  } else if (r.status == 416) {
    s = Status::out_of_range("{}: {}", what, message);
  } else if (r.status == 429 || r.status >= 500 || code == "SlowDown" || code == "RequestTimeout" ||
             code == "InternalError") {
    s = Status::unavailable("{}: {} ({})", what, message,
                            code.empty() ? "ServiceUnavailable" : code);
  } else if (r.status == 409) {
    s = Status::failed_precondition("{}: {} ({})", what, message, code);
  } else {
    s = Status::invalid_argument("{}: {} ({})", what, message, code);
  }
  return code.empty() ? s : s.with_reason(code);
}

bool is_retryable(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded;
}

bool is_success(const http::ClientResponse& r) { return r.status >= 200 && r.status < 300; }

RemoteObject object_of(std::string name, const http::Headers& headers, uint64_t size) {
  RemoteObject o;
  o.name = std::move(name);
  o.size = size;
  o.etag = unquote(headers.get("ETag").value_or(""));
  if (auto modified = headers.get("Last-Modified"))
    o.mtime_unix_seconds = s3::parse_http_date(*modified).value_or(0);
  o.content_type = std::string(headers.get("Content-Type").value_or(""));
  return o;
}

// The first byte a 206 carries, from "Content-Range: bytes 0-9/1234".
std::optional<uint64_t> first_byte_of(const http::Headers& headers) {
  const auto range = headers.get("Content-Range");
  if (!range || !range->starts_with("bytes ")) return std::nullopt;
  const std::string_view rest = range->substr(6);
  return to_u64(rest.substr(0, rest.find('-')));
}

// The object's whole size from a 206's "Content-Range: bytes 0-9/1234".
std::optional<uint64_t> total_of(const http::Headers& headers) {
  const auto range = headers.get("Content-Range");
  if (!range) return std::nullopt;
  const size_t slash = range->rfind('/');
  if (slash == std::string_view::npos || range->substr(slash + 1) == "*") return std::nullopt;
  return to_u64(range->substr(slash + 1));
}

}  // namespace

Result<std::unique_ptr<S3Backend>> S3Backend::create(std::shared_ptr<http::Client> client,
                                                     S3Options options) {
  if (options.bucket.empty()) return Status::invalid_argument("an S3 backend needs a bucket name");
  if (options.access_key.empty() || options.secret_key.empty()) {
    return Status::invalid_argument("S3 bucket {} needs an access key and a secret key",
                                    options.bucket);
  }
  if (options.attempts < 1) return Status::invalid_argument("attempts must be at least 1");
  if (options.part_size < kMinPartSize) {
    return Status::invalid_argument("part_size must be at least {} bytes (S3's least part)",
                                    kMinPartSize);
  }
  ASSIGN_OR_RETURN(http::Endpoint endpoint, http::Endpoint::parse(options.endpoint_url));
  return std::unique_ptr<S3Backend>(
      new S3Backend(std::move(client), std::move(options), std::move(endpoint)));
}

S3Backend::S3Backend(std::shared_ptr<http::Client> client, S3Options options,
                     http::Endpoint endpoint)
    : client_(std::move(client)), options_(std::move(options)), endpoint_(std::move(endpoint)) {}

http::ClientRequest S3Backend::request(http::Method method, std::string_view name,
                                       std::string_view query, http::Headers headers) const {
  std::string path = "/" + text::percent_encode(options_.bucket);
  if (!name.empty()) path += "/" + text::percent_encode_path(name);
  http::ClientRequest r;
  r.method = method;
  r.target = query.empty() ? path : fmt::format("{}?{}", path, query);
  std::vector<std::pair<std::string, std::string>> signed_headers = headers.fields();
  signed_headers.emplace_back("host", endpoint_.to_string());  // what the client sends
  const s3::SigningInput input{http::method_name(method), path, query, &signed_headers};
  const s3::SigningKey key{options_.access_key, options_.secret_key, options_.region, "s3"};
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (auto& [field, value] : s3::sign(input, key, now, "UNSIGNED-PAYLOAD"))
    headers.set(field, std::move(value));
  r.headers = std::move(headers);
  return r;
}

http::Awaitable<void> S3Backend::backoff(int attempt) {
  const auto doubled = options_.first_backoff * (1ll << std::min(attempt - 1, 20));
  const auto ceiling = std::min<std::chrono::milliseconds>(doubled, options_.max_backoff);
  thread_local std::minstd_rand random(std::random_device{}());
  // Half fixed, half random: retries of many clients do not arrive together.
  const auto delay = ceiling / 2 + std::chrono::milliseconds(random() % (ceiling.count() / 2 + 1));
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  boost::system::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

http::Awaitable<Result<http::ClientResponse>> S3Backend::retry(Try attempt) {
  for (int i = 1;; ++i) {
    Result<http::ClientResponse> answer = co_await attempt();
    const Status failed = !answer               ? answer.error()
                          : is_success(*answer) ? Status::ok()
                                                : status_of(*answer, "S3");
    if (!is_retryable(failed) || i >= options_.attempts) co_return answer;
    co_await backoff(i);
  }
}

http::Awaitable<Result<http::ClientResponse>> S3Backend::call(http::Method method,
                                                              std::string_view name,
                                                              std::string_view query,
                                                              std::string body,
                                                              http::Headers headers) {
  co_return co_await retry([&]() {
    return client_->call(endpoint_, request(method, name, query, headers), body, kMaxSmallBody);
  });
}

http::Awaitable<Status> S3Backend::check_bucket() {
  CO_ASSIGN_OR_RETURN(const http::ClientResponse r, co_await call(http::Method::kHead, "", "", ""));
  if (is_success(r)) co_return Status::ok();
  if (r.status == 404) {
    co_return Status::not_found("S3 bucket {} does not exist at {}", options_.bucket,
                                options_.endpoint_url)
        .with_reason("NoSuchBucket");
  }
  co_return status_of(r, fmt::format("S3 bucket {}", options_.bucket));
}

http::Awaitable<Result<RemoteObject>> S3Backend::head(std::string name) {
  CO_ASSIGN_OR_RETURN(const http::ClientResponse r,
                      co_await call(http::Method::kHead, name, "", ""));
  if (!is_success(r)) co_return status_of(r, fmt::format("HEAD s3://{}/{}", options_.bucket, name));
  co_return object_of(std::move(name), r.headers, r.content_length.value_or(0));
}

http::Awaitable<Result<RemoteObject>> S3Backend::get(std::string name, GetOptions options,
                                                     Sink sink) {
  const std::string what = fmt::format("GET s3://{}/{}", options_.bucket, name);
  const std::optional<RemoteRange> range = options.range;
  if (range && range->length == 0) {
    CO_ASSIGN_OR_RETURN(RemoteObject object, co_await head(name));
    if (!options.if_match.empty() && object.etag != options.if_match) {
      co_return Status::failed_precondition("{}: the object changed at the backend", what)
          .with_reason("PreconditionFailed");
    }
    if (options.on_object) options.on_object(object);
    co_return object;
  }
  const uint64_t start = range ? range->offset : 0;
  uint64_t delivered = 0;
  std::optional<uint64_t> expected;  // bytes this transfer sends in all
  RemoteObject object;
  std::vector<char> buffer(kStreamChunk);
  for (int attempt = 1;; ++attempt) {
    http::Headers headers;
    if (range || delivered > 0) {
      headers.set("Range",
                  range ? fmt::format("bytes={}-{}", start + delivered, start + range->length - 1)
                        : fmt::format("bytes={}-", start + delivered));
    }
    // A resumed transfer reads on from the same version only.
    const std::string& match = object.etag.empty() ? options.if_match : object.etag;
    if (!match.empty()) headers.set("If-Match", fmt::format("\"{}\"", match));
    Status failed;
    auto started = co_await client_->start(
        endpoint_, request(http::Method::kGet, name, "", headers), uint64_t{0});
    if (!started) {
      failed = std::move(started).error();
    } else {
      http::Call& call = **started;
      auto head = co_await call.finish();
      if (!head) {
        failed = std::move(head).error();
      } else if (head->status != 200 && head->status != 206) {
        auto body = co_await http::read_all(call.body(), kMaxSmallBody);
        head->body = body ? std::move(*body) : std::string();
        failed = head->status == 412 && !match.empty()
                     ? Status::failed_precondition(
                           "{}: the object changed at the backend while being read", what)
                           .with_reason("PreconditionFailed")
                     : status_of(*head, what);
      } else {
        const uint64_t at = start + delivered;  // the next byte the sink wants
        const std::optional<uint64_t> first = first_byte_of(head->headers);
        if (!expected) {
          const uint64_t length = head->content_length.value_or(0);
          const uint64_t size =
              head->status == 206 ? total_of(head->headers).value_or(start + length) : length;
          object = object_of(name, head->headers, size);
          const uint64_t from = std::min(start, size);
          expected = range ? std::min(range->length, size - from) : size - from;
          if (options.on_object) options.on_object(object);
        }
        // A 206 must start where asked; a 200 (Range ignored) carries the whole object, and
        // what the sink has or did not ask for is dropped: each byte goes out once.
        uint64_t to_skip = head->status == 200 ? at : 0;
        if (head->status == 206 && first != at) {
          co_return Status::data_loss("{}: asked for bytes from {}, the answer starts at {}", what,
                                      at, first.value_or(0));
        }
        while (delivered < *expected) {
          auto got = co_await call.body().read(buffer);
          if (!got) {
            failed = std::move(got).error();
            break;
          }
          if (*got == 0) break;
          std::span<const char> bytes(buffer.data(), *got);
          const auto dropped = static_cast<size_t>(std::min<uint64_t>(to_skip, bytes.size()));
          bytes = bytes.subspan(dropped);
          to_skip -= dropped;
          bytes = bytes.first(
              static_cast<size_t>(std::min<uint64_t>(bytes.size(), *expected - delivered)));
          if (bytes.empty()) continue;
          // The sink's own failure ends the transfer: it is not the backend's to retry.
          CO_RETURN_IF_ERROR(co_await sink(bytes));
          delivered += bytes.size();
        }
        if (failed.is_ok() && delivered == *expected) co_return object;
        if (failed.is_ok())
          failed = Status::unavailable("{}: the answer ended after {} of {} bytes", what, delivered,
                                       *expected);
      }
    }
    if (!is_retryable(failed) || attempt >= options_.attempts) co_return failed;
    co_await backoff(attempt);
  }
}

http::Awaitable<Result<http::ClientResponse>> S3Backend::send_body(http::ClientRequest request,
                                                                   uint64_t offset, uint64_t length,
                                                                   const Source& source) {
  CO_ASSIGN_OR_RETURN(std::unique_ptr<http::Call> call,
                      co_await client_->start(endpoint_, std::move(request), length));
  std::vector<char> buffer(static_cast<size_t>(std::clamp<uint64_t>(length, 1, 1 << 20)));
  uint64_t sent = 0;
  while (sent < length) {
    const auto want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), length - sent));
    CO_ASSIGN_OR_RETURN(const size_t got, co_await source(offset + sent, {buffer.data(), want}));
    if (got == 0) {
      co_return Status::invalid_argument("the source ended at {} of {} bytes", offset + sent,
                                         offset + length);
    }
    CO_RETURN_IF_ERROR(co_await call->write({buffer.data(), got}));
    sent += got;
  }
  CO_ASSIGN_OR_RETURN(http::ClientResponse head, co_await call->finish());
  auto body = co_await http::read_all(call->body(), kMaxSmallBody);
  if (body) head.body = std::move(*body);
  co_return head;
}

http::Awaitable<Result<RemoteObject>> S3Backend::put(std::string name, uint64_t size,
                                                     Source source) {
  if (size > options_.part_size) co_return co_await put_multipart(std::move(name), size, source);
  co_return co_await put_single(std::move(name), size, source);
}

http::Awaitable<Result<RemoteObject>> S3Backend::put_single(std::string name, uint64_t size,
                                                            const Source& source) {
  CO_ASSIGN_OR_RETURN(const http::ClientResponse r, co_await retry([&]() {
                        return send_body(request(http::Method::kPut, name, ""), 0, size, source);
                      }));
  if (!is_success(r)) co_return status_of(r, fmt::format("PUT s3://{}/{}", options_.bucket, name));
  RemoteObject object = object_of(std::move(name), r.headers, size);
  co_return object;
}

http::Awaitable<Result<RemoteObject>> S3Backend::put_multipart(std::string name, uint64_t size,
                                                               const Source& source) {
  const std::string what = fmt::format("multipart upload of s3://{}/{}", options_.bucket, name);
  CO_ASSIGN_OR_RETURN(const http::ClientResponse created,
                      co_await call(http::Method::kPost, name, "uploads", ""));
  if (!is_success(created)) co_return status_of(created, what);
  CO_ASSIGN_OR_RETURN(const s3::XmlNode started, s3::parse_xml(created.body));
  const auto* id = started.child("UploadId");
  if (id == nullptr || id->text.empty())
    co_return Status::unavailable("{}: the answer names no UploadId", what);
  const std::string upload = "uploadId=" + text::percent_encode(id->text);

  std::string parts = "<CompleteMultipartUpload>";
  Status failed;
  int number = 1;
  for (uint64_t offset = 0; offset < size && failed.is_ok();
       offset += options_.part_size, ++number) {
    const uint64_t length = std::min(options_.part_size, size - offset);
    const std::string query = fmt::format("partNumber={}&{}", number, upload);
    auto sent = co_await retry([&]() {
      return send_body(request(http::Method::kPut, name, query), offset, length, source);
    });
    if (!sent) {
      failed = std::move(sent).error();
    } else if (!is_success(*sent)) {
      failed = status_of(*sent, fmt::format("{}, part {}", what, number));
    } else {
      parts += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>\"{}\"</ETag></Part>", number,
                           s3::xml_escape(unquote(sent->headers.get("ETag").value_or(""))));
    }
  }
  if (failed.is_ok()) {
    parts += "</CompleteMultipartUpload>";
    auto done = co_await call(http::Method::kPost, name, upload, parts);
    if (!done) {
      failed = std::move(done).error();
    } else if (!is_success(*done)) {
      failed = status_of(*done, what);
    } else {
      // S3 may answer 200 and still fail: the body says which.
      auto answer = s3::parse_xml(done->body);
      if (!answer || answer->name == "Error") {
        failed = answer ? status_of(http::ClientResponse{500, {}, std::nullopt, done->body}, what)
                        : Status::unavailable("{}: unreadable answer", what);
      } else {
        RemoteObject object;
        object.name = std::move(name);
        object.size = size;
        if (const auto* etag = answer->child("ETag")) object.etag = unquote(etag->text);
        co_return object;
      }
    }
  }
  // The parts stored so far are dropped (S3 keeps an unfinished upload's parts for ever).
  const auto aborted = co_await call(http::Method::kDelete, name, upload, "");
  if (!aborted || (!is_success(*aborted) && aborted->status != 404)) {
    failed.annotate("the upload could not be aborted either: {}",
                    aborted ? status_of(*aborted, what).to_string() : aborted.error().to_string());
  }
  co_return failed;
}

http::Awaitable<Status> S3Backend::remove(std::string name) {
  CO_ASSIGN_OR_RETURN(const http::ClientResponse r,
                      co_await call(http::Method::kDelete, name, "", ""));
  if (is_success(r) || r.status == 404) co_return Status::ok();
  co_return status_of(r, fmt::format("DELETE s3://{}/{}", options_.bucket, name));
}

http::Awaitable<Result<RemotePage>> S3Backend::list(std::string prefix, std::string token,
                                                    size_t limit) {
  std::string query =
      fmt::format("list-type=2&max-keys={}&prefix={}", std::clamp<size_t>(limit, 1, 1000),
                  text::percent_encode(prefix));
  // start-after rather than a continuation token: a page can then start after any name
  // (the proxy merges backend pages with the cached objects from the same name on).
  if (!token.empty()) query += "&start-after=" + text::percent_encode(token);
  const std::string what = fmt::format("list s3://{}/{}", options_.bucket, prefix);
  CO_ASSIGN_OR_RETURN(const http::ClientResponse r,
                      co_await call(http::Method::kGet, "", query, ""));
  if (!is_success(r)) co_return status_of(r, what);
  CO_ASSIGN_OR_RETURN(const s3::XmlNode xml, s3::parse_xml(r.body));
  RemotePage page;
  for (const s3::XmlNode& entry : xml.children) {
    if (entry.name != "Contents") continue;
    RemoteObject& o = page.objects.emplace_back();
    if (const auto* key = entry.child("Key")) o.name = key->text;
    if (const auto* size = entry.child("Size")) o.size = to_u64(size->text);
    if (const auto* etag = entry.child("ETag")) o.etag = unquote(etag->text);
    if (const auto* modified = entry.child("LastModified")) {
      o.mtime_unix_seconds = s3::parse_iso8601(modified->text).value_or(0);
    }
  }
  const auto* truncated = xml.child("IsTruncated");
  if (truncated != nullptr && truncated->text == "true") {
    if (page.objects.empty()) co_return Status::unavailable("{}: truncated page without objects", what);
    page.next_token = page.objects.back().name;
  }
  co_return page;
}

}  // namespace silo::backend
