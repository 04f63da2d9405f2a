#pragma once

// Beast and Asio helpers shared by server.cc and client.cc. Only those two translation
// units include this header: Beast costs seconds of compile time per file.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <algorithm>
#include <span>
#include <string>

#include "base/mutex.h"
#include "base/text.h"
#include "http/detail/tls_socket.h"
#include "http/message.h"

namespace silo::http::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// Beast 1.74 compares the body length against an empty optional as "over the limit", so
// boost::none (documented as "no limit") rejects every body; the largest value does not.
constexpr uint64_t kNoBodyLimit = std::numeric_limits<uint64_t>::max();

inline auto redirect(ErrorCode& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

using TlsStream = asio::ssl::stream<tcp::socket&>;

// A connection's bytes: the socket itself, or TLS over it (Asio's engine on the client
// side, TlsSocket on the server's). An Asio AsyncReadStream and AsyncWriteStream, so Beast
// and asio::async_write work through it either way and the code above it has one path.
// Copyable; refers to streams its owner keeps.
class SocketStream {
 public:
  using executor_type = tcp::socket::executor_type;

  explicit SocketStream(tcp::socket& socket) : socket_(&socket) {}
  SocketStream(tcp::socket& socket, TlsStream* tls) : socket_(&socket), tls_(tls) {}
  SocketStream(tcp::socket& socket, TlsSocket* tls) : socket_(&socket), tls_socket_(tls) {}

  executor_type get_executor() { return socket_->get_executor(); }
  bool is_tls() const { return tls_ != nullptr || tls_socket_ != nullptr; }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(ErrorCode, size_t)>(
        [](auto handler, SocketStream stream, const MutableBuffers& to) {
          if (stream.tls_ != nullptr) {
            stream.tls_->async_read_some(to, std::move(handler));
          } else if (stream.tls_socket_ != nullptr) {
            stream.tls_socket_->async_read_some(to, std::move(handler));
          } else {
            stream.socket_->async_read_some(to, std::move(handler));
          }
        },
        token, *this, buffers);
  }

  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(ErrorCode, size_t)>(
        [](auto handler, SocketStream stream, const ConstBuffers& from) {
          if (stream.tls_ != nullptr) {
            stream.tls_->async_write_some(from, std::move(handler));
          } else if (stream.tls_socket_ != nullptr) {
            stream.tls_socket_->async_write_some(from, std::move(handler));
          } else {
            stream.socket_->async_write_some(from, std::move(handler));
          }
        },
        token, *this, buffers);
  }

 private:
  tcp::socket* socket_;
  TlsStream* tls_ = nullptr;
  TlsSocket* tls_socket_ = nullptr;
};

// Cancels the pending operations of one socket when an operation makes no progress
// within its timeout. Owned by the connection that owns the socket, used from that
// connection's coroutine. Arming only moves a deadline: the timer is re-armed lazily when
// it fires early, so a stream of small reads costs no timer syscall each. The timer's
// handler reaches the socket only through `state_`, which the destructor detaches, and
// all timer calls happen under the state's mutex, so a handler running on another thread
// never races the owner.
class IoDeadline {
 public:
  using SteadyClock = std::chrono::steady_clock;

  IoDeadline(const asio::any_io_executor& executor, tcp::socket& socket)
      : state_(std::make_shared<State>(executor, socket)) {}
  ~IoDeadline() {
    MutexLock lock(state_->mu);
    state_->socket = nullptr;
    state_->timer.cancel();
  }
  IoDeadline(const IoDeadline&) = delete;
  IoDeadline& operator=(const IoDeadline&) = delete;

  void arm(SteadyClock::duration timeout) {
    MutexLock lock(state_->mu);
    state_->deadline = SteadyClock::now() + timeout;
    state_->has_expired = false;
    // A pending wait that ends at or before the new deadline re-checks when it fires.
    if (state_->is_waiting && state_->timer.expiry() <= state_->deadline) return;
    start_wait(state_);
  }

  void disarm() {
    MutexLock lock(state_->mu);
    state_->deadline = SteadyClock::time_point::max();
  }

  bool has_expired() const {
    MutexLock lock(state_->mu);
    return state_->has_expired;
  }

 private:
  struct State {
    State(const asio::any_io_executor& executor, tcp::socket& owner_socket)
        : timer(executor), socket(&owner_socket) {}
    mutable Mutex mu;
    asio::steady_timer timer GUARDED_BY(mu);
    tcp::socket* socket GUARDED_BY(mu) = nullptr;
    SteadyClock::time_point deadline GUARDED_BY(mu) = SteadyClock::time_point::max();
    bool is_waiting GUARDED_BY(mu) = false;
    bool has_expired GUARDED_BY(mu) = false;
  };

  static void start_wait(const std::shared_ptr<State>& state) REQUIRES(state->mu) {
    state->is_waiting = true;
    state->timer.expires_at(state->deadline);
    state->timer.async_wait([state](const ErrorCode& ec) {
      MutexLock lock(state->mu);
      // An aborted wait was replaced by a newer one (or the owner is gone).
      if (ec == asio::error::operation_aborted) return;
      state->is_waiting = false;
      if (state->socket == nullptr || state->deadline == SteadyClock::time_point::max()) return;
      if (SteadyClock::now() < state->deadline) {
        start_wait(state);
        return;
      }
      state->has_expired = true;
      ErrorCode ignored;
      state->socket->cancel(ignored);
    });
  }

