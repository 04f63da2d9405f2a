#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http/message.h"
#include "http/server.h"

namespace silo::http {

// An "http://host:port" or "https://host:port" URL split into its parts.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  bool is_tls = false;  // https://: TLS, the server's certificate verified for `host`
  // "http://host[:port]" (80) or "https://host[:port]" (443).
  static Result<Endpoint> parse(std::string_view url);
  std::string to_string() const;  // "host:port"
  std::string url() const;        // "http://host:port" or "https://host:port"
};

struct ClientRequest {
  Method method = Method::kGet;
  std::string target;  // already percent-encoded path and query
  Headers headers;     // Host, Content-Length and Connection are set by the client
  // The Host header to send instead of the endpoint's "host:port" (a relay keeps the
  // client's, which its SigV4 signature covers).
  std::optional<std::string> host;
};

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::optional<uint64_t> content_length;
  std::string body;  // filled by Client::call()
};

// A request in flight whose bodies are streamed: write() the request body, then
// finish() to get the response head, then read body() to its end. Destroying it before
// the response body ended closes the connection; otherwise it goes back to the pool.
class Call {
 public:
  virtual ~Call() = default;
  virtual Awaitable<Status> write(std::span<const char> data) = 0;
  // Ends the request body (it must match the announced length) and reads the head.
  virtual Awaitable<Result<ClientResponse>> finish() = 0;
  // After write() failed because the server stopped reading the body: the answer it
  // sent before it closed (a refusal such as 507 or 404, which a server may send before
  // the body), when there is one; else the error. In place of finish().
  virtual Awaitable<Result<ClientResponse>> finish_early() = 0;
  virtual BodyReader& body() = 0;
  // Sends the rest of the response body to `out`, which was begun with this response's
  // Content-Length: large bodies move socket to socket with splice(2) through a pipe
  // (no copy through user space) when `out` is this module's server; others go through
  // a buffer. Errors: the upstream's (kUnavailable, kDeadlineExceeded) or the client's;
  // either way the response is cut short and its connection closes.
  virtual Awaitable<Status> relay_body(ResponseWriter& out) = 0;
  // relay_body() for the next `length` bytes of the body only, for a caller that
  // interleaves parts of several bodies into one response (a coded GET's cells). The
  // body must have that many bytes left (kFailedPrecondition otherwise).
  virtual Awaitable<Status> relay_body_part(ResponseWriter& out, uint64_t length) = 0;
};

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds io_timeout{30000};  // no progress for this long fails the call
  size_t max_idle_per_endpoint = 32;
  size_t max_response_header_bytes = 64 * 1024;
  // Called on every request, with the endpoint it goes to, before its head is sent (to
  // sign it). Must be thread-safe.
  std::function<void(const Endpoint&, ClientRequest&)> decorate;
  // PEM file of the certificate authorities that https endpoints' certificates must chain
  // to; empty: the system's (OpenSSL's default paths).
  std::string tls_ca_file;
  // PEM certificate (chain) and key shown to https servers that ask for one (mutual TLS;
  // a node shows its own). Empty: none.
  std::string tls_cert_file;
  std::string tls_key_file;
};

// HTTP/1.1 client with a keep-alive connection pool per endpoint. Thread-safe: calls may
// come from any coroutine on any thread of the io_context; each Call runs on the
// executor it was started from. A pooled connection found dead on first write is
// replaced once, transparently, for requests that have not sent body bytes yet.
class Client {
 public:
  static std::shared_ptr<Client> create(boost::asio::any_io_executor executor, ClientOptions options);
  virtual ~Client() = default;

  // Sends `request` with `body` and reads the whole response body (kResourceExhausted past
  // `max_body` bytes). Errors: kUnavailable (connect refused, reset), kDeadlineExceeded.
  virtual Awaitable<Result<ClientResponse>> call(const Endpoint& endpoint, ClientRequest request,
                                                 std::string body, size_t max_body) = 0;
  // Starts a streamed call with a body of `content_length` bytes (nullopt: chunked).
  virtual Awaitable<Result<std::unique_ptr<Call>>> start(const Endpoint& endpoint,
                                                         ClientRequest request,
                                                         std::optional<uint64_t> content_length) = 0;
  // Reads the CA, certificate and key files again (a renewed certificate, a new CA):
  // new connections use them, pooled ones keep theirs. Bad files: an error, and the
  // previous ones stay in use.
  virtual Status reload_tls() = 0;
};

}  // namespace silo::http
