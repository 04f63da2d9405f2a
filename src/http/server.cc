#include "http/server.h"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include "base/log.h"
#include "base/mutex.h"
#include "http/detail/beast_io.h"

namespace silo::http {
namespace {

using detail::ArmedDeadline;
using detail::ErrorCode;
using detail::IoDeadline;
using detail::io_status;
using detail::redirect;
using detail::tcp;
namespace asio = detail::asio;
namespace beast = detail::beast;
namespace bhttp = detail::bhttp;
using detail::SocketStream;
using detail::TlsSocket;
using SteadyClock = std::chrono::steady_clock;
using TlsContext = asio::ssl::context;
using RequestParser = bhttp::request_parser<bhttp::buffer_body>;

// Bounds on the lingering close after an error reply: reading the client's pending input
// until its FIN keeps the kernel from answering it with a RST that can destroy our reply
// before the client has read it. Large enough for a client that sends a whole large body
// before it reads the answer (a 507 to a PUT of many MiB; nginx lingers up to 30 s).
constexpr std::chrono::milliseconds kLingerTimeout{5000};
constexpr size_t kLingerBytes = 256 * 1024 * 1024;

class Connection;

// S3's answer when it wants fewer requests (with 503), saying why.
std::string slow_down_body(std::string_view why) {
  return fmt::format(R"(<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce )"
                     R"(your request rate: {}</Message></Error>)",
                     why);
}

// The server side of TLS from the configured files: TLS 1.2 and later, the key checked
// against the certificate, client certificates demanded when so configured.
Result<std::shared_ptr<TlsContext>> make_tls_context(const ServerTls& tls) {
  auto context = std::make_shared<TlsContext>(TlsContext::tls_server);
  ErrorCode ec;
  context->set_options(TlsContext::default_workarounds | TlsContext::no_sslv2 | TlsContext::no_sslv3 |
                           TlsContext::no_tlsv1 | TlsContext::no_tlsv1_1 | TlsContext::single_dh_use,
                       ec);
  // OpenSSL moves the record layer into the kernel when it can (a socket BIO, the kernel's
  // tls module, a cipher it supports); TlsSocket::is_ktls_send() tells per connection.
  SSL_CTX_set_options(context->native_handle(), SSL_OP_ENABLE_KTLS);
  context->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) return Status::failed_precondition("TLS certificate {}: {}", tls.cert_file, ec.message());
  context->use_private_key_file(tls.key_file, TlsContext::pem, ec);
  if (ec) return Status::failed_precondition("TLS key {}: {}", tls.key_file, ec.message());
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    return Status::failed_precondition("TLS key {} does not match the certificate {}", tls.key_file, tls.cert_file);
  }
  if (tls.require_client_cert) {
    if (tls.ca_file.empty()) {
      return Status::failed_precondition("TLS client certificates are required but no CA file checks them");
    }
    context->load_verify_file(tls.ca_file, ec);
    if (ec) return Status::failed_precondition("TLS CA file {}: {}", tls.ca_file, ec.message());
    // A certificate shown is checked in the handshake; none shown is refused per request
    // (serve_one), so that probes may reach paths_without_cert.
    context->set_verify_mode(asio::ssl::verify_peer, ec);
  }
  return context;
}

// State shared by the Server object, the accept loop and every connection coroutine, so
// none of them dangles if another goes first.
struct ServerState {
  ServerState(asio::io_context& io_context, ServerOptions server_options, Handler server_handler)
      : io(io_context),
        acceptor(asio::make_strand(io_context)),
        options(std::move(server_options)),
        handler(std::move(server_handler)) {}

  asio::io_context& io;
  tcp::acceptor acceptor;  // used on its strand once start() ran
  const ServerOptions options;
  const Handler handler;
  std::atomic<bool> is_stopping{false};
  std::atomic<size_t> requests_in_flight{0};  // counted ones (max_requests_in_flight)
  std::atomic<uint64_t> requests_refused{0};
  // What new connections handshake with; null: plain HTTP. Replaced by reload_tls().
  mutable Mutex tls_mu;
  std::shared_ptr<TlsContext> tls_context GUARDED_BY(tls_mu);
  // Whether the last connection to finish its handshake sends with kernel TLS (-1: none
  // yet): a change is logged, so the log says which send path TLS takes on this node.
  std::atomic<int> is_ktls_send{-1};
  mutable Mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> connections GUARDED_BY(mu);
  uint64_t next_connection_id GUARDED_BY(mu) = 0;
};