  std::shared_ptr<State> state_;
};

// Disarms an IoDeadline when the operation it guards completes, however it completes.
class ArmedDeadline {
 public:
  ArmedDeadline(IoDeadline& deadline, std::chrono::steady_clock::duration timeout)
      : deadline_(deadline) {
    deadline_.arm(timeout);
  }
  ~ArmedDeadline() { deadline_.disarm(); }
  ArmedDeadline(const ArmedDeadline&) = delete;
  ArmedDeadline& operator=(const ArmedDeadline&) = delete;

 private:
  IoDeadline& deadline_;
};

// The Status for a failed socket or parser operation. `has_expired` says whether the
// operation's deadline cancelled it.
inline Status io_status(const ErrorCode& ec, bool has_expired, std::string_view what) {
  if (has_expired) return Status::deadline_exceeded("{}: no progress within the timeout", what);
  if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category() &&
      ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
    return Status::invalid_argument("{}: malformed message: {}", what, ec.message());
  }
  return Status::unavailable("{}: {}", what, ec.message());
}

// A request body that stopped short is the client's doing, not the server's: 400 as S3
// answers (a 5xx invites endless retries). RequestTimeout when it stalled past the body
// timeout, IncompleteBody when the connection ended first; anything else as it was.
inline Status client_body_error(Status failed) {
  if (failed.code() == Code::kDeadlineExceeded) {
    return Status::invalid_argument("the request body stalled: {}", failed.message()).with_reason("RequestTimeout");
  }
  if (failed.code() == Code::kUnavailable) {
    return Status::invalid_argument("the request body ended before its length: {}", failed.message())
        .with_reason("IncompleteBody");
  }
  return failed;
}

// Whether the request's transfer codings are ones Silo reads: none, or exactly chunked.
template <typename Fields>
bool is_readable_transfer_coding(const bhttp::request_header<Fields>& message) {
  size_t codings = 0;
  for (const auto& field : message) {
    if (field.name() != bhttp::field::transfer_encoding) continue;
    std::string_view value = field.value();
    while (!value.empty()) {
      const size_t comma = value.find(',');
      std::string_view coding = value.substr(0, comma);
      value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
      if (coding.empty()) continue;
      if (!beast::iequals(coding, "chunked")) return false;
      ++codings;
    }
  }
  return codings <= 1;
}

inline Method to_method(bhttp::verb verb) {
  switch (verb) {
    case bhttp::verb::get: return Method::kGet;
    case bhttp::verb::head: return Method::kHead;
    case bhttp::verb::put: return Method::kPut;
    case bhttp::verb::post: return Method::kPost;
    case bhttp::verb::delete_: return Method::kDelete;
    case bhttp::verb::options: return Method::kOptions;
    default: return Method::kOther;
  }
}

inline Headers to_headers(const bhttp::fields& fields) {
  Headers headers;
  for (const auto& field : fields) {
    headers.add(std::string(field.name_string()), std::string(field.value()));
  }
  return headers;
}

// The RequestHead a handler sees, from a head the parser read (the connection's
// remote_address and is_tls are the caller's). kInvalidArgument: the path's
// percent-encoding is bad (400). kUnimplemented: a transfer coding other than chunked
// (gzip, ...), with which the parser would read no body and a handler would store
// something else than was sent (RFC 9112 6.1: 501).
inline Result<RequestHead> to_request_head(const bhttp::request_parser<bhttp::buffer_body>& parser) {
  const auto& message = parser.get();
  RequestHead head;
  head.method = to_method(message.method());
  head.method_text = std::string(message.method_string());
  head.target = std::string(message.target());
  const size_t question = head.target.find('?');
  Result<std::string> path = text::percent_decode(std::string_view(head.target).substr(0, question));
  if (!path) return Status::invalid_argument("bad percent-encoding in the path: {}", path.status().message());
  head.path = std::move(path).value();
  if (question != std::string::npos) head.query = head.target.substr(question + 1);
  head.headers = to_headers(message);
  if (const auto length = parser.content_length()) head.content_length = *length;
  head.is_chunked = parser.chunked();
  if (!is_readable_transfer_coding(message)) {
    return Status::unimplemented("only the chunked transfer coding is read");
  }
  const auto expect = message.find(bhttp::field::expect);
  head.expects_continue =
      message.version() >= 11 && expect != message.end() && beast::iequals(expect->value(), "100-continue");
  return head;
}

// Copies our headers into Beast's, skipping the framing fields the caller sets itself.
inline void copy_headers(const Headers& from, bhttp::fields& to) {
  for (const auto& [name, value] : from.fields()) {
    const bhttp::field known = bhttp::string_to_field(name);
    if (known == bhttp::field::content_length || known == bhttp::field::transfer_encoding ||
        known == bhttp::field::connection || known == bhttp::field::host) {
      continue;
    }
    to.insert(name, value);
  }
}

