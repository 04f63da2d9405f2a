#pragma once

// The server's TLS engine (ADR 0022): OpenSSL reads and writes the connection's socket
// itself (a socket BIO), and Asio's reactor only waits for readiness when OpenSSL asks for
// it. Unlike asio::ssl::stream (a memory BIO pair between OpenSSL and the socket) this
// lets OpenSSL hand the record layer to the kernel (kTLS) where the kernel offers it, and
// then SSL_sendfile sends file bytes encrypted without bringing them to user space; without
// kTLS it still saves a copy of every record between the BIO pair and the socket.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>

#include "base/result.h"

namespace silo::http::detail {

// TLS (server side) over one connected socket. Not thread-safe: used from the strand of
// the connection that owns both. Operations are Asio asynchronous operations completing
// with (error_code, bytes); one read and one write may be pending at once. Errors are
// those of asio::ssl::stream: eof after the peer's close_notify, ssl::error::
// stream_truncated when the connection ended without one, system errors, SSL errors.
class TlsSocket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // Requires: `socket` is connected and non-blocking (native_non_blocking), and outlives
  // the TlsSocket. The SSL object does not own the descriptor.
  static Result<std::unique_ptr<TlsSocket>> create(boost::asio::ip::tcp::socket& socket, SSL_CTX* context) {
    SSL* ssl = SSL_new(context);
    if (ssl == nullptr) return Status::resource_exhausted("TLS: no memory for a connection's SSL object");
    auto tls = std::unique_ptr<TlsSocket>(new TlsSocket(socket, ssl));
    if (SSL_set_fd(ssl, socket.native_handle()) != 1) return Status::internal("TLS: SSL_set_fd failed");
    SSL_set_accept_state(ssl);
    // A write that waited for the socket is retried from the same bytes, but Beast may
    // hand them over in a buffer that moved.
    SSL_set_mode(ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return tls;
  }
  ~TlsSocket() { SSL_free(ssl_); }
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  SSL* native_handle() { return ssl_; }

  // Whether OpenSSL moved the sending side's record layer into the kernel (known after the
  // handshake): then async_sendfile may be used.
  bool is_ktls_send() const { return BIO_get_ktls_send(SSL_get_wbio(ssl_)) != 0; }

  template <typename Token>
  auto async_handshake(Token&& token) {
    return run([this](size_t& /*bytes*/, boost::system::error_code& ec) {
      ERR_clear_error();
      const int result = SSL_do_handshake(ssl_);
      return result == 1 ? Next::kDone : failed(result, errno, ec);
    }, std::forward<Token>(token));
  }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return run_some(first_nonempty<boost::asio::mutable_buffer>(buffers), &SSL_read_ex, std::forward<Token>(token));
  }

  // Seals the first non-empty buffer (as asio::ssl::stream does): callers that want a
  // head and a body in one record put them in one buffer.
  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return run_some(first_nonempty<boost::asio::const_buffer>(buffers), &SSL_write_ex, std::forward<Token>(token));
  }

  // Sends up to `size` bytes of `fd` from `offset`, encrypted by the kernel; completes with
  // the bytes sent (0: the file ended). Requires: is_ktls_send(), and no write pending.
  template <typename Token>
  auto async_sendfile(int fd, off_t offset, size_t size, Token&& token) {
    return run([this, fd, offset, size](size_t& bytes, boost::system::error_code& ec) {
      ERR_clear_error();
      const ossl_ssize_t sent = SSL_sendfile(ssl_, fd, offset, size, 0);
      if (sent >= 0) {
        bytes = static_cast<size_t>(sent);
        return Next::kDone;
      }
      return failed(static_cast<int>(sent), errno, ec);
    }, std::forward<Token>(token));
  }

 private:
  enum class Next { kDone, kWaitRead, kWaitWrite };

  TlsSocket(boost::asio::ip::tcp::socket& socket, SSL* ssl) : socket_(socket), ssl_(ssl) {}

  template <typename Buffer, typename Buffers>
  static Buffer first_nonempty(const Buffers& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
         ++it) {
      const Buffer buffer(*it);
      if (buffer.size() > 0) return buffer;
    }
    return Buffer();
  }

  // What a failed OpenSSL call (returning `result`, with errno `error_number` right after
  // it) asks for: a wait for the socket, or the end of the operation with `ec`.
  Next failed(int result, int error_number, boost::system::error_code& ec) const {
    switch (SSL_get_error(ssl_, result)) {
      case SSL_ERROR_WANT_READ:
        return Next::kWaitRead;
      case SSL_ERROR_WANT_WRITE:
        return Next::kWaitWrite;
      case SSL_ERROR_ZERO_RETURN:  // the peer's close_notify
        ec = boost::asio::error::eof;
        break;
      case SSL_ERROR_SYSCALL:
        if (error_number != 0 && error_number != EAGAIN) {
          ec.assign(error_number, boost::system::system_category());
        } else {
          ec = boost::asio::ssl::error::stream_truncated;
        }
        break;
      default: {
        const unsigned long error = ERR_peek_last_error();
        if (ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ec = boost::asio::ssl::error::stream_truncated;
        } else {
          ec.assign(static_cast<int>(error), boost::asio::error::get_ssl_category());
        }
        break;
      }
    }
    ERR_clear_error();
    return Next::kDone;
  }

  // Reads or writes `buffer` with `call` (SSL_read_ex or SSL_write_ex); an empty one is
  // done at once with 0 bytes.
  template <typename Buffer, typename Call, typename Token>
  auto run_some(Buffer buffer, Call call, Token&& token) {
    return run([this, buffer, call](size_t& bytes, boost::system::error_code& ec) {
      if (buffer.size() == 0) return Next::kDone;
      ERR_clear_error();
      const int result = call(ssl_, buffer.data(), buffer.size(), &bytes);
      return result == 1 ? Next::kDone : failed(result, errno, ec);
    }, std::forward<Token>(token));
  }

  // Runs `attempt` (one OpenSSL call that fills the bytes done and an error) until it is
  // done, waiting for the socket's readiness between tries. A socket closed meanwhile
  // (its descriptor number may already belong to another connection) is never handed to
  // OpenSSL again. Completion is never inside the initiating call: a first try that is
  // done at once completes through a post, as Asio's operations do.
  template <typename Attempt, typename Token>
  auto run(Attempt attempt, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code, size_t)>(
        [this, attempt = std::move(attempt), is_first = true](auto& self,
                                                               boost::system::error_code waited = {}) mutable {
          const bool was_first = std::exchange(is_first, false);
          boost::system::error_code ec = waited;
          size_t bytes = 0;
          Next next = Next::kDone;
          if (!ec && !socket_.is_open()) ec = boost::asio::error::bad_descriptor;
          if (!ec) next = attempt(bytes, ec);
          if (next == Next::kWaitRead) {
            socket_.async_wait(boost::asio::ip::tcp::socket::wait_read, std::move(self));
          } else if (next == Next::kWaitWrite) {
            socket_.async_wait(boost::asio::ip::tcp::socket::wait_write, std::move(self));
          } else if (!was_first) {
            self.complete(ec, bytes);
          } else {
            boost::asio::post(socket_.get_executor(), [self = std::move(self), ec, bytes]() mutable {
              self.complete(ec, bytes);
            });
          }
        },
        token, socket_);
  }

  boost::asio::ip::tcp::socket& socket_;
  SSL* const ssl_;
};

}  // namespace silo::http::detail
