#include "http/client.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/this_coro.hpp>
#include <charconv>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "http/detail/beast_io.h"
#include "http/detail/splice_pipe.h"

namespace silo::http {
namespace {

using detail::ArmedDeadline;
using detail::ErrorCode;
using detail::io_status;
using detail::IoDeadline;
using detail::redirect;
using detail::tcp;
namespace asio = detail::asio;
namespace beast = detail::beast;
namespace bhttp = detail::bhttp;
using ResponseParser = bhttp::response_parser<bhttp::buffer_body>;

// One TCP connection to an endpoint, owned by one Call at a time or parked in the pool.
struct ClientConnection {
  ClientConnection(const asio::any_io_executor& executor, std::string key)
      : socket(executor), deadline(executor, socket), pool_key(std::move(key)) {}
  tcp::socket socket;
  IoDeadline deadline;
  beast::flat_buffer buffer;
  std::string pool_key;
  // Set for an https endpoint: every byte goes through `tls` (after `socket` and its
  // context: destroyed first).
  std::shared_ptr<asio::ssl::context> tls_context;
  std::unique_ptr<detail::TlsStream> tls;
  detail::SocketStream stream{socket};  // through `tls` once the handshake set it
};

// The key of an endpoint's connections in the pool (TLS and plain ones never mix).
std::string pool_key_of(const Endpoint& endpoint) {
  return endpoint.is_tls ? endpoint.url() : endpoint.to_string();
}

// A pooled connection whose peer closed it (or sent bytes nobody asked for) must not
// carry the next request; a non-blocking peek tells without consuming anything.
bool looks_alive(tcp::socket& socket) {
  char byte = 0;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// The failures a pooled connection shows when the server closed it while it sat idle.
bool is_stale_connection_error(const ErrorCode& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted;
}

Result<bhttp::verb> to_verb(Method method) {
  switch (method) {
    case Method::kGet:
      return bhttp::verb::get;
    case Method::kHead:
      return bhttp::verb::head;
    case Method::kPut:
      return bhttp::verb::put;
    case Method::kPost:
      return bhttp::verb::post;
    case Method::kDelete:
      return bhttp::verb::delete_;
    case Method::kOptions:
      return bhttp::verb::options;
    case Method::kOther:
      break;
  }
  return Status::invalid_argument("the client cannot send Method::kOther");
}

struct Acquired {
  std::unique_ptr<ClientConnection> connection;
  bool is_reused = false;
};

// The client side of TLS from the options: TLS 1.2 and later, certificates verified
// against the CA file (the system's when none; the host name is checked at connect),
// the client certificate shown when one is configured.
Result<std::shared_ptr<asio::ssl::context>> make_tls_context(const ClientOptions& options) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  ErrorCode ec;
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                           asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                           asio::ssl::context::no_tlsv1_1,
                       ec);
  context->set_verify_mode(asio::ssl::verify_peer, ec);
  if (options.tls_ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(options.tls_ca_file, ec);
  }
  if (ec) {
    return Status::failed_precondition("TLS certificate authorities {}: {}",
                                       options.tls_ca_file.empty() ? "(system)" : options.tls_ca_file, ec.message());
  }
  if (!options.tls_cert_file.empty()) {
    context->use_certificate_chain_file(options.tls_cert_file, ec);
    if (!ec) context->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) {
      return Status::failed_precondition("TLS client certificate {} (key {}): {}", options.tls_cert_file,
                                         options.tls_key_file, ec.message());
    }
  }
  return context;
}

class ClientImpl final : public Client, public std::enable_shared_from_this<ClientImpl> {
 public:
  ClientImpl(asio::any_io_executor executor, ClientOptions options)
      : executor_(std::move(executor)), options_(std::move(options)) {
    Result<std::shared_ptr<asio::ssl::context>> context = make_tls_context(options_);
    MutexLock lock(tls_mu_);
    if (context) {
      tls_context_ = std::move(*context);
    } else {
      tls_setup_ = std::move(context).error();
    }
  }

