#pragma once

// What the server's tests share: a fixture running a Server on a test io_context,
// deterministic body bytes, a raw socket client and stock handlers. Test-only.
#include "http/server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include "base/hash.h"
#include "http/client.h"
#include "http/range.h"

namespace silo::http::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

inline constexpr size_t kBig = 64 * 1024 * 1024;

// Deterministic bytes: a pseudo-random pattern whose length is prime, so chunks of any
// power-of-two size start at different places in it and misplaced bytes are caught.
inline constexpr size_t kPatternSize = 1000003;
inline const std::string& pattern() {
  static const std::string bytes = [] {
    std::string out(2 * kPatternSize, '\0');
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < kPatternSize; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      out[i] = out[i + kPatternSize] = static_cast<char>(x);
    }
    return out;
  }();
  return bytes;
}

inline void fill(std::span<char> out, uint64_t offset) {
  for (size_t done = 0; done < out.size();) {
    const size_t start = (offset + done) % kPatternSize;
    const size_t n = std::min(out.size() - done, kPatternSize);
    std::memcpy(out.data() + done, pattern().data() + start, n);
    done += n;
  }
}

inline uint64_t digest_of_range(uint64_t offset, uint64_t length) {
  hash::Xxh3Stream stream;
  std::vector<char> chunk(1 << 20);
  for (uint64_t done = 0; done < length;) {
    const size_t n = std::min<uint64_t>(chunk.size(), length - done);
    fill(std::span(chunk.data(), n), offset + done);
    stream.update(std::span<const char>(chunk.data(), n));
    done += n;
  }
  return stream.digest();
}

inline uint64_t digest_of(std::string_view text) {
  hash::Xxh3Stream stream;
  stream.update(std::span<const char>(text.data(), text.size()));
  return stream.digest();
}

// Polls `condition` until it holds or `timeout` passes.
inline bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 2s) {
  const auto give_up_at = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > give_up_at) return false;
    std::this_thread::yield();
  }
  return true;
}

inline ClientRequest request(Method method, std::string target) {
  ClientRequest r;
  r.method = method;
  r.target = std::move(target);
  return r;
}

inline ClientOptions client_options(std::chrono::milliseconds io_timeout) {
  ClientOptions options;
  options.io_timeout = io_timeout;
  options.max_idle_per_endpoint = 4;
  return options;
}

