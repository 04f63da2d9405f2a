#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "backend/object_backend.h"
#include "http/client.h"

namespace silo::backend {

struct S3Options {
  std::string endpoint_url;  // "http://host:port" (https: not yet, http::Endpoint refuses it)
  std::string region = "us-east-1";
  std::string bucket;
  std::string access_key;
  std::string secret_key;                        // never logged, never in an error message
  int attempts = 5;                              // per request, the first included
  std::chrono::milliseconds first_backoff{100};  // doubled per retry, with jitter
  std::chrono::milliseconds max_backoff{3000};
  uint64_t part_size = 64ull << 20;  // larger PUTs are multipart uploads (>= 5 MiB)
};

// An S3 bucket over the S3 REST API, path-style, SigV4 (UNSIGNED-PAYLOAD bodies), through
// the pooled http::Client. Retries connection failures, 5xx, 429, SlowDown and
// RequestTimeout with exponential backoff; GETs resume cut transfers with Range and
// If-Match; multipart uploads are aborted when they fail.
class S3Backend : public ObjectBackend {
 public:
  static Result<std::unique_ptr<S3Backend>> create(std::shared_ptr<http::Client> client,
                                                   S3Options options);

  http::Awaitable<Status> check_bucket() override;
  http::Awaitable<Result<RemoteObject>> head(std::string name) override;
  http::Awaitable<Result<RemoteObject>> get(std::string name, GetOptions options,
                                            Sink sink) override;
  http::Awaitable<Result<RemoteObject>> put(std::string name, uint64_t size,
                                            Source source) override;
  http::Awaitable<Status> remove(std::string name) override;
  http::Awaitable<Result<RemotePage>> list(std::string prefix, std::string token,
                                           size_t limit) override;

 private:
  using Try = std::function<http::Awaitable<Result<http::ClientResponse>>()>;
  S3Backend(std::shared_ptr<http::Client> client, S3Options options, http::Endpoint endpoint);
  // A signed request for `name` (empty: the bucket) with `query` (encoded).
  http::ClientRequest request(http::Method method, std::string_view name, std::string_view query,
                              http::Headers headers = {}) const;
  // One call with a small body, retried; the response is returned whatever its status.
  http::Awaitable<Result<http::ClientResponse>> call(http::Method method, std::string_view name,
                                                     std::string_view query, std::string body,
                                                     http::Headers headers = {});
  http::Awaitable<Result<RemoteObject>> put_single(std::string name, uint64_t size,
                                                   const Source& source);
  http::Awaitable<Result<RemoteObject>> put_multipart(std::string name, uint64_t size,
                                                      const Source& source);
  // Streams `length` bytes from `source` at `offset` as the body of `request`.
  http::Awaitable<Result<http::ClientResponse>> send_body(http::ClientRequest request,
                                                          uint64_t offset, uint64_t length,
                                                          const Source& source);
  // Runs `attempt` again while it fails in a way worth retrying (connection failures,
  // 5xx, 429, SlowDown, RequestTimeout), up to options_.attempts, with backoff; returns the
  // last answer whatever its status.
  http::Awaitable<Result<http::ClientResponse>> retry(Try attempt);
  http::Awaitable<void> backoff(int attempt);

  std::shared_ptr<http::Client> client_;
  const S3Options options_;
  const http::Endpoint endpoint_;
};

}  // namespace silo::backend