  Awaitable<Result<ClientResponse>> call(const Endpoint& endpoint, ClientRequest request,
                                         std::string body, size_t max_body) override;
  Awaitable<Result<std::unique_ptr<Call>>> start(const Endpoint& endpoint, ClientRequest request,
                                                 std::optional<uint64_t> content_length) override;
  Status reload_tls() override {
    ASSIGN_OR_RETURN(std::shared_ptr<asio::ssl::context> context, make_tls_context(options_));
    MutexLock lock(tls_mu_);
    tls_context_ = std::move(context);
    tls_setup_ = Status::ok();
    return Status::ok();
  }

  const ClientOptions& options() const { return options_; }
  // A pooled connection when one is alive and `may_reuse`, else a new one.
  Awaitable<Result<Acquired>> acquire(const Endpoint& endpoint, bool may_reuse);
  void release(std::unique_ptr<ClientConnection> connection);

 private:
  Awaitable<Result<std::unique_ptr<Call>>> start_call(const Endpoint& endpoint,
                                                      ClientRequest request,
                                                      std::optional<uint64_t> content_length,
                                                      std::optional<std::string> replay_body);
  std::unique_ptr<ClientConnection> take_idle(const std::string& key);
  Awaitable<Result<std::unique_ptr<ClientConnection>>> connect(const Endpoint& endpoint);
  // The TLS handshake on a connected socket: SNI, certificate chain and host name checked.
  Awaitable<Status> handshake(ClientConnection& connection, const Endpoint& endpoint);

  // What new TLS connections use, or why TLS cannot be used (a bad CA file); replaced
  // by reload_tls(). Pooled connections keep the context they were made with.
  std::shared_ptr<asio::ssl::context> tls_context() const {
    MutexLock lock(tls_mu_);
    return tls_context_;
  }

  const asio::any_io_executor executor_;
  const ClientOptions options_;
  mutable Mutex tls_mu_;
  std::shared_ptr<asio::ssl::context> tls_context_ GUARDED_BY(tls_mu_);
  Status tls_setup_ GUARDED_BY(tls_mu_);
  Mutex mu_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<ClientConnection>>> idle_
      GUARDED_BY(mu_);
};

// `request` as ClientOptions::decorate makes it (signed).
ClientRequest decorated(const ClientImpl& client, const Endpoint& endpoint, ClientRequest request) {
  if (client.options().decorate) client.options().decorate(endpoint, request);
  return request;
}

// A request in flight on one connection. It may replace a stale pooled connection once,
// as long as no body byte was sent (or the body is kept in memory to be sent again).
class ClientCall final : public Call, public BodyReader {
 public:
  ClientCall(std::shared_ptr<ClientImpl> client, Endpoint endpoint, ClientRequest request,
             std::optional<uint64_t> content_length, std::optional<std::string> replay_body)
      : client_(std::move(client)),
        endpoint_(std::move(endpoint)),
        request_(decorated(*client_, endpoint_, std::move(request))),
        content_length_(content_length),
        replay_body_(std::move(replay_body)) {}

  // Sends the head (and the replay body) on a pooled or new connection.
  Awaitable<Status> open();

  Awaitable<Status> write(std::span<const char> data) override;
  Awaitable<Result<ClientResponse>> finish() override;
  Awaitable<Result<ClientResponse>> finish_early() override;
  BodyReader& body() override { return *this; }

  Awaitable<Result<size_t>> read(std::span<char> buffer) override;
  bool is_done() const override { return is_body_done_; }
  Awaitable<Status> relay_body(ResponseWriter& out) override;
  Awaitable<Status> relay_body_part(ResponseWriter& out, uint64_t length) override;