inline Awaitable<void> async_wait_until(const std::atomic<bool>& flag) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!flag) {
    timer.expires_after(1ms);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

// A blocking socket for the tests that must send what the Client never would.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : socket_(io_) {
    boost::system::error_code ec;
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
    const timeval timeout{.tv_sec = 3, .tv_usec = 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  void send(std::string_view data) {
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(data), ec);
  }
  // Reads until the server closes (or 3 s pass without a byte).
  std::string read_to_end() {
    std::string out;
    char buffer[4096];
    while (true) {
      const ssize_t n = ::recv(socket_.native_handle(), buffer, sizeof buffer, 0);
      if (n <= 0) break;
      out.append(buffer, static_cast<size_t>(n));
    }
    return out;
  }
  // Reads until `marker` shows up.
  std::string read_until(std::string_view marker) {
    std::string out;
    char byte = 0;
    while (out.find(marker) == std::string::npos) {
      if (::recv(socket_.native_handle(), &byte, 1, 0) <= 0) break;
      out.push_back(byte);
    }
    return out;
  }
  size_t read_some_bytes(size_t count) {
    std::vector<char> buffer(count);
    size_t total = 0;
    while (total < count) {
      const ssize_t n = ::recv(socket_.native_handle(), buffer.data() + total, count - total, 0);
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
    return total;
  }
  void close() {
    boost::system::error_code ec;
    socket_.close(ec);
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
};

class ServerTest : public ::testing::Test {
 protected:

  // With `tls` the server speaks HTTPS and endpoint_ is an https:// one.
  void start(Handler handler, ServerLimits limits = {}, std::function<void(Headers&)> stamp = {},
             ServerTls tls = {}) {
    const bool is_tls = tls.is_enabled();
    Result<std::unique_ptr<Server>> server = Server::create(
        io_,
        ServerOptions{.host = "127.0.0.1", .port = 0, .limits = limits, .stamp = std::move(stamp), .tls = std::move(tls)},
        std::move(handler));
    ASSERT_TRUE(server) << server.status();
    server_ = std::move(server).value();
    server_->start();
    endpoint_ = *Endpoint::parse(fmt::format("{}://127.0.0.1:{}", is_tls ? "https" : "http", server_->port()));
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  // Runs a coroutine on a strand of the test's io_context and waits for its value.
  template <typename MakeAwaitable>
  auto run(MakeAwaitable make, std::chrono::seconds timeout = 10s) {
    using T = typename decltype(make())::value_type;
    auto promise = std::make_shared<std::promise<T>>();
    std::future<T> future = promise->get_future();
    asio::co_spawn(
        asio::make_strand(io_),
        [make, promise]() -> Awaitable<void> { promise->set_value(co_await make()); },
        asio::detached);
    if (future.wait_for(timeout) != std::future_status::ready) {
      ADD_FAILURE() << "coroutine did not finish in time";
      std::abort();
    }
    return future.get();
  }

  void TearDown() override {
    if (server_) run([&]() -> Awaitable<bool> { co_await server_->stop(); co_return true; });
    work_.reset();
    io_.stop();
    for (auto& thread : threads_) thread.join();
  }

  Result<ClientResponse> call(ClientRequest request, std::string body = "",
                              size_t max_body = 1 << 30) {
    return run([&, request, body]() { return client_->call(endpoint_, request, body, max_body); });
  }

  asio::io_context io_{2};
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::vector<std::thread> threads_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Client> client_ =
      Client::create(io_.get_executor(), client_options(5000ms));
  Endpoint endpoint_;
  std::atomic<bool> release_ = false;
};

inline Handler echo_path_handler(std::atomic<int>* calls = nullptr) {
  return [calls](Exchange& exchange) -> Awaitable<void> {
    if (calls) ++*calls;
    Result<std::string> body = co_await read_all(exchange.body(), 1 << 20);
    ResponseHead head;
    head.headers.set("X-Body-Size", std::to_string(body ? body->size() : 0));
    std::ignore = co_await exchange.response().send(std::move(head), exchange.request().path);
  };
}

// "/data/N" streams N pattern bytes ("/cut/N" announces N, sends half and stops);
// "/relay/PATH" fetches PATH from this same server and relays its body with relay_body().
inline Handler relaying_handler(std::shared_ptr<Client>* client, Endpoint* self) {
  return [client, self](Exchange& exchange) -> Awaitable<void> {
    const std::string path = exchange.request().path;
    // /relay/...: relay_body(); /parts/...: relay_body_part() in pieces of 7 B, 300,000 B
    // (spliced), 1 B and the rest.
    const bool is_parts = path.rfind("/parts/", 0) == 0;
    if (path.rfind("/relay/", 0) == 0 || is_parts) {
      auto call = co_await (*client)->start(*self, request(Method::kGet, path.substr(path.find('/', 1))), uint64_t{0});
      if (!call) co_return;
      auto head = co_await (*call)->finish();
      if (!head) co_return;
      ResponseHead out;
      out.status = head->status;
      if (!(co_await exchange.response().begin(std::move(out), head->content_length)).is_ok()) co_return;
      if (!is_parts) {
        std::ignore = co_await (*call)->relay_body(exchange.response());
        co_return;
      }
      uint64_t left = head->content_length.value_or(0);
      for (const uint64_t piece : {uint64_t{7}, uint64_t{300000}, uint64_t{1}, UINT64_MAX}) {
        const uint64_t n = std::min(piece, left);
        if (!(co_await (*call)->relay_body_part(exchange.response(), n)).is_ok()) co_return;
        left -= n;
      }
      co_return;
    }
    const bool is_cut = path.rfind("/cut/", 0) == 0;
    const uint64_t size = std::stoull(path.substr(path.rfind('/') + 1));
    if (!(co_await exchange.response().begin({}, size)).is_ok()) co_return;
    std::vector<char> chunk(1 << 20);
    const uint64_t sent = is_cut ? size / 2 : size;
    for (uint64_t offset = 0; offset < sent; offset += chunk.size()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), sent - offset));
      fill(std::span(chunk.data(), n), offset);
      if (!(co_await exchange.response().write(std::span<const char>(chunk.data(), n))).is_ok()) co_return;
    }
  };
}

}  // namespace silo::http::testing