// One accepted TCP connection. Its socket, timer and coroutine all run on one strand, so
// stop() reaches it only by posting to that strand. Serves requests one after another.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerState> server, tcp::socket socket, uint64_t id,
             std::shared_ptr<TlsContext> tls_context)
      : server_(std::move(server)),
        socket_(std::move(socket)),
        tls_context_(std::move(tls_context)),
        deadline_(socket_.get_executor(), socket_),
        id_(id) {}

  static Awaitable<void> run(std::shared_ptr<Connection> self);

  // Both run on the connection's strand (post them there).
  void close_if_idle() {
    if (is_idle_) close();
  }
  // Closes the connection if it is still waiting for a request's head (see waiting_since).
  void close_if_waiting() {
    if (waiting_since() != 0) {
      close();
    } else {
      is_evicted_ = false;  // it got its request's head in time: it may be picked again
    }
  }
  // Picks it to give way (once): false when another accept picked it already.
  bool pick_to_evict() { return !is_evicted_.exchange(true); }
  bool is_evicted() const { return is_evicted_.load(); }
  // When the connection began to wait for a request's head (idle between requests, or its
  // head still trickling in), in steady-clock nanoseconds; 0 while it serves a request.
  // Read by the accept loop: at the connection limit the longest waiting one gives way.
  int64_t waiting_since() const { return waiting_since_.load(std::memory_order_relaxed); }
  void close() {
    is_closed_ = true;
    ErrorCode ec;
    socket_.close(ec);
  }

  const ServerLimits& limits() const { return server_->options.limits; }
  const std::function<void(Headers&)>& stamp() const { return server_->options.stamp; }
  bool is_stopping() const { return server_->is_stopping.load(); }
  tcp::socket& socket() { return socket_; }
  // Where the request's and response's bytes go: the socket, or TLS over it.
  SocketStream& stream() { return stream_; }
  bool is_tls() const { return tls_context_ != nullptr; }
  // TLS over the socket once the handshake is done; null for plain HTTP.
  TlsSocket* tls() { return tls_.get(); }
  IoDeadline& deadline() { return deadline_; }
  beast::flat_buffer& read_buffer() { return buffer_; }

 private:
  Awaitable<void> serve();
  // The TLS handshake within the header timeout; false: the connection is done.
  Awaitable<bool> handshake();
  // Waits for the next request's first bytes (idle_timeout); false: the connection is done.
  Awaitable<bool> wait_for_request();
  // Serves the request whose head `parser` holds; returns whether to keep the connection.
  Awaitable<bool> serve_one(RequestParser& parser);
  // Answers `status` and closes: for requests no handler may see. `body` (XML, as S3
  // clients read errors) is optional.
  Awaitable<void> reply_error(int status, std::string_view reason, std::string_view body = "");
  Awaitable<void> linger_close();
  void unregister();

  std::shared_ptr<ServerState> server_;
  tcp::socket socket_;
  const std::shared_ptr<TlsContext> tls_context_;  // null: plain HTTP
  std::unique_ptr<TlsSocket> tls_;                 // after socket_: destroyed first
  SocketStream stream_{socket_};
  std::string remote_address_;  // filled by the first request
  IoDeadline deadline_;
  beast::flat_buffer buffer_;
  const uint64_t id_;
  bool has_client_cert_ = false;  // TLS: the client showed a certificate the CA signed
  bool is_idle_ = false;  // waiting for a request: stop() may close it
  bool is_closed_ = false;
  std::atomic<int64_t> waiting_since_{SteadyClock::now().time_since_epoch().count()};
  std::atomic<bool> is_evicted_{false};
};

// One request: the Exchange handed to the handler, and its body reader and response
// writer. Lives in the connection coroutine's frame for the duration of one request.
class ServerExchange final : public Exchange, public BodyReader, public ResponseWriter, public detail::RawResponseSink {
 public:
  ServerExchange(Connection& connection, RequestParser& parser, RequestHead head)
      : connection_(connection), parser_(parser), body_stream_(parser), head_(std::move(head)) {
    is_head_ = head_.method == Method::kHead;
    version_ = parser_.get().version();
    wants_keep_alive_ = parser_.get().keep_alive();
  }

  const RequestHead& request() const override { return head_; }
  BodyReader& body() override { return *this; }
  ResponseWriter& response() override { return *this; }
  boost::asio::any_io_executor executor() override { return connection_.socket().get_executor(); }

  Awaitable<Result<size_t>> read(std::span<char> buffer) override;
  bool is_done() const override { return is_body_done_; }

  Awaitable<Status> send(ResponseHead head, std::string body) override;
  Awaitable<Status> begin(ResponseHead head, std::optional<uint64_t> content_length) override;
  Awaitable<Status> write(std::span<const char> data) override;
  Awaitable<Status> send_file(int fd, uint64_t offset, uint64_t length) override;
  // send_file() over TLS where the kernel encrypts (kTLS): SSL_sendfile.
  Awaitable<Status> send_file_ktls(int fd, uint64_t offset, uint64_t length);
  // send_file() over TLS sealed in user space: the bytes come up to be encrypted.
  Awaitable<Status> send_file_copied(int fd, uint64_t offset, uint64_t length);

  bool takes_raw_bytes() const override { return !connection_.is_tls(); }
  Awaitable<Result<int>> begin_raw(uint64_t length) override {
    if (state_ != ResponseState::kStreaming || !response_length_ || is_head_) {
      co_return Status::failed_precondition("raw body bytes need begin() with a content length, not HEAD");
    }
    if (has_response_failed_) co_return Status::unavailable("response failed earlier");
    if (response_written_ + length > *response_length_) {
      co_return Status::invalid_argument("response body longer than the {} bytes announced", *response_length_);
    }
    CO_RETURN_IF_ERROR(co_await flush_head(/*more=*/true));
    co_return connection_.socket().native_handle();
  }
  Awaitable<Status> wait_writable() override;
  void wrote_raw(uint64_t n) override { response_written_ += n; }
  Status fail_raw(Status status) override { return fail_response(std::move(status)); }
  bool has_begun() const override { return state_ != ResponseState::kNotBegun; }
  void cut() override { has_response_failed_ = true; }