 private:
  // The body has ended: the connection goes back to the pool if it can carry more.
  void body_ended();
  Awaitable<Status> copy_body(ResponseWriter& out, std::optional<uint64_t> length);
  Awaitable<Status> splice_body(detail::RawResponseSink& sink, uint64_t length);
  // relay_body_part()'s splice: body bytes already buffered first, through `out`.
  Awaitable<Status> splice_part(detail::RawResponseSink& sink, ResponseWriter& out, uint64_t length);
  Awaitable<ErrorCode> send_head();
  // The response whose head read_head() parsed; its body is read next.
  ClientResponse response_of_head();
  Awaitable<ErrorCode> send_body(std::span<const char> data);
  // Writes every byte of `buffers` to the connection (TLS or plain), under the io deadline.
  template <typename Buffers>
  Awaitable<ErrorCode> write_all(const Buffers& buffers);
  Awaitable<ErrorCode> read_head();
  Status io_error(const ErrorCode& ec, std::string_view what) {
    has_failed_ = true;
    Status status = io_status(ec, connection_->deadline.has_expired(), what);
    status.annotate("{} {}{}", method_name(request_.method), endpoint_.to_string(),
                    request_.target);
    return status;
  }
  // Whether a failure on this connection may be retried once on a fresh one.
  bool may_retry(const ErrorCode& ec) const {
    return is_reused_ && !has_retried_ && is_stale_connection_error(ec) &&
           connection_->buffer.size() == 0 && (body_bytes_sent_ == 0 || replay_body_);
  }
  Awaitable<Status> reopen_fresh();

  std::shared_ptr<ClientImpl> client_;
  const Endpoint endpoint_;
  const ClientRequest request_;
  const std::optional<uint64_t> content_length_;
  const std::optional<std::string> replay_body_;
  std::unique_ptr<ClientConnection> connection_;
  std::optional<ResponseParser> parser_;
  std::optional<detail::BodyStream<false>> body_stream_;
  bool is_reused_ = false;
  bool has_retried_ = false;
  bool has_failed_ = false;
  bool is_finished_ = false;
  bool is_body_done_ = false;
  uint64_t body_bytes_sent_ = 0;
};

Awaitable<ErrorCode> ClientCall::send_head() {
  ErrorCode ec;
  Result<bhttp::verb> verb = to_verb(request_.method);
  if (!verb) co_return bhttp::error::bad_method;
  bhttp::request<bhttp::empty_body> head(*verb, request_.target, 11);
  head.set(bhttp::field::host, request_.host.value_or(endpoint_.to_string()));
  detail::copy_headers(request_.headers, head);
  if (content_length_) {
    head.content_length(*content_length_);
  } else {
    head.chunked(true);
  }
  head.keep_alive(true);
  bhttp::request_serializer<bhttp::empty_body> serializer(head);
  {
    ArmedDeadline armed(connection_->deadline, client_->options().io_timeout);
    co_await bhttp::async_write_header(connection_->stream, serializer, redirect(ec));
  }
  if (!ec && replay_body_ && !replay_body_->empty()) {
    ec = co_await write_all(asio::buffer(*replay_body_));
  }
  co_return ec;
}

Awaitable<Status> ClientCall::open() {
  if (!to_verb(request_.method)) co_return to_verb(request_.method).status();
  Result<Acquired> acquired = co_await client_->acquire(endpoint_, /*may_reuse=*/true);
  if (!acquired) co_return acquired.status();
  connection_ = std::move(acquired->connection);
  is_reused_ = acquired->is_reused;
  const ErrorCode ec = co_await send_head();
  if (ec && may_retry(ec)) co_return co_await reopen_fresh();
  if (ec) co_return io_error(ec, "sending request head");
  if (replay_body_) body_bytes_sent_ = replay_body_->size();
  co_return Status::ok();
}

Awaitable<Status> ClientCall::reopen_fresh() {
  has_retried_ = true;
  Result<Acquired> acquired = co_await client_->acquire(endpoint_, /*may_reuse=*/false);
  if (!acquired) co_return acquired.status();
  connection_ = std::move(acquired->connection);
  is_reused_ = false;
  const ErrorCode ec = co_await send_head();
  if (ec) co_return io_error(ec, "sending request head");
  co_return Status::ok();
}

template <typename Buffers>
Awaitable<ErrorCode> ClientCall::write_all(const Buffers& buffers) {
  ErrorCode ec;
  ArmedDeadline armed(connection_->deadline, client_->options().io_timeout);
  co_await asio::async_write(connection_->stream, buffers, redirect(ec));
  co_return ec;
}