// Reads a message body after its head. A Content-Length body is read straight from the
// socket into the caller's buffer, one copy and one syscall per read whatever its size;
// chunked and close-delimited bodies go through Beast's parser. The parser is left
// unfinished in the first case, so completion is asked of this object, not the parser.
template <bool IsRequest>
class BodyStream {
 public:
  using Parser = bhttp::parser<IsRequest, bhttp::buffer_body>;
  // The room a chunked body is read into (one read(2) each).
  static constexpr size_t kChunkedReadBytes = 64 * 1024;

  // Requires: `parser` has read the head.
  explicit BodyStream(Parser& parser) : parser_(parser) {
    if (parser.is_done()) {
      is_done_ = true;
    } else if (!parser.chunked() && parser.content_length()) {
      remaining_ = *parser.content_length();
    }
  }

  // True once every byte of the body was received.
  bool is_done() const { return is_done_; }
  // Bytes of a Content-Length body not yet read (nullopt: chunked or until close).
  std::optional<uint64_t> remaining() const { return remaining_; }
  // Counts `n` bytes of a Content-Length body taken off the socket by other means
  // (splice). Requires: n <= *remaining().
  void skip(uint64_t n) {
    *remaining_ -= n;
    if (*remaining_ == 0) is_done_ = true;
  }

  // Reads up to buffer.size() bytes; 0 once the body has ended.
  Awaitable<Result<size_t>> read(SocketStream& socket, beast::flat_buffer& read_buffer,
                                 std::span<char> buffer, IoDeadline& deadline,
                                 std::chrono::steady_clock::duration timeout) {
    if (is_done_ || buffer.empty()) co_return size_t{0};
    if (remaining_) co_return co_await read_sized(socket, read_buffer, buffer, deadline, timeout);
    // Beast reads as much as the buffer has room for, 512 bytes when it is new: a chunked
    // body read that way costs a syscall per 512 bytes.
    if (read_buffer.capacity() < kChunkedReadBytes) read_buffer.reserve(kChunkedReadBytes);
    while (!parser_.is_done()) {
      parser_.get().body().data = buffer.data();
      parser_.get().body().size = buffer.size();
      ErrorCode ec;
      {
        ArmedDeadline armed(deadline, timeout);
        co_await bhttp::async_read_some(socket, read_buffer, parser_, redirect(ec));
      }
      const size_t n = buffer.size() - parser_.get().body().size;
      parser_.get().body().data = nullptr;
      if (ec && ec != bhttp::error::need_buffer) {
        co_return io_status(ec, deadline.has_expired(), "reading body");
      }
      if (n > 0) co_return n;
    }
    is_done_ = true;
    co_return size_t{0};
  }

 private:
  Awaitable<Result<size_t>> read_sized(SocketStream& socket, beast::flat_buffer& read_buffer,
                                       std::span<char> buffer, IoDeadline& deadline,
                                       std::chrono::steady_clock::duration timeout) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), *remaining_));
    size_t n = 0;
    if (read_buffer.size() > 0) {
      // Body bytes that arrived with the head.
      n = asio::buffer_copy(asio::buffer(buffer.data(), want), read_buffer.data());
      read_buffer.consume(n);
    } else {
      ErrorCode ec;
      {
        ArmedDeadline armed(deadline, timeout);
        n = co_await socket.async_read_some(asio::buffer(buffer.data(), want), redirect(ec));
      }
      if (ec) {
        if (ec == asio::error::eof) {
          co_return Status::unavailable("reading body: peer closed with {} bytes missing",
                                        *remaining_);
        }
        co_return io_status(ec, deadline.has_expired(), "reading body");
      }
    }
    *remaining_ -= n;
    if (*remaining_ == 0) is_done_ = true;
    co_return n;
  }

  Parser& parser_;
  std::optional<uint64_t> remaining_;  // set for a Content-Length body
  bool is_done_ = false;
};

// The server's side of a relay by splice(2): client.cc moves a relayed response body
// from its upstream socket straight into the response socket, while the exchange keeps
// its length bookkeeping. Implemented by server.cc's exchange.
class RawResponseSink {
 public:
  virtual ~RawResponseSink() = default;
  // False when the response's bytes cannot be raw socket bytes (TLS: they are ciphertext).
  virtual bool takes_raw_bytes() const = 0;
  // The response socket (non-blocking) when `length` more body bytes may be sent raw now:
  // begun with a known length, not HEAD, not failed, within the announced length.
  virtual Awaitable<Result<int>> begin_raw(uint64_t length) = 0;
  // Parks until the response socket is writable (body idle timeout).
  virtual Awaitable<Status> wait_writable() = 0;
  virtual void wrote_raw(uint64_t n) = 0;
  // Marks the response failed (the connection closes after it); returns `status`.
  virtual Status fail_raw(Status status) = 0;
};

inline std::string chunk_size_line(size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string line;
  do {
    line.insert(line.begin(), kHex[size & 0xF]);
    size >>= 4;
  } while (size != 0);
  line += "\r\n";
  return line;
}

}  // namespace silo::http::detail