  // Completes the exchange after the handler returned; returns whether the connection can
  // serve another request.
  Awaitable<bool> finish();
  // True once the whole request body was received (by the handler or by draining).
  bool is_body_received() const { return body_stream_.is_done(); }

 private:
  enum class ResponseState { kNotBegun, kStreaming, kDone };

  // Whether the response must announce Connection: close, decided when its head is built.
  bool must_close_after_response() const;
  template <typename Body>
  void fill_head(bhttp::response<Body>& response, const ResponseHead& head);
  Awaitable<Status> write_buffers(const std::vector<asio::const_buffer>& buffers, size_t size);
  // Sends the head begin() held back; `more` (MSG_MORE) lets it leave in one segment with
  // the body bytes that follow, as nginx's tcp_nopush does.
  Awaitable<Status> flush_head(bool more);
  Awaitable<bool> drain_body();
  Status fail_response(Status status) {
    has_response_failed_ = true;
    return status;
  }

  Connection& connection_;
  RequestParser& parser_;
  detail::BodyStream<true> body_stream_;
  RequestHead head_;
  bool is_head_ = false;
  unsigned version_ = 11;
  bool wants_keep_alive_ = true;

  bool is_body_done_ = false;
  bool has_body_failed_ = false;
  bool is_continue_sent_ = false;
  uint64_t body_bytes_read_ = 0;

  ResponseState state_ = ResponseState::kNotBegun;
  std::optional<uint64_t> response_length_;
  uint64_t response_written_ = 0;
  bool is_chunked_ = false;
  bool closes_after_response_ = false;
  bool has_response_failed_ = false;
  // begin()'s head, held until the first body bytes go out with it: a head sent on its
  // own costs one more trip through the TCP stack per response (a quarter of a target's
  // CPU on 100 KiB GETs).
  std::string pending_head_;
};

Awaitable<Result<size_t>> ServerExchange::read(std::span<char> buffer) {
  if (is_body_done_) co_return size_t{0};
  if (has_body_failed_) co_return Status::unavailable("request body failed earlier");
  if (head_.expects_continue && !is_continue_sent_ && !body_stream_.is_done()) {
    // After a final response the client is told to close instead of sending the body.
    if (has_begun()) {
      co_return Status::failed_precondition("request body never sent: response already begun");
    }
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    is_continue_sent_ = true;
    ErrorCode ec;
    {
      ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
      co_await asio::async_write(connection_.stream(), asio::buffer(kContinue), redirect(ec));
    }
    if (ec) {
      has_body_failed_ = true;
      co_return io_status(ec, connection_.deadline().has_expired(), "sending 100 Continue");
    }
  }
  Result<size_t> n = co_await body_stream_.read(connection_.stream(), connection_.read_buffer(),
                                                buffer, connection_.deadline(),
                                                connection_.limits().body_idle_timeout);
  if (!n) {
    has_body_failed_ = true;
    co_return detail::client_body_error(std::move(n).error());
  }
  if (*n == 0 && !buffer.empty()) is_body_done_ = true;
  body_bytes_read_ += *n;
  co_return n;
}

bool ServerExchange::must_close_after_response() const {
  if (!wants_keep_alive_ || connection_.is_stopping()) return true;
  if (body_stream_.is_done()) return false;
  // A client waiting for 100 Continue has not sent the body: it must not send it now.
  if (head_.expects_continue && !is_continue_sent_) return true;
  if (has_body_failed_) return true;
  if (head_.content_length) {
    const uint64_t unread = *head_.content_length - std::min(*head_.content_length, body_bytes_read_);
    return unread > connection_.limits().drain_allowance_bytes;
  }
  return false;
}

template <typename Body>
void ServerExchange::fill_head(bhttp::response<Body>& response, const ResponseHead& head) {
  response.result(static_cast<unsigned>(head.status));
  response.version(version_);
  detail::copy_headers(head.headers, response);
  if (const auto& stamp = connection_.stamp()) {
    Headers stamped;
    stamp(stamped);
    for (const auto& [name, value] : stamped.fields()) response.set(name, value);
  }
  closes_after_response_ = must_close_after_response();
}