Awaitable<ErrorCode> ClientCall::send_body(std::span<const char> data) {
  ErrorCode ec;
  if (content_length_) {
    ec = co_await write_all(asio::buffer(data.data(), data.size()));
  } else {
    const std::string size_line = detail::chunk_size_line(data.size());
    // Assigned one by one: GCC 12 miscompiles braced lists inside coroutines.
    std::vector<asio::const_buffer> buffers;
    buffers.push_back(asio::buffer(size_line));
    buffers.push_back(asio::buffer(data.data(), data.size()));
    buffers.push_back(asio::buffer("\r\n", 2));
    ec = co_await write_all(buffers);
  }
  co_return ec;
}

Awaitable<Status> ClientCall::write(std::span<const char> data) {
  if (is_finished_) co_return Status::failed_precondition("write() after finish()");
  if (has_failed_) co_return Status::unavailable("the call failed earlier");
  if (replay_body_) co_return Status::failed_precondition("the body was given to call()");
  if (data.empty()) co_return Status::ok();
  if (content_length_ && body_bytes_sent_ + data.size() > *content_length_) {
    co_return Status::invalid_argument("request body longer than the {} bytes announced",
                                       *content_length_);
  }
  ErrorCode ec = co_await send_body(data);
  if (ec && may_retry(ec)) {
    CO_RETURN_IF_ERROR(co_await reopen_fresh());
    ec = co_await send_body(data);
  }
  if (ec) co_return io_error(ec, "sending request body");
  body_bytes_sent_ += data.size();
  co_return Status::ok();
}

Awaitable<ErrorCode> ClientCall::read_head() {
  ErrorCode ec;
  while (true) {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(
        client_->options().max_response_header_bytes, std::numeric_limits<uint32_t>::max())));
    parser_->body_limit(detail::kNoBodyLimit);
    if (request_.method == Method::kHead) parser_->skip(true);
    {
      ArmedDeadline armed(connection_->deadline, client_->options().io_timeout);
      co_await bhttp::async_read_header(connection_->stream, connection_->buffer, *parser_, redirect(ec));
    }
    if (ec) co_return ec;
    const unsigned status = parser_->get().result_int();
    // Interim responses (100 Continue for a client that asked) precede the real one.
    if (status < 100 || status >= 200 || status == 101) co_return ec;
  }
}

Awaitable<Result<ClientResponse>> ClientCall::finish() {
  if (is_finished_) co_return Status::failed_precondition("finish() called twice");
  if (has_failed_) co_return Status::unavailable("the call failed earlier");
  is_finished_ = true;
  if (content_length_ && body_bytes_sent_ < *content_length_) {
    has_failed_ = true;
    co_return Status::invalid_argument("request body has {} of the {} bytes announced",
                                       body_bytes_sent_, *content_length_);
  }
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  ErrorCode ec;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!content_length_) ec = co_await write_all(asio::buffer(kLastChunk));
    if (!ec) ec = co_await read_head();
    if (!ec || !may_retry(ec)) break;
    CO_RETURN_IF_ERROR(co_await reopen_fresh());
  }
  if (ec) co_return io_error(ec, "reading response head");
  co_return response_of_head();
}

Awaitable<Result<ClientResponse>> ClientCall::finish_early() {
  if (is_finished_) co_return Status::failed_precondition("finish_early() after finish()");
  is_finished_ = true;
  const ErrorCode ec = co_await read_head();
  if (ec) {
    has_failed_ = true;
    co_return io_error(ec, "reading a response sent before the request body ended");
  }
  co_return response_of_head();
}

ClientResponse ClientCall::response_of_head() {
  body_stream_.emplace(*parser_);
  ClientResponse response;
  const auto& message = parser_->get();
  response.status = static_cast<int>(message.result_int());
  response.headers = detail::to_headers(message);
  if (const auto length = parser_->content_length()) response.content_length = *length;
  return response;
}

