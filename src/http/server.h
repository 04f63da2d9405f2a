#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/message.h"

namespace silo::http {

// Writes one response. Either send() once, or begin() then write()/send_file() calls
// whose lengths add up to the length given to begin() (or any total when it was nullopt:
// the body is then chunked). Not thread-safe: the handler's coroutine owns it.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A whole response whose body is in memory; sets Content-Length (HEAD: headers only).
  virtual Awaitable<Status> send(ResponseHead head, std::string body) = 0;
  virtual Awaitable<Status> begin(ResponseHead head, std::optional<uint64_t> content_length) = 0;
  virtual Awaitable<Status> write(std::span<const char> data) = 0;
  // Sends `length` bytes of the open file `fd` from `offset` with sendfile(2); the fd is
  // borrowed, not closed. Requires: begin() was called with a known content length.
  virtual Awaitable<Status> send_file(int fd, uint64_t offset, uint64_t length) = 0;
  virtual bool has_begun() const = 0;
  // Ends a begun response as failed: the connection closes without ending the body (a
  // chunked body gets no last chunk, a sized one stays short), so that no client takes
  // what it got for the whole answer. Later writes fail.
  virtual void cut() = 0;
};

// One request being served: its head, its body stream and the response writer.
// Lives until the handler's coroutine returns.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual const RequestHead& request() const = 0;
  virtual BodyReader& body() = 0;
  virtual ResponseWriter& response() = 0;
  virtual boost::asio::any_io_executor executor() = 0;
};

// Handles one request. After it returns the server finishes the exchange: a response never
// begun becomes 500; a streamed response shorter than announced, or a request body not
// read to its end (beyond a small drain allowance), closes the connection.
using Handler = std::function<Awaitable<void>(Exchange&)>;

struct ServerLimits {
  size_t max_header_bytes = 16 * 1024;   // 431 past this
  // Beyond it, the connection that has waited longest for a request's head is closed to
  // make room; when all are serving requests, a new one gets 503 SlowDown.
  size_t max_connections = 4096;
  // Milliseconds rather than seconds so tests can use short limits; assigning seconds
  // still compiles.
  std::chrono::milliseconds idle_timeout{60000};       // keep-alive wait for the next request
  std::chrono::milliseconds header_timeout{30000};     // from first byte to end of the head
  std::chrono::milliseconds body_idle_timeout{60000};  // no byte of body in or out this long
  // Requests served at once. Beyond, a request gets 503 SlowDown (Retry-After: 1) without
  // reaching the handler, unless ServerOptions::passes_request_cap lets it through.
  size_t max_requests_in_flight = 1024;
  size_t drain_allowance_bytes = 1024 * 1024;  // unread request body drained to keep-alive
  std::chrono::milliseconds drain_timeout{20000};      // stop(): wait for in-flight requests
};

// HTTPS on the server's port: with a certificate set the port speaks TLS only (1.2 and
// later). Files are PEM and are read at create() and at each reload_tls().
struct ServerTls {
  std::string cert_file;  // the certificate chain, leaf first; empty: plain HTTP
  std::string key_file;
  // The CAs client certificates must chain to; read only when require_client_cert.
  std::string ca_file;
  // Mutual TLS: only a client that shows a certificate the CA file signed is served. A
  // certificate it did not sign fails the handshake; a client that shows none reaches only
  // `paths_without_cert` (a node's /v1/health, for probes that show none: kubelet's), and
  // anything else answers 403 and closes.
  bool require_client_cert = false;
  std::vector<std::string> paths_without_cert = {};
  bool is_enabled() const { return !cert_file.empty(); }
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: the kernel picks one; port() tells which
  ServerLimits limits;
  // Headers every answer's head carries, over the handler's of the same name (a node's
  // X-Silo-Node-Map-Version, which smart clients watch). Called for each head, from any
  // io thread: it must be thread-safe and cheap. Empty: none.
  std::function<void(Headers&)> stamp = {};
  ServerTls tls = {};
  // Requests that max_requests_in_flight must not refuse (a node's calls to another: a
  // busy node must still answer its peers' keepalives). Called from any io thread:
  // thread-safe and cheap. Empty: none.
  std::function<bool(const RequestHead&)> passes_request_cap = {};
};

// The HTTP/1.1 server: accepts connections on one io_context (run by a few threads),
// one coroutine per connection, keep-alive, streamed bodies both ways. Malformed heads
// get 400, oversized heads 431, without reaching the handler.
class Server {
 public:
  static Result<std::unique_ptr<Server>> create(boost::asio::io_context& io, ServerOptions options,
                                                Handler handler);
  virtual ~Server() = default;
  virtual uint16_t port() const = 0;
  // Starts accepting. Call once.
  virtual void start() = 0;
  // Stops accepting, closes idle keep-alive connections, lets in-flight requests finish
  // (up to drain_timeout, then closes them). Completes when no connection is left.
  virtual Awaitable<void> stop() = 0;
  virtual size_t connection_count() const = 0;
  // Requests being served now that count against max_requests_in_flight, and how many
  // were refused for it so far.
  virtual size_t requests_in_flight() const = 0;
  virtual uint64_t requests_refused() const = 0;
  virtual bool is_tls() const = 0;
  // Reads the TLS files again (a renewed certificate): connections accepted from now on
  // use them, open ones keep theirs. On error (kFailedPrecondition naming the file) the
  // server keeps what it had. Thread-safe.
  virtual Status reload_tls() = 0;
};

}  // namespace silo::http