Awaitable<Status> ServerExchange::send(ResponseHead head, std::string body) {
  if (has_begun()) co_return Status::failed_precondition("response already begun");
  state_ = ResponseState::kDone;
  bhttp::response<bhttp::buffer_body> response;
  fill_head(response, head);
  response.content_length(body.size());
  response.keep_alive(!closes_after_response_);
  response_length_ = body.size();
  response.body().data = is_head_ || body.empty() ? nullptr : body.data();
  response.body().size = is_head_ ? 0 : body.size();
  response.body().more = false;
  bhttp::response_serializer<bhttp::buffer_body> serializer(response);
  ErrorCode ec;
  {
    ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
    co_await bhttp::async_write(connection_.stream(), serializer, redirect(ec));
  }
  if (ec) {
    co_return fail_response(io_status(ec, connection_.deadline().has_expired(), "sending response"));
  }
  response_written_ = body.size();
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::begin(ResponseHead head, std::optional<uint64_t> content_length) {
  if (has_begun()) co_return Status::failed_precondition("response already begun");
  state_ = ResponseState::kStreaming;
  bhttp::response<bhttp::empty_body> response;
  fill_head(response, head);
  response_length_ = content_length;
  if (content_length) {
    response.content_length(*content_length);
  } else if (!is_head_ && version_ >= 11) {
    response.chunked(true);
    is_chunked_ = true;
  } else if (!is_head_) {
    closes_after_response_ = true;  // HTTP/1.0 without a length: the close ends the body
  }
  response.keep_alive(!closes_after_response_);
  // Serialized by hand (status line, fields, blank line), as Beast would write it.
  pending_head_ = fmt::format("HTTP/{}.{} {} ", response.version() / 10, response.version() % 10,
                              response.result_int());
  pending_head_ += response.reason();
  pending_head_ += "\r\n";
  for (const auto& field : response.base()) {
    pending_head_ += field.name_string();
    pending_head_ += ": ";
    pending_head_ += field.value();
    pending_head_ += "\r\n";
  }
  pending_head_ += "\r\n";
  if (is_head_ || (content_length && *content_length == 0)) co_return co_await flush_head(/*more=*/false);
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::flush_head(bool more) {
  if (pending_head_.empty()) co_return Status::ok();
  const std::string head = std::move(pending_head_);
  pending_head_.clear();
  if (connection_.is_tls()) {  // no MSG_MORE through TLS: the head is a record of its own
    std::vector<asio::const_buffer> buffers;
    buffers.push_back(asio::buffer(head));
    co_return co_await write_buffers(buffers, 0);
  }
  const auto flags = static_cast<tcp::socket::message_flags>(more ? MSG_MORE : 0);
  ErrorCode ec;
  for (size_t sent = 0; sent < head.size() && !ec;) {
    ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
    sent += co_await connection_.socket().async_send(asio::buffer(head.data() + sent, head.size() - sent), flags,
                                                     redirect(ec));
  }
  if (ec) {
    co_return fail_response(io_status(ec, connection_.deadline().has_expired(), "sending response head"));
  }
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::write_buffers(const std::vector<asio::const_buffer>& buffers,
                                                size_t size) {
  ErrorCode ec;
  {
    ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
    co_await asio::async_write(connection_.stream(), buffers, redirect(ec));
  }
  if (ec) {
    co_return fail_response(
        io_status(ec, connection_.deadline().has_expired(), "sending response body"));
  }
  response_written_ += size;
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::write(std::span<const char> data) {
  if (state_ != ResponseState::kStreaming) {
    co_return Status::failed_precondition("write() needs begin() first");
  }
  if (has_response_failed_) co_return Status::unavailable("response failed earlier");
  if (is_head_ || data.empty()) co_return Status::ok();
  if (response_length_ && response_written_ + data.size() > *response_length_) {
    co_return Status::invalid_argument("response body longer than the {} bytes announced",
                                       *response_length_);
  }
  // Buffers are assigned one by one: GCC 12 miscompiles braced lists inside coroutines.
  std::vector<asio::const_buffer> buffers;
  const std::string head = std::move(pending_head_);  // goes out with the first bytes
  pending_head_.clear();
  if (!head.empty()) buffers.push_back(asio::buffer(head));
  const std::string size_line = detail::chunk_size_line(data.size());
  if (is_chunked_) buffers.push_back(asio::buffer(size_line));
  buffers.push_back(asio::buffer(data.data(), data.size()));
  if (is_chunked_) buffers.push_back(asio::buffer("\r\n", 2));
  co_return co_await write_buffers(buffers, data.size());
}

Awaitable<Status> ServerExchange::send_file(int fd, uint64_t offset, uint64_t length) {
  if (state_ != ResponseState::kStreaming || !response_length_) {
    co_return Status::failed_precondition("send_file() needs begin() with a content length");
  }
  if (has_response_failed_) co_return Status::unavailable("response failed earlier");
  if (is_head_) co_return Status::ok();
  if (response_written_ + length > *response_length_) {
    co_return Status::invalid_argument("response body longer than the {} bytes announced",
                                       *response_length_);
  }
  // One co_await per branch: GCC 12 destroys the wrong temporary of a conditional
  // operator over two awaitables (docs/adr/0003).
  if (connection_.is_tls() && connection_.tls()->is_ktls_send()) co_return co_await send_file_ktls(fd, offset, length);
  if (connection_.is_tls()) co_return co_await send_file_copied(fd, offset, length);
  CO_RETURN_IF_ERROR(co_await flush_head(/*more=*/true));
  tcp::socket& socket = connection_.socket();
  auto file_offset = static_cast<off_t>(offset);
  uint64_t remaining = length;
  while (remaining > 0) {
    constexpr uint64_t kMaxPerCall = 1ULL << 30;
    const ssize_t n = ::sendfile(socket.native_handle(), fd, &file_offset,
                                 static_cast<size_t>(std::min(remaining, kMaxPerCall)));
    if (n > 0) {
      remaining -= static_cast<uint64_t>(n);
      response_written_ += static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0) {
      co_return fail_response(Status::data_loss("file ended {} bytes early", remaining));
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN) {
      ErrorCode ec;
      {
        ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
        co_await socket.async_wait(tcp::socket::wait_write, redirect(ec));
      }
      if (ec) {
        co_return fail_response(
            io_status(ec, connection_.deadline().has_expired(), "sending file"));
      }
      continue;
    }
    if (err == EPIPE || err == ECONNRESET || err == EBADF) {
      co_return fail_response(Status::unavailable("sending file: {}", std::strerror(err)));
    }
    co_return fail_response(Status::from_errno(err, "sendfile"));
  }
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::send_file_ktls(int fd, uint64_t offset, uint64_t length) {
  CO_RETURN_IF_ERROR(co_await flush_head(/*more=*/true));  // a record of its own, as plain TLS
  while (length > 0) {
    constexpr uint64_t kMaxPerCall = 1ULL << 30;
    ErrorCode ec;
    size_t n = 0;
    {
      ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
      n = co_await connection_.tls()->async_sendfile(fd, static_cast<off_t>(offset),
                                                     static_cast<size_t>(std::min(length, kMaxPerCall)), redirect(ec));
    }
    if (ec) co_return fail_response(io_status(ec, connection_.deadline().has_expired(), "sending file"));
    if (n == 0) co_return fail_response(Status::data_loss("file ended {} bytes early", length));
    offset += n;
    length -= n;
    response_written_ += n;
  }
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::send_file_copied(int fd, uint64_t offset, uint64_t length) {
  // Without kernel TLS the file's bytes come up to user space to be sealed.
  if (length == 0) co_return Status::ok();  // a held head goes out at finish()
  // The held head goes in front of the first bytes, in the same TLS record when it fits.
  constexpr size_t kChunk = 256 * 1024;
  size_t head_size = pending_head_.size();
  std::vector<char> chunk(head_size + static_cast<size_t>(std::min<uint64_t>(length, kChunk)));
  std::memcpy(chunk.data(), pending_head_.data(), head_size);
  pending_head_.clear();
  while (length > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length, chunk.size() - head_size));
    const ssize_t n = ::pread(fd, chunk.data() + head_size, want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) co_return fail_response(Status::from_errno(errno, "pread"));
    if (n == 0) co_return fail_response(Status::data_loss("file ended {} bytes early", length));
    std::vector<asio::const_buffer> buffers;
    buffers.push_back(asio::buffer(chunk.data(), head_size + static_cast<size_t>(n)));
    CO_RETURN_IF_ERROR(co_await write_buffers(buffers, static_cast<uint64_t>(n)));
    head_size = 0;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  co_return Status::ok();
}

Awaitable<Status> ServerExchange::wait_writable() {
  ErrorCode ec;
  {
    ArmedDeadline armed(connection_.deadline(), connection_.limits().body_idle_timeout);
    co_await connection_.socket().async_wait(tcp::socket::wait_write, redirect(ec));
  }
  if (ec) co_return fail_response(io_status(ec, connection_.deadline().has_expired(), "sending body"));
  co_return Status::ok();
}

Awaitable<bool> ServerExchange::drain_body() {
  std::vector<char> scratch(16 * 1024);
  uint64_t drained = 0;
  while (!is_body_done_) {
    Result<size_t> n = co_await read(std::span<char>(scratch));
    if (!n) co_return false;
    drained += *n;
    if (drained > connection_.limits().drain_allowance_bytes) co_return false;
  }
  co_return true;
}

Awaitable<bool> ServerExchange::finish() {
  if (state_ == ResponseState::kNotBegun) {
    Status sent = co_await send(ResponseHead{.status = 500, .headers = {}}, "");
    if (!sent.is_ok()) co_return false;
  }
  if (has_response_failed_) co_return false;
  if (state_ == ResponseState::kStreaming && !(co_await flush_head(/*more=*/false)).is_ok()) co_return false;
  if (state_ == ResponseState::kStreaming && !is_head_) {
    if (is_chunked_) {
      static constexpr std::string_view kLastChunk = "0\r\n\r\n";
      std::vector<asio::const_buffer> buffers;
      buffers.push_back(asio::buffer(kLastChunk));
      Status sent = co_await write_buffers(buffers, 0);
      if (!sent.is_ok()) co_return false;
    } else if (!response_length_ || response_written_ < *response_length_) {
      co_return false;  // the close tells the client the body ended (or was cut short)
    }
  }
  if (closes_after_response_) co_return false;
  if (!body_stream_.is_done()) {
    if (!co_await drain_body()) co_return false;
  }
  co_return true;
}

Awaitable<void> Connection::run(std::shared_ptr<Connection> self) {
  co_await self->serve();
  self->unregister();
}

void Connection::unregister() {
  MutexLock lock(server_->mu);
  server_->connections.erase(id_);
}

Awaitable<void> Connection::serve() {
  ErrorCode ec;
  socket_.set_option(tcp::no_delay(true), ec);
  // sendfile(2) needs a non-blocking fd so that a slow client parks the coroutine, not
  // the io thread.
  socket_.native_non_blocking(true, ec);
  if (ec) {
    SILO_LOG_WARN("http: cannot make socket non-blocking: {}", ec.message());
    close();
    co_return;
  }
  if (tls_context_ && !co_await handshake()) co_return;
  while (!is_closed_ && !is_stopping()) {
    if (waiting_since_.load(std::memory_order_relaxed) == 0) {
      waiting_since_.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
    }
    if (buffer_.size() == 0 && !co_await wait_for_request()) break;
    RequestParser parser;
    parser.header_limit(static_cast<uint32_t>(
        std::min<size_t>(limits().max_header_bytes, std::numeric_limits<uint32_t>::max())));
    parser.body_limit(detail::kNoBodyLimit);
    {
      ArmedDeadline armed(deadline_, limits().header_timeout);
      co_await bhttp::async_read_header(stream_, buffer_, parser, redirect(ec));
    }
    if (ec) {
      if (is_closed_ || deadline_.has_expired()) break;
      if (ec == bhttp::error::header_limit) {
        co_await reply_error(431, "Request Header Fields Too Large");
      } else if (io_status(ec, false, "").code() == Code::kInvalidArgument) {
        co_await reply_error(400, "Bad Request");
      }
      break;
    }
    waiting_since_.store(0, std::memory_order_relaxed);
    if (!co_await serve_one(parser)) break;
  }
  if (!is_closed_) {
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    close();
  }
}

Awaitable<bool> Connection::handshake() {
  Result<std::unique_ptr<TlsSocket>> tls = TlsSocket::create(socket_, tls_context_->native_handle());
  if (!tls) {
    SILO_LOG_WARN("http: {}", tls.status().message());
    close();
    co_return false;
  }
  tls_ = std::move(tls).value();
  stream_ = SocketStream(socket_, tls_.get());
  ErrorCode ec;
  {
    // Counts as waiting for a head: a client that stalls here gives way at the limit.
    ArmedDeadline armed(deadline_, limits().header_timeout);
    co_await tls_->async_handshake(redirect(ec));
  }
  if (!ec) {
    has_client_cert_ = SSL_get0_peer_certificate(tls_->native_handle()) != nullptr;
    const int is_ktls_send = tls_->is_ktls_send() ? 1 : 0;
    if (server_->is_ktls_send.exchange(is_ktls_send) != is_ktls_send) {
      SILO_LOG_INFO("http: TLS connections send {}", is_ktls_send == 1
                                                         ? "with kernel TLS (files by SSL_sendfile)"
                                                         : "sealed in user space (no kernel TLS: the kernel's tls "
                                                           "module is not loaded, or it lacks the cipher)");
    }
    co_return true;
  }
  // A plain-HTTP client, an untrusted client certificate, a scanner: its own problem.
  SILO_LOG_DEBUG("http: TLS handshake failed: {}", deadline_.has_expired() ? "timed out" : ec.message());
  close();
  co_return false;
}

Awaitable<bool> Connection::wait_for_request() {
  is_idle_ = true;
  ErrorCode ec;
  {
    ArmedDeadline armed(deadline_, limits().idle_timeout);
    if (tls_) {
      // Ciphertext already taken off the socket may hold the next request, so readiness
      // of the socket says nothing: read through TLS.
      const size_t n = co_await tls_->async_read_some(buffer_.prepare(16 * 1024), redirect(ec));
      buffer_.commit(n);
    } else {
      // With several io threads the reactor can report readiness from an event that
      // predates the wait; only real bytes (or EOF) may end the idle phase, else the
      // connection would sit in the head read, no longer closable as idle by stop().
      while (!ec && !is_closed_) {
        co_await socket_.async_wait(tcp::socket::wait_read, redirect(ec));
        char byte = 0;
        if (!ec && ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) break;
        if (!ec && errno != EAGAIN && errno != EWOULDBLOCK) break;  // the read reports it
      }
    }
  }
  is_idle_ = false;
  co_return !ec && !is_closed_;
}

Awaitable<bool> Connection::serve_one(RequestParser& parser) {
  Result<RequestHead> parsed = detail::to_request_head(parser);
  if (!parsed && parsed.status().code() == Code::kUnimplemented) {
    // The body's length is unknown, so the connection closes.
    co_await reply_error(501, "Not Implemented",
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NotImplemented</Code><Message>"
                         "A header you provided implies functionality that is not implemented: only the chunked "
                         "transfer coding is read</Message></Error>");
    co_return false;
  }
  if (!parsed) {
    co_await reply_error(400, "Bad Request");
    co_return false;
  }
  RequestHead head = std::move(parsed).value();
  const ServerTls& tls = server_->options.tls;
  if (tls_ && tls.require_client_cert && !has_client_cert_ &&
      std::find(tls.paths_without_cert.begin(), tls.paths_without_cert.end(), head.path) ==
          tls.paths_without_cert.end()) {
    co_await reply_error(403, "Forbidden",
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>"
                         "This node requires a client certificate (mutual TLS)</Message></Error>");
    co_return false;
  }
  if (remote_address_.empty()) {  // once per connection: getpeername(2) per request showed in profiles
    ErrorCode ec;
    const tcp::endpoint remote = socket_.remote_endpoint(ec);
    remote_address_ = ec ? "?" : remote.address().to_string();
  }
  head.remote_address = remote_address_;
  head.is_tls = is_tls();

  ServerExchange exchange(*this, parser, std::move(head));
  const auto& passes = server_->options.passes_request_cap;
  const bool is_counted = !passes || !passes(exchange.request());
  if (is_counted && server_->requests_in_flight.fetch_add(1) >= limits().max_requests_in_flight) {
    ++server_->requests_refused;
    ResponseHead refused{.status = 503, .headers = {}};
    refused.headers.set("Content-Type", "application/xml");
    refused.headers.set("Retry-After", "1");
    std::ignore = co_await exchange.response().send(
        std::move(refused),
        slow_down_body(fmt::format("this node serves its maximum of {} requests at once", limits().max_requests_in_flight)));
  } else {
    try {
      co_await server_->handler(exchange);
    } catch (const std::exception& e) {
      // Handlers must not throw; one that does still gets its 500 or a closed connection.
      SILO_LOG_ERROR("http: handler for {} threw: {}", exchange.request().target, e.what());
    } catch (...) {
      SILO_LOG_ERROR("http: handler for {} threw", exchange.request().target);
    }
  }
  const bool keep = co_await exchange.finish();
  if (is_counted) --server_->requests_in_flight;
  if (!keep && !is_closed_ && !exchange.is_body_received()) co_await linger_close();
  co_return keep;
}

Awaitable<void> Connection::reply_error(int status, std::string_view reason, std::string_view body) {
  const std::string reply =
      fmt::format("HTTP/1.1 {} {}\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n{}", status, reason,
                  body.empty() ? "" : "Content-Type: application/xml\r\n", body.size(), body);
  ErrorCode ec;
  {
    ArmedDeadline armed(deadline_, limits().body_idle_timeout);
    co_await asio::async_write(stream_, asio::buffer(reply), redirect(ec));
  }
  if (!ec) co_await linger_close();
}

Awaitable<void> Connection::linger_close() {
  ErrorCode ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  is_idle_ = true;  // stop() need not wait for a lingering close
  waiting_since_.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  std::vector<char> scratch(16 * 1024);
  size_t total = 0;
  const auto give_up_at = SteadyClock::now() + kLingerTimeout;
  while (!ec && !is_closed_ && total < kLingerBytes && SteadyClock::now() < give_up_at) {
    ArmedDeadline armed(deadline_, give_up_at - SteadyClock::now());
    total += co_await socket_.async_read_some(asio::buffer(scratch), redirect(ec));
  }
  close();
}

// Answers 503 SlowDown (as S3 does when it wants fewer requests) on a connection the
// server has no room for, and closes it. Best effort: a client that does not read it
// only sees the close.
void refuse_busy(tcp::socket& socket, size_t max_connections, bool is_tls) {
  const std::string body =
      slow_down_body(fmt::format("this node serves its maximum of {} connections, all busy", max_connections));
  const std::string answer = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\nRetry-After: 1\r\n"
      "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
      body.size(), body);
  ErrorCode ec;
  socket.non_blocking(true, ec);
  // Over TLS the answer would need a handshake first: the close alone tells the client.
  if (!ec && !is_tls) std::ignore = ::send(socket.native_handle(), answer.data(), answer.size(), MSG_NOSIGNAL);
  socket.close(ec);
}

Awaitable<void> accept_loop(std::shared_ptr<ServerState> state) {
  asio::steady_timer backoff(state->acceptor.get_executor());
  while (!state->is_stopping) {
    ErrorCode ec;
    tcp::socket socket = co_await state->acceptor.async_accept(
        asio::any_io_executor(asio::make_strand(state->io)), redirect(ec));
    if (ec) {
      if (state->is_stopping || ec == asio::error::operation_aborted) break;
      // Typically EMFILE: pausing keeps a full fd table from spinning this loop.
      SILO_LOG_WARN("http: accept failed: {}", ec.message());
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(redirect(ec));
      continue;
    }
    std::shared_ptr<TlsContext> tls_context;
    {
      MutexLock lock(state->tls_mu);
      tls_context = state->tls_context;
    }
    std::shared_ptr<Connection> connection;
    {
      MutexLock lock(state->mu);
      if (state->is_stopping) {
        socket.close(ec);
        continue;
      }
      if (state->connections.size() >= state->options.limits.max_connections) {
        // Full: the connection that has waited longest for a request's head (idle, or
        // trickling its head in) gives way, so that slow or idle clients cannot keep
        // others out. When every connection is serving a request, the new one is told to
        // slow down.
        std::shared_ptr<Connection> oldest;
        for (const auto& [id, weak] : state->connections) {
          auto candidate = weak.lock();
          if (!candidate || candidate->waiting_since() == 0 || candidate->is_evicted()) continue;
          if (!oldest || candidate->waiting_since() < oldest->waiting_since()) oldest = std::move(candidate);
        }
        if (!oldest || !oldest->pick_to_evict()) {
          refuse_busy(socket, state->options.limits.max_connections, tls_context != nullptr);
          continue;
        }
        const auto executor = oldest->socket().get_executor();
        asio::post(executor, [oldest] { oldest->close_if_waiting(); });
      }
      const uint64_t id = state->next_connection_id++;
      connection = std::make_shared<Connection>(state, std::move(socket), id, std::move(tls_context));
      state->connections.emplace(id, connection);
    }
    const auto executor = connection->socket().get_executor();
    asio::co_spawn(executor, Connection::run(std::move(connection)), asio::detached);
  }
}

class ServerImpl final : public Server {
 public:
  ServerImpl(std::shared_ptr<ServerState> state, uint16_t port)
      : state_(std::move(state)), port_(port) {}
  ~ServerImpl() override {
    // Without stop() the accept loop would keep serving; the connections unwind on their own.
    state_->is_stopping = true;
    asio::post(state_->acceptor.get_executor(), [state = state_] {
      ErrorCode ec;
      state->acceptor.close(ec);
    });
  }

  uint16_t port() const override { return port_; }

  void start() override {
    asio::co_spawn(state_->acceptor.get_executor(), accept_loop(state_), asio::detached);
  }

  Awaitable<void> stop() override {
    std::shared_ptr<ServerState> state = state_;
    state->is_stopping = true;
    asio::post(state->acceptor.get_executor(), [state] {
      ErrorCode ec;
      state->acceptor.close(ec);
    });
    for_each_connection([](Connection& c) { c.close_if_idle(); });
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto force_at = SteadyClock::now() + state->options.limits.drain_timeout;
    bool is_forced = false;
    while (connection_count() > 0) {
      if (!is_forced && SteadyClock::now() >= force_at) {
        for_each_connection([](Connection& c) { c.close(); });
        is_forced = true;
      }
      // Connections end on their own strands; polling keeps this free of cross-strand
      // signalling, and stop() is rare.
      timer.expires_after(std::chrono::milliseconds(2));
      ErrorCode ec;
      co_await timer.async_wait(redirect(ec));
    }
  }

  size_t connection_count() const override {
    MutexLock lock(state_->mu);
    return state_->connections.size();
  }

  size_t requests_in_flight() const override { return state_->requests_in_flight.load(); }
  uint64_t requests_refused() const override { return state_->requests_refused.load(); }
  bool is_tls() const override { return state_->options.tls.is_enabled(); }

  Status reload_tls() override {
    if (!is_tls()) return Status::failed_precondition("the server is plain HTTP: no TLS files to reload");
    ASSIGN_OR_RETURN(std::shared_ptr<TlsContext> context, make_tls_context(state_->options.tls));
    MutexLock lock(state_->tls_mu);
    state_->tls_context = std::move(context);
    return Status::ok();
  }

 private:
  template <typename Fn>
  void for_each_connection(Fn fn) {
    std::vector<std::shared_ptr<Connection>> live;
    {
      MutexLock lock(state_->mu);
      for (const auto& [id, weak] : state_->connections) {
        if (auto connection = weak.lock()) live.push_back(std::move(connection));
      }
    }
    for (auto& connection : live) {
      const auto executor = connection->socket().get_executor();
      asio::post(executor, [connection, fn] { fn(*connection); });
    }
  }

  std::shared_ptr<ServerState> state_;
  const uint16_t port_;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::create(boost::asio::io_context& io, ServerOptions options,
                                               Handler handler) {
  // sendfile(2) has no MSG_NOSIGNAL: a peer that went away must give EPIPE, not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  ErrorCode ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) return Status::invalid_argument("bad listen address '{}': {}", options.host, ec.message());
  const tcp::endpoint endpoint(address, options.port);
  std::shared_ptr<TlsContext> tls_context;
  if (options.tls.is_enabled()) {
    ASSIGN_OR_RETURN(tls_context, make_tls_context(options.tls));
  }
  auto state = std::make_shared<ServerState>(io, std::move(options), std::move(handler));
  {
    MutexLock lock(state->tls_mu);
    state->tls_context = std::move(tls_context);
  }
  tcp::acceptor& acceptor = state->acceptor;
  const std::string where = fmt::format("{}:{}", address.to_string(), endpoint.port());
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return Status::unavailable("open socket for {}: {}", where, ec.message());
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return Status::unavailable("set SO_REUSEADDR on {}: {}", where, ec.message());
  acceptor.bind(endpoint, ec);
  if (ec == asio::error::address_in_use) {
    return Status::already_exists("bind {}: address already in use", where);
  }
  if (ec) return Status::unavailable("bind {}: {}", where, ec.message());
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::unavailable("listen on {}: {}", where, ec.message());
  const uint16_t port = acceptor.local_endpoint(ec).port();
  if (ec) return Status::unavailable("local address of {}: {}", where, ec.message());
  return std::unique_ptr<Server>(std::make_unique<ServerImpl>(std::move(state), port));
}

}  // namespace silo::http