Awaitable<Result<size_t>> ClientCall::read(std::span<char> buffer) {
  if (!is_finished_ || !body_stream_)
    co_return Status::failed_precondition("read() before finish()");
  if (is_body_done_) co_return size_t{0};
  if (has_failed_) co_return Status::unavailable("the call failed earlier");
  Result<size_t> n = co_await body_stream_->read(connection_->stream, connection_->buffer, buffer,
                                                 connection_->deadline, client_->options().io_timeout);
  if (!n) {
    has_failed_ = true;
    co_return n;
  }
  if (*n == 0 && !buffer.empty()) body_ended();
  co_return n;
}

void ClientCall::body_ended() {
  is_body_done_ = true;
  // Back to the pool as soon as the exchange is complete, not when the Call dies.
  if (parser_->get().keep_alive() && connection_->buffer.size() == 0) {
    client_->release(std::move(connection_));
  }
}

Awaitable<Status> ClientCall::relay_body(ResponseWriter& out) {
  if (!is_finished_ || !body_stream_)
    co_return Status::failed_precondition("relay_body() before finish()");
  const std::optional<uint64_t> remaining = body_stream_->remaining();
  if (!remaining || is_body_done_) co_return co_await copy_body(out, std::nullopt);
  co_return co_await relay_body_part(out, *remaining);
}

Awaitable<Status> ClientCall::relay_body_part(ResponseWriter& out, uint64_t length) {
  if (!is_finished_ || !body_stream_)
    co_return Status::failed_precondition("relay_body_part() before finish()");
  if (has_failed_) co_return Status::unavailable("the call failed earlier");
  const std::optional<uint64_t> remaining = body_stream_->remaining();
  if (remaining && *remaining < length) {
    co_return Status::failed_precondition("relaying {} body bytes of {} left", length, *remaining);
  }
  // Below this a splice's two syscalls per round cost more than the copy it saves (pipes
  // are kept between relays, SplicePipe).
  constexpr uint64_t kMinSpliceBytes = 32 * 1024;
  auto* sink = dynamic_cast<detail::RawResponseSink*>(&out);
  // TLS bytes are ciphertext: they go through user space to be decrypted.
  if (sink == nullptr || !sink->takes_raw_bytes() || is_body_done_ || !remaining || length < kMinSpliceBytes ||
      connection_->tls) {
    CO_RETURN_IF_ERROR(co_await copy_body(out, length));
  } else {
    CO_RETURN_IF_ERROR(co_await splice_part(*sink, out, length));
  }
  // A part that ends the body hands the connection back now.
  if (remaining && *remaining == length && !is_body_done_) body_ended();
  co_return Status::ok();
}

Awaitable<Status> ClientCall::splice_part(detail::RawResponseSink& sink, ResponseWriter& out, uint64_t length) {
  // Body bytes that arrived with the head go first, through user space.
  const size_t buffered = static_cast<size_t>(std::min<uint64_t>(connection_->buffer.size(), length));
  if (buffered > 0) {
    const auto data = connection_->buffer.data();  // contiguous: a flat_buffer
    const Status written = co_await out.write({static_cast<const char*>(data.data()), buffered});
    if (!written.is_ok()) {
      has_failed_ = true;
      co_return written;
    }
    connection_->buffer.consume(buffered);
    body_stream_->skip(buffered);
  }
  const uint64_t rest = length - buffered;
  if (rest > 0) CO_RETURN_IF_ERROR(co_await splice_body(sink, rest));
  co_return Status::ok();
}

Awaitable<Status> ClientCall::copy_body(ResponseWriter& out, std::optional<uint64_t> length) {
  // Sized to the body (at least 1 byte: a body of unknown length ends with a read of 0) and not
  // zero-filled: a zeroed 256 KiB per small GET was 18 % of a proxy's CPU.
  const size_t capacity = static_cast<size_t>(
      std::clamp<uint64_t>(length.value_or(body_stream_->remaining().value_or(256 * 1024)), 1, 256 * 1024));
  std::unique_ptr<char[]> buffer(new char[capacity]);
  for (uint64_t left = length.value_or(UINT64_MAX); left > 0;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(capacity, left));
    CO_ASSIGN_OR_RETURN(const size_t n, co_await read({buffer.get(), want}));
    if (n == 0) {
      if (!length) co_return Status::ok();
      has_failed_ = true;
      co_return Status::unavailable("relaying body: upstream ended with {} bytes missing", left);
    }
    CO_RETURN_IF_ERROR(co_await out.write({buffer.get(), n}));
    if (length) left -= n;
  }
  co_return Status::ok();
}

