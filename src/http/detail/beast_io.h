#pragma once

// Beast and Asio helpers shared by server.cc and client.cc. Only those two translation
// units include this header: Beast costs seconds of compile time per file.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "http/message.h"

namespace silo::http::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

inline auto redirect(ErrorCode& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// Cancels the pending operations of one socket when an operation makes no progress
// within its timeout. Owned by the connection that owns the socket, used from that
// connection's coroutine. The timer's handler only reaches the socket through `state_`,
// which the destructor detaches, so a handler already queued when the owner dies is
// harmless; the generation count keeps a late handler from cancelling the next operation.
class IoDeadline {
 public:
  IoDeadline(const asio::any_io_executor& executor, tcp::socket& socket)
      : timer_(executor), state_(std::make_shared<State>()) {
    state_->socket = &socket;
  }
  ~IoDeadline() {
    std::lock_guard lock(state_->mu);
    state_->socket = nullptr;
  }
  IoDeadline(const IoDeadline&) = delete;
  IoDeadline& operator=(const IoDeadline&) = delete;

  void arm(std::chrono::steady_clock::duration timeout) {
    uint64_t generation = 0;
    {
      std::lock_guard lock(state_->mu);
      generation = ++state_->generation;
      state_->has_expired = false;
    }
    timer_.expires_after(timeout);
    timer_.async_wait([state = state_, generation](const ErrorCode& ec) {
      if (ec) return;
      std::lock_guard lock(state->mu);
      if (state->generation != generation || state->socket == nullptr) return;
      state->has_expired = true;
      ErrorCode ignored;
      state->socket->cancel(ignored);
    });
  }

  void disarm() {
    {
      std::lock_guard lock(state_->mu);
      ++state_->generation;
    }
    timer_.cancel();
  }

  bool has_expired() const {
    std::lock_guard lock(state_->mu);
    return state_->has_expired;
  }

 private:
  struct State {
    mutable std::mutex mu;
    tcp::socket* socket = nullptr;
    uint64_t generation = 0;
    bool has_expired = false;
  };
  asio::steady_timer timer_;
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

// Copies our headers into Beast's, skipping the framing fields the caller sets itself.
inline void copy_headers(const Headers& from, bhttp::fields& to) {
  for (const auto& [name, value] : from.fields()) {
    const bhttp::field known = bhttp::string_to_field(name);
    if (known == bhttp::field::content_length || known == bhttp::field::transfer_encoding ||
        known == bhttp::field::connection) {
      continue;
    }
    to.insert(name, value);
  }
}

// Reads some body bytes into `buffer` through a buffer_body parser whose head was read.
// Returns 0 once the body has ended; keeps reading while the parser only consumes chunk
// framing.
template <bool IsRequest>
Awaitable<Result<size_t>> read_body_some(tcp::socket& socket, beast::flat_buffer& read_buffer,
                                         bhttp::parser<IsRequest, bhttp::buffer_body>& parser,
                                         std::span<char> buffer, IoDeadline& deadline,
                                         std::chrono::steady_clock::duration timeout) {
  if (buffer.empty()) co_return size_t{0};
  while (!parser.is_done()) {
    parser.get().body().data = buffer.data();
    parser.get().body().size = buffer.size();
    ErrorCode ec;
    {
      ArmedDeadline armed(deadline, timeout);
      co_await bhttp::async_read_some(socket, read_buffer, parser, redirect(ec));
    }
    const size_t n = buffer.size() - parser.get().body().size;
    parser.get().body().data = nullptr;
    if (ec && ec != bhttp::error::need_buffer) {
      co_return io_status(ec, deadline.has_expired(), "reading body");
    }
    if (n > 0) co_return n;
  }
  co_return size_t{0};
}

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