// upstream socket -> pipe -> response socket, both hops in the kernel. Either socket may
// be the slow one: each round moves what it can both ways, then parks on the side that
// blocks (the response socket while the pipe holds bytes, else the upstream).
Awaitable<Status> ClientCall::splice_body(detail::RawResponseSink& sink, uint64_t length) {
  CO_ASSIGN_OR_RETURN(detail::SplicePipe pipe, detail::SplicePipe::take());
  const uint64_t capacity = pipe.capacity();
  CO_ASSIGN_OR_RETURN(const int to, co_await sink.begin_raw(length));
  ErrorCode ec;
  connection_->socket.native_non_blocking(true, ec);
  if (ec) co_return io_error(ec, "relaying body");
  const int from = connection_->socket.native_handle();
  uint64_t to_read = length;
  uint64_t in_pipe = 0;
  while (to_read > 0 || in_pipe > 0) {
    bool has_moved = false;
    if (to_read > 0 && in_pipe < capacity) {
      const ssize_t n = ::splice(from, nullptr, pipe.write_end(), nullptr,
                                 static_cast<size_t>(std::min(to_read, capacity - in_pipe)),
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        to_read -= static_cast<uint64_t>(n);
        in_pipe += static_cast<uint64_t>(n);
        body_stream_->skip(static_cast<uint64_t>(n));
        has_moved = true;
      } else if (n == 0) {
        has_failed_ = true;
        co_return sink.fail_raw(
            Status::unavailable("relaying body: upstream closed with {} bytes missing", to_read));
      } else if (errno != EAGAIN && errno != EINTR) {
        has_failed_ = true;
        co_return sink.fail_raw(Status::from_errno(errno, "relaying body: splice from upstream"));
      }
    }
    if (in_pipe > 0) {
      const ssize_t n = ::splice(pipe.read_end(), nullptr, to, nullptr, static_cast<size_t>(in_pipe),
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        in_pipe -= static_cast<uint64_t>(n);
        sink.wrote_raw(static_cast<uint64_t>(n));
        has_moved = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        has_failed_ = true;  // the upstream body is left half read
        const int err = errno;
        co_return sink.fail_raw(err == EPIPE || err == ECONNRESET
                                    ? Status::unavailable("relaying body: client went away")
                                    : Status::from_errno(err, "relaying body: splice to client"));
      }
    }
    if (has_moved) continue;
    if (in_pipe > 0) {
      const Status writable = co_await sink.wait_writable();
      if (!writable.is_ok()) {
        has_failed_ = true;
        co_return writable;
      }
    } else {
      {
        ArmedDeadline armed(connection_->deadline, client_->options().io_timeout);
        co_await connection_->socket.async_wait(tcp::socket::wait_read, redirect(ec));
      }
      if (ec) co_return sink.fail_raw(io_error(ec, "relaying body"));
    }
  }
  detail::SplicePipe::give_back(std::move(pipe));  // empty: the next relay on this thread takes it
  co_return Status::ok();
}

Awaitable<Result<std::unique_ptr<Call>>> ClientImpl::start_call(
    const Endpoint& endpoint, ClientRequest request, std::optional<uint64_t> content_length,
    std::optional<std::string> replay_body) {
  auto call = std::make_unique<ClientCall>(shared_from_this(), endpoint, std::move(request),
                                           content_length, std::move(replay_body));
  CO_RETURN_IF_ERROR(co_await call->open());
  co_return std::unique_ptr<Call>(std::move(call));
}

Awaitable<Result<std::unique_ptr<Call>>> ClientImpl::start(const Endpoint& endpoint,
                                                           ClientRequest request,
                                                           std::optional<uint64_t> content_length) {
  return start_call(endpoint, std::move(request), content_length, std::nullopt);
}

Awaitable<Result<ClientResponse>> ClientImpl::call(const Endpoint& endpoint, ClientRequest request,
                                                   std::string body, size_t max_body) {
  const uint64_t length = body.size();
  const bool is_head = request.method == Method::kHead;
  CO_ASSIGN_OR_RETURN(std::unique_ptr<Call> call,
                      co_await start_call(endpoint, std::move(request), length, std::move(body)));
  CO_ASSIGN_OR_RETURN(ClientResponse response, co_await call->finish());
  // A HEAD response announces the length of a body it does not carry.
  const std::optional<uint64_t> expected =
      is_head ? std::optional<uint64_t>(0) : response.content_length;
  if (expected && *expected > max_body) {
    co_return Status::resource_exhausted("response body of {} bytes is larger than {}",
                                         *response.content_length, max_body);
  }
  // Sized once (to the announced length when there is one) and trimmed at the end:
  // resize() zero-fills, so growing it per read would cost a memset of the whole tail.
  constexpr size_t kChunk = 256 * 1024;
  size_t filled = 0;
  response.body.resize(expected ? *expected + 1 : kChunk);
  while (true) {
    if (filled == response.body.size()) response.body.resize(2 * filled);
    Result<size_t> n = co_await call->body().read(
        std::span(response.body.data() + filled, response.body.size() - filled));
    if (!n) co_return std::move(n).error();
    if (*n == 0) break;
    filled += *n;
    if (filled > max_body) {
      co_return Status::resource_exhausted("response body is larger than {} bytes", max_body);
    }
  }
  response.body.resize(filled);
  co_return response;
}

std::unique_ptr<ClientConnection> ClientImpl::take_idle(const std::string& key) {
  MutexLock lock(mu_);
  auto it = idle_.find(key);
  if (it == idle_.end()) return nullptr;
  auto& connections = it->second;
  while (!connections.empty()) {
    std::unique_ptr<ClientConnection> connection = std::move(connections.back());
    connections.pop_back();
    if (looks_alive(connection->socket)) return connection;
  }
  return nullptr;
}

void ClientImpl::release(std::unique_ptr<ClientConnection> connection) {
  MutexLock lock(mu_);
  auto& connections = idle_[connection->pool_key];
  if (connections.size() < options_.max_idle_per_endpoint) {
    connections.push_back(std::move(connection));
  }
}

Awaitable<Result<Acquired>> ClientImpl::acquire(const Endpoint& endpoint, bool may_reuse) {
  if (may_reuse) {
    if (auto connection = take_idle(pool_key_of(endpoint))) {
      co_return Acquired{std::move(connection), true};
    }
  }
  CO_ASSIGN_OR_RETURN(std::unique_ptr<ClientConnection> connection, co_await connect(endpoint));
  co_return Acquired{std::move(connection), false};
}

Awaitable<Result<std::unique_ptr<ClientConnection>>> ClientImpl::connect(const Endpoint& endpoint) {
  // The socket lives on the caller's executor so its completions and its deadline run where
  // the call runs (a strand, for server handlers).
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  const std::string key = pool_key_of(endpoint);
  if (endpoint.is_tls) {
    MutexLock lock(tls_mu_);
    if (!tls_setup_.is_ok()) co_return tls_setup_;
  }
  ErrorCode ec;
  std::vector<tcp::endpoint> addresses;
  const auto address = asio::ip::make_address(endpoint.host, ec);
  if (!ec) {
    addresses.emplace_back(address, endpoint.port);
  } else {
    tcp::resolver resolver(executor);
    const auto results =
        co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), redirect(ec));
    if (ec) co_return Status::unavailable("resolve {}: {}", endpoint.host, ec.message());
    for (const auto& entry : results) addresses.push_back(entry.endpoint());
  }
  Status last_error = Status::unavailable("no address for {}", key);
  for (const tcp::endpoint& address_port : addresses) {
    auto connection = std::make_unique<ClientConnection>(executor, key);
    {
      ArmedDeadline armed(connection->deadline, options_.connect_timeout);
      co_await connection->socket.async_connect(address_port, redirect(ec));
    }
    if (!ec) {
      connection->socket.set_option(tcp::no_delay(true), ec);
      if (endpoint.is_tls) CO_RETURN_IF_ERROR(co_await handshake(*connection, endpoint));
      co_return connection;
    }
    last_error = connection->deadline.has_expired()
                     ? Status::deadline_exceeded("connect to {} timed out", key)
                     : Status::unavailable("connect to {}: {}", key, ec.message());
  }
  co_return last_error;
}

Awaitable<Status> ClientImpl::handshake(ClientConnection& connection, const Endpoint& endpoint) {
  connection.tls_context = tls_context();
  if (connection.tls_context == nullptr) co_return Status::failed_precondition("TLS is not set up");
  connection.tls = std::make_unique<detail::TlsStream>(connection.socket, *connection.tls_context);
  connection.stream = detail::SocketStream(connection.socket, connection.tls.get());
  SSL* ssl = connection.tls->native_handle();
  ErrorCode ec;
  std::ignore = asio::ip::make_address(endpoint.host, ec);  // only whether it parses
  const bool is_address = !ec;
  ec.clear();
  // SNI names the host (never an address); the certificate must name it too.
  if (!is_address) SSL_set_tlsext_host_name(ssl, endpoint.host.c_str());
  connection.tls->set_verify_callback(asio::ssl::host_name_verification(endpoint.host), ec);
  {
    ArmedDeadline armed(connection.deadline, options_.connect_timeout);
    co_await connection.tls->async_handshake(asio::ssl::stream_base::client, redirect(ec));
  }
  if (!ec) co_return Status::ok();
  if (connection.deadline.has_expired()) {
    co_return Status::deadline_exceeded("TLS handshake with {} timed out", endpoint.to_string());
  }
  const long verified = SSL_get_verify_result(ssl);
  if (verified != X509_V_OK) {
    // Not retried: the same certificate would be refused again.
    co_return Status::failed_precondition("the TLS certificate of {} is not trusted: {}",
                                          endpoint.to_string(),
                                          X509_verify_cert_error_string(verified));
  }
  co_return Status::unavailable("TLS handshake with {}: {}", endpoint.to_string(), ec.message());
}

}  // namespace

Result<Endpoint> Endpoint::parse(std::string_view url) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  const bool is_tls = url.starts_with(kHttps);
  if (!is_tls && !url.starts_with(kHttp))
    return Status::invalid_argument("not an http:// or https:// URL: '{}'", url);
  std::string_view authority = url.substr(is_tls ? kHttps.size() : kHttp.size());
  if (authority.ends_with('/')) authority.remove_suffix(1);
  Endpoint endpoint;
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return Status::invalid_argument("bad IPv6 host in '{}'", url);
    endpoint.host = std::string(authority.substr(1, close - 1));
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) {
      return Status::invalid_argument("bad URL '{}'", url);
    }
    port_text = rest.empty() ? std::string_view() : rest.substr(1);
    if (rest == ":") return Status::invalid_argument("empty port in '{}'", url);
  } else {
    const size_t colon = authority.find(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return Status::invalid_argument("empty port in '{}'", url);
    }
  }
  if (endpoint.host.empty()) return Status::invalid_argument("no host in '{}'", url);
  for (const char c : endpoint.host) {
    const bool is_allowed =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':';
    if (!is_allowed) return Status::invalid_argument("bad host in '{}'", url);
  }
  endpoint.is_tls = is_tls;
  endpoint.port = is_tls ? 443 : 80;
  if (!port_text.empty()) {
    unsigned port = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return Status::invalid_argument("bad port in '{}'", url);
    }
    endpoint.port = static_cast<uint16_t>(port);
  }
  return endpoint;
}

std::string Endpoint::url() const { return (is_tls ? "https://" : "http://") + to_string(); }

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::shared_ptr<Client> Client::create(boost::asio::any_io_executor executor,
                                       ClientOptions options) {
  return std::make_shared<ClientImpl>(std::move(executor), options);
}

}  // namespace silo::http
