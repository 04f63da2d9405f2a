#include "http/server_test_support.h"

#include <sys/socket.h>

#include <atomic>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "base/hash.h"
#include "http/range.h"

namespace silo::http {
namespace {

using namespace std::chrono_literals;
using namespace testing;

TEST_F(ServerTest, KeepAliveReusesTheConnection) {
  std::atomic<int> calls = 0;
  start(echo_path_handler(&calls));
  for (int i = 0; i < 3; ++i) {
    Result<ClientResponse> response = call(request(Method::kGet, "/a%20b?x=1"));
    ASSERT_TRUE(response) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "/a b");
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(ServerTest, LargeRequestBodyIsStreamed) {
  start([](Exchange& exchange) -> Awaitable<void> {
    hash::Xxh3Stream stream;
    std::vector<char> buffer(256 * 1024);
    uint64_t total = 0;
    while (true) {
      Result<size_t> n = co_await exchange.body().read(buffer);
      if (!n || *n == 0) break;
      stream.update(std::span<const char>(buffer.data(), *n));
      total += *n;
    }
    std::ignore = co_await exchange.response().send(
        {}, fmt::format("{} {}", total, hash::u64_hex(stream.digest())));
  });
  Result<ClientResponse> response = run([&]() -> Awaitable<Result<ClientResponse>> {
    CO_ASSIGN_OR_RETURN(std::unique_ptr<Call> call,
                        co_await client_->start(endpoint_, request(Method::kPut, "/big"),
                                                kBig));
    std::vector<char> chunk(1 << 20);
    for (uint64_t offset = 0; offset < kBig; offset += chunk.size()) {
      fill(chunk, offset);
      CO_RETURN_IF_ERROR(co_await call->write(chunk));
    }
    CO_ASSIGN_OR_RETURN(ClientResponse head, co_await call->finish());
    CO_ASSIGN_OR_RETURN(head.body, co_await read_all(call->body(), 1024));
    co_return head;
  });
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->body, fmt::format("{} {}", kBig, hash::u64_hex(digest_of_range(0, kBig))));
}

TEST_F(ServerTest, LargeResponseIsStreamed) {
  start([](Exchange& exchange) -> Awaitable<void> {
    if (!(co_await exchange.response().begin({}, kBig)).is_ok()) co_return;
    std::vector<char> chunk(1 << 20);
    for (uint64_t offset = 0; offset < kBig; offset += chunk.size()) {
      fill(chunk, offset);
      if (!(co_await exchange.response().write(chunk)).is_ok()) co_return;
    }
  });
  Result<ClientResponse> response = call(request(Method::kGet, "/big"));
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->content_length, kBig);
  ASSERT_EQ(response->body.size(), kBig);
  EXPECT_EQ(digest_of(response->body), digest_of_range(0, kBig));
}

TEST_F(ServerTest, RelayBodyMovesSmallAndLargeBodiesIntact) {
  start(relaying_handler(&client_, &endpoint_));
  // 100 B goes through a buffer; the others through splice(2), in pieces that do not
  // line up with the pipe's size, one after the other through the pipe the thread keeps.
  for (const uint64_t size : {uint64_t{100}, uint64_t{200 << 10}, uint64_t{(5 << 20) + 7}, uint64_t{kBig + 3}}) {
    Result<ClientResponse> response = call(request(Method::kGet, fmt::format("/relay/data/{}", size)));
    ASSERT_TRUE(response) << response.status();
    EXPECT_EQ(response->status, 200);
    ASSERT_EQ(response->body.size(), size);
    EXPECT_EQ(digest_of(response->body), digest_of_range(0, size)) << size;
  }
  // Keep-alive survives on both hops: the relayed connections went back to their pools.
  Result<ClientResponse> again = call(request(Method::kGet, "/relay/data/300000"));
  ASSERT_TRUE(again) << again.status();
  EXPECT_EQ(digest_of(again->body), digest_of_range(0, 300000));
}

TEST_F(ServerTest, RelayBodyPartMovesABodyInPiecesOfAnySize) {
  start(relaying_handler(&client_, &endpoint_));
  // 300 B: every piece through a buffer, the last ones empty.
  for (const uint64_t size : {uint64_t{300}, uint64_t{300008}, uint64_t{(3 << 20) + 5}}) {
    Result<ClientResponse> response = call(request(Method::kGet, fmt::format("/parts/data/{}", size)));
    ASSERT_TRUE(response) << response.status();
    ASSERT_EQ(response->body.size(), size);
    EXPECT_EQ(digest_of(response->body), digest_of_range(0, size)) << size;
  }
  Result<ClientResponse> cut = call(request(Method::kGet, fmt::format("/parts/cut/{}", 8 << 20)));
  EXPECT_FALSE(cut) << "an upstream cut mid-part cuts the response";
  Result<ClientResponse> after = call(request(Method::kGet, "/relay/data/1000"));
  ASSERT_TRUE(after) << after.status();
  EXPECT_EQ(after->body.size(), 1000u);
  // Spliced again: the pipe the cut left bytes in was dropped, not kept for this one.
  Result<ClientResponse> spliced = call(request(Method::kGet, "/relay/data/300000"));
  ASSERT_TRUE(spliced) << spliced.status();
  EXPECT_EQ(digest_of(spliced->body), digest_of_range(0, 300000));
}

TEST_F(ServerTest, RelayBodyCutUpstreamCutsTheResponse) {
  start(relaying_handler(&client_, &endpoint_));
  Result<ClientResponse> response = call(request(Method::kGet, fmt::format("/relay/cut/{}", 8 << 20)));
  ASSERT_FALSE(response);  // the client sees a short body, never a complete-looking one
  // The server still serves.
  Result<ClientResponse> after = call(request(Method::kGet, "/relay/data/1000"));
  ASSERT_TRUE(after) << after.status();
  EXPECT_EQ(after->body.size(), 1000u);
  // Spliced again: the pipe the cut left bytes in was dropped, not kept for this one.
  Result<ClientResponse> spliced = call(request(Method::kGet, "/relay/data/300000"));
  ASSERT_TRUE(spliced) << spliced.status();
  EXPECT_EQ(digest_of(spliced->body), digest_of_range(0, 300000));
}

TEST_F(ServerTest, ChunkedRequestAndResponse) {
  start([](Exchange& exchange) -> Awaitable<void> {
    const bool is_chunked = exchange.request().is_chunked;
    Result<std::string> body = co_await read_all(exchange.body(), 1 << 20);
    if (!body || !is_chunked) co_return;  // 500
    if (!(co_await exchange.response().begin({}, std::nullopt)).is_ok()) co_return;
    for (size_t i = 0; i < body->size(); i += 1000) {
      const std::string_view piece = std::string_view(*body).substr(i, 1000);
      if (!(co_await exchange.response().write(piece)).is_ok()) co_return;
    }
  });
  std::string sent(100 * 1000 + 7, '\0');
  fill(sent, 0);
  for (int i = 0; i < 2; ++i) {  // the second call proves the chunked framing ended cleanly
    Result<ClientResponse> response = run([&]() -> Awaitable<Result<ClientResponse>> {
      CO_ASSIGN_OR_RETURN(std::unique_ptr<Call> call,
                          co_await client_->start(endpoint_, request(Method::kPost, "/c"),
                                                  std::nullopt));
      for (size_t offset = 0; offset < sent.size(); offset += 4096) {
        CO_RETURN_IF_ERROR(co_await call->write(std::string_view(sent).substr(offset, 4096)));
      }
      CO_ASSIGN_OR_RETURN(ClientResponse head, co_await call->finish());
      CO_ASSIGN_OR_RETURN(head.body, co_await read_all(call->body(), 1 << 20));
      co_return head;
    });
    ASSERT_TRUE(response) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->content_length, std::nullopt);
    EXPECT_EQ(response->headers.get("transfer-encoding"), "chunked");
    EXPECT_TRUE(response->body == sent);
  }
  EXPECT_EQ(server_->connection_count(), 1u);
}

class TempFile {
 public:
  explicit TempFile(size_t size) {
    char name[] = "/tmp/silo_http_test_XXXXXX";
    fd_ = ::mkstemp(name);
    ::unlink(name);
    std::string data(size, '\0');
    fill(data, 0);
    EXPECT_EQ(::write(fd_, data.data(), data.size()), static_cast<ssize_t>(size));
  }
  ~TempFile() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

TEST_F(ServerTest, SendFileWholeAndRange) {
  constexpr uint64_t kFileSize = 3 * 1024 * 1024 + 11;
  TempFile file(kFileSize);
  start([&file](Exchange& exchange) -> Awaitable<void> {
    ByteRange range{0, kFileSize};
    ResponseHead head;
    if (auto header = exchange.request().headers.get("Range")) {
      Result<std::optional<ByteRange>> parsed = parse_range(*header, kFileSize);
      if (!parsed) {
        std::ignore = co_await exchange.response().send({.status = 416, .headers = {}}, "");
        co_return;
      }
      if (*parsed) {
        range = **parsed;
        head.status = 206;
      }
    }
    if (!(co_await exchange.response().begin(std::move(head), range.length)).is_ok()) co_return;
    std::ignore = co_await exchange.response().send_file(file.fd(), range.first, range.length);
  });
  Result<ClientResponse> whole = call(request(Method::kGet, "/f"));
  ASSERT_TRUE(whole) << whole.status();
  ASSERT_EQ(whole->body.size(), kFileSize);
  EXPECT_EQ(digest_of(whole->body), digest_of_range(0, kFileSize));

  ClientRequest ranged = request(Method::kGet, "/f");
  ranged.headers.set("Range", "bytes=1000000-1999999");
  Result<ClientResponse> part = call(ranged);
  ASSERT_TRUE(part) << part.status();
  EXPECT_EQ(part->status, 206);
  ASSERT_EQ(part->body.size(), 1000000u);
  EXPECT_EQ(digest_of(part->body), digest_of_range(1000000, 1000000));

  ranged.headers.set("Range", "bytes=99999999-");
  Result<ClientResponse> unsatisfiable = call(ranged);
  ASSERT_TRUE(unsatisfiable);
  EXPECT_EQ(unsatisfiable->status, 416);
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(ServerTest, HeadGetsNoBody) {
  start([](Exchange& exchange) -> Awaitable<void> {
    if (exchange.request().path == "/streamed") {
      if (!(co_await exchange.response().begin({}, 5)).is_ok()) co_return;
      std::ignore = co_await exchange.response().write(std::string_view("hello"));
    } else {
      std::ignore = co_await exchange.response().send({}, "hello");
    }
  });
  for (const char* target : {"/sent", "/streamed"}) {
    Result<ClientResponse> head = call(request(Method::kHead, target));
    ASSERT_TRUE(head) << head.status();
    EXPECT_EQ(head->content_length, 5u);
    EXPECT_EQ(head->body, "");
    // Stray body bytes after the HEAD response would break this request on the same
    // connection.
    Result<ClientResponse> get = call(request(Method::kGet, target));
    ASSERT_TRUE(get) << get.status();
    EXPECT_EQ(get->body, "hello");
  }
  EXPECT_EQ(server_->connection_count(), 1u);

  RawClient raw(server_->port());
  raw.send("HEAD /sent HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string reply = raw.read_to_end();
  EXPECT_TRUE(reply.ends_with("\r\n\r\n")) << reply;
  EXPECT_NE(reply.find("Content-Length: 5"), std::string::npos) << reply;
}

// ServerOptions::stamp: every head carries its headers, over the handler's own, whether the
// answer is sent whole or streamed (a node's X-Silo-Node-Map-Version).
TEST_F(ServerTest, StampedHeadersGoOnEveryHead) {
  std::atomic<int> version = 7;
  start(
      [](Exchange& exchange) -> Awaitable<void> {
        ResponseHead head;
        head.headers.set("X-Version", "from-the-handler");
        if (exchange.request().path == "/whole") {
          std::ignore = co_await exchange.response().send(std::move(head), "whole");
        } else {
          if (!(co_await exchange.response().begin(std::move(head), std::nullopt)).is_ok()) co_return;
          std::ignore = co_await exchange.response().write(std::string_view("streamed"));
        }
      },
      {}, [&version](Headers& headers) { headers.set("X-Version", std::to_string(version.load())); });
  for (const char* path : {"/whole", "/streamed"}) {
    Result<ClientResponse> answer = call(request(Method::kGet, path));
    ASSERT_TRUE(answer) << answer.status();
    EXPECT_EQ(answer->headers.get("X-Version").value_or(""), std::to_string(version.load())) << path;
    ++version;
  }
  ASSERT_EQ(version.load(), 9);
  RawClient raw(server_->port());
  raw.send("GET /whole HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string reply = raw.read_to_end();
  EXPECT_NE(reply.find("X-Version: 9\r\n"), std::string::npos) << reply;
  EXPECT_EQ(reply.find("from-the-handler"), std::string::npos) << reply;
}

TEST_F(ServerTest, UnbegunResponseBecomes500) {
  start([](Exchange&) -> Awaitable<void> { co_return; });
  Result<ClientResponse> response = call(request(Method::kGet, "/"));
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->status, 500);
}

TEST_F(ServerTest, OversizedHeadGets431) {
  std::atomic<int> calls = 0;
  ServerLimits limits;
  limits.max_header_bytes = 4096;
  start(echo_path_handler(&calls), limits);
  RawClient raw(server_->port());
  raw.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(8192, 'a') + "\r\n\r\n");
  EXPECT_TRUE(raw.read_to_end().starts_with("HTTP/1.1 431"));
  EXPECT_EQ(calls, 0);
}

TEST_F(ServerTest, MalformedRequestsGet400) {
  std::atomic<int> calls = 0;
  start(echo_path_handler(&calls));
  for (const std::string_view request :
       {"BLAH\x01 / HTTP/1.1\r\n\r\n", "GET / HTTP/9.x\r\n\r\n", "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n"}) {
    RawClient raw(server_->port());
    raw.send(request);
    const std::string reply = raw.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << request << " -> " << reply;
  }
  EXPECT_EQ(calls, 0);
}

// Transfer codings other than chunked are refused before any handler sees the request:
// the parser would read no body, and the handler would store something else than was sent.
TEST_F(ServerTest, TransferCodingsOtherThanChunkedGet501) {
  std::atomic<int> calls = 0;
  start(echo_path_handler(&calls));
  for (const std::string_view coding : {"gzip", "gzip, chunked", "chunked, chunked", "identity", "x-custom"}) {
    RawClient raw(server_->port());
    raw.send(fmt::format("PUT /put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {}\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                         coding));
    const std::string reply = raw.read_to_end();  // ends: the server closes
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 501")) << coding << " -> " << reply;
    EXPECT_NE(reply.find("<Code>NotImplemented</Code>"), std::string::npos) << reply;
  }
  EXPECT_EQ(calls, 0);
  RawClient raw(server_->port());
  raw.send("PUT /put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n"
           "5\r\nhello\r\n0\r\n\r\n");
  const std::string reply = raw.read_to_end();
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200")) << reply;
  EXPECT_NE(reply.find("X-Body-Size: 5"), std::string::npos) << reply;
}

// A body that stalls is the client's doing: 400 RequestTimeout after the body timeout.
TEST_F(ServerTest, AStalledRequestBodyIsARequestTimeout) {
  std::promise<Status> read_status;
  ServerLimits limits;
  limits.body_idle_timeout = 300ms;
  start(
      [&](Exchange& exchange) -> Awaitable<void> {
        Result<std::string> body = co_await read_all(exchange.body(), 1 << 20);
        read_status.set_value(body.status());
        std::ignore = co_await exchange.response().send({}, "");
      },
      limits);
  RawClient raw(server_->port());
  raw.send("PUT /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(10, 'x'));
  std::future<Status> status = read_status.get_future();
  ASSERT_EQ(status.wait_for(5s), std::future_status::ready);
  const Status stalled = status.get();
  EXPECT_EQ(stalled.code(), Code::kInvalidArgument) << stalled;
  EXPECT_EQ(stalled.reason(), "RequestTimeout") << stalled;
}

TEST_F(ServerTest, Http10AndConnectionCloseAreHonoured) {
  start(echo_path_handler());
  {
    RawClient raw(server_->port());
    raw.send("GET /old HTTP/1.0\r\n\r\n");
    const std::string reply = raw.read_to_end();  // ends only if the server closes
    EXPECT_TRUE(reply.starts_with("HTTP/1.0 200")) << reply;
    EXPECT_TRUE(reply.ends_with("/old")) << reply;
  }
  RawClient raw(server_->port());
  raw.send("GET /new HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(raw.read_to_end().ends_with("/new"));
}

TEST_F(ServerTest, ClientThatDropsMidRequestBodyFailsOnlyItsRequest) {
  std::promise<Status> read_status;
  start([&](Exchange& exchange) -> Awaitable<void> {
    if (exchange.request().path != "/upload") co_return co_await echo_path_handler()(exchange);
    Result<std::string> body = co_await read_all(exchange.body(), 1 << 30);
    read_status.set_value(body.status());
    std::ignore = co_await exchange.response().send({}, "");
  });
  {
    RawClient raw(server_->port());
    raw.send("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" +
             std::string(1000, 'x'));
    raw.close();
  }
  std::future<Status> status = read_status.get_future();
  ASSERT_EQ(status.wait_for(2s), std::future_status::ready);
  const Status dropped = status.get();
  EXPECT_EQ(dropped.code(), Code::kInvalidArgument) << dropped;  // the client's doing: 400
  EXPECT_EQ(dropped.reason(), "IncompleteBody") << dropped;
  EXPECT_TRUE(wait_for([&] { return server_->connection_count() == 0; }));
  Result<ClientResponse> next = call(request(Method::kGet, "/next"));
  ASSERT_TRUE(next) << next.status();
  EXPECT_EQ(next->body, "/next");
}

TEST_F(ServerTest, ClientThatDropsMidResponseFailsOnlyItsRequest) {
  std::promise<Status> write_status;
  start([&](Exchange& exchange) -> Awaitable<void> {
    if (exchange.request().path != "/download") co_return co_await echo_path_handler()(exchange);
    Status status = co_await exchange.response().begin({}, kBig);
    std::vector<char> chunk(1 << 20, 'z');
    for (uint64_t offset = 0; status.is_ok() && offset < kBig; offset += chunk.size()) {
      status = co_await exchange.response().write(chunk);
    }
    write_status.set_value(status);
  });
  {
    RawClient raw(server_->port());
    raw.send("GET /download HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(raw.read_some_bytes(4 << 20), 4u << 20);
    raw.close();
  }
  std::future<Status> status = write_status.get_future();
  ASSERT_EQ(status.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(status.get().code(), Code::kUnavailable);
  EXPECT_TRUE(wait_for([&] { return server_->connection_count() == 0; }));
  Result<ClientResponse> next = call(request(Method::kGet, "/next"));
  ASSERT_TRUE(next) << next.status();
  EXPECT_EQ(next->body, "/next");
}

TEST_F(ServerTest, HeaderTimeoutClosesSlowClients) {
  std::atomic<int> calls = 0;
  ServerLimits limits;
  limits.header_timeout = 100ms;
  start(echo_path_handler(&calls), limits);
  RawClient raw(server_->port());
  const auto started = std::chrono::steady_clock::now();
  raw.send("GET / HTTP/1.1\r\nHost: x\r\n");  // never finishes the head
  EXPECT_EQ(raw.read_to_end(), "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 900ms);
  EXPECT_EQ(calls, 0);
}

TEST_F(ServerTest, IdleTimeoutClosesKeepAliveConnections) {
  ServerLimits limits;
  limits.idle_timeout = 50ms;
  start(echo_path_handler(), limits);
  ASSERT_TRUE(call(request(Method::kGet, "/1")));
  EXPECT_TRUE(wait_for([&] { return server_->connection_count() == 0; }));
  // The pooled connection is now dead; the client must notice and use a fresh one.
  Result<ClientResponse> again = call(request(Method::kGet, "/2"));
  ASSERT_TRUE(again) << again.status();
  EXPECT_EQ(again->body, "/2");
}

TEST_F(ServerTest, AtTheConnectionLimitWaitingClientsGiveWayToNewOnes) {
  ServerLimits limits;
  limits.max_connections = 2;
  start(echo_path_handler(), limits);
  // One idle keep-alive connection and one trickling its head in (slowloris).
  RawClient idle(server_->port());
  idle.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(idle.read_until("/first").ends_with("/first"));
  RawClient slow(server_->port());
  slow.send("GET /slow HTTP/1.1\r\nHost: x\r\n");
  ASSERT_TRUE(wait_for([&] { return server_->connection_count() == 2; }));
  // A newcomer is served: the one that waited longest (the idle one) was closed for it.
  RawClient third(server_->port());
  third.send("GET /third HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(third.read_until("/third").ends_with("/third"));
  EXPECT_EQ(idle.read_to_end(), "");
  // And another: now the slow one goes.
  RawClient fourth(server_->port());
  fourth.send("GET /fourth HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(fourth.read_until("/fourth").ends_with("/fourth"));
  slow.send("\r\n");
  EXPECT_EQ(slow.read_to_end(), "");
}

TEST_F(ServerTest, AtTheConnectionLimitWithEveryConnectionBusyNewOnesAreToldToSlowDown) {
  ServerLimits limits;
  limits.max_connections = 1;
  std::atomic<bool> handling = false;
  start(
      [this, &handling](Exchange& exchange) -> Awaitable<void> {
        handling = true;
        co_await async_wait_until(release_);
        std::ignore = co_await exchange.response().send({}, "done");
      },
      limits);
  RawClient busy(server_->port());
  busy.send("GET /busy HTTP/1.1\r\nHost: x\r\n\r\n");
  // Busy means its request is in the handler: a connection still reading its head only waits
  // and would give way to the newcomer.
  ASSERT_TRUE(wait_for([&] { return handling.load(); }));
  RawClient refused(server_->port());
  const std::string answer = refused.read_to_end();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503")) << answer;
  EXPECT_NE(answer.find("<Code>SlowDown</Code>"), std::string::npos) << answer;
  release_ = true;
  EXPECT_TRUE(busy.read_until("done").ends_with("done"));
}

TEST_F(ServerTest, BeyondTheRequestCapNewRequestsAreToldToSlowDownAndPeersPass) {
  ServerLimits limits;
  limits.max_requests_in_flight = 1;
  std::atomic<bool> handling = false;
  const Handler handler = [this, &handling](Exchange& exchange) -> Awaitable<void> {
    if (exchange.request().path == "/busy") {
      handling = true;
      co_await async_wait_until(release_);
    }
    std::ignore = co_await exchange.response().send({}, exchange.request().path);
  };
  Result<std::unique_ptr<Server>> created = Server::create(
      io_,
      ServerOptions{.host = "127.0.0.1",
                    .port = 0,
                    .limits = limits,
                    .stamp = {},
                    .tls = {},
                    .passes_request_cap = [](const RequestHead& head) { return head.headers.has("X-Peer"); }},
      handler);
  ASSERT_TRUE(created) << created.status();
  server_ = std::move(created).value();
  server_->start();
  endpoint_ = *Endpoint::parse(fmt::format("http://127.0.0.1:{}", server_->port()));
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });

  RawClient busy(server_->port());
  busy.send("GET /busy HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(wait_for([&] { return handling.load(); }));
  EXPECT_EQ(server_->requests_in_flight(), 1u);
  // Another client's request is refused, and its connection stays usable.
  RawClient other(server_->port());
  other.send("GET /refused HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string answer = other.read_until("</Error>");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503")) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  EXPECT_NE(answer.find("<Code>SlowDown</Code>"), std::string::npos) << answer;
  EXPECT_EQ(server_->requests_refused(), 1u);
  // A peer's request passes the cap.
  ClientRequest peer = request(Method::kGet, "/peer");
  peer.headers.set("X-Peer", "1");
  Result<ClientResponse> passed = call(peer);
  ASSERT_TRUE(passed) << passed.status();
  EXPECT_EQ(passed->body, "/peer");
  // Once the busy one ends, requests are served again, on the refused connection too.
  release_ = true;
  EXPECT_TRUE(busy.read_until("/busy").ends_with("/busy"));
  ASSERT_TRUE(wait_for([&] { return server_->requests_in_flight() == 0; }));
  other.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(other.read_until("/again").ends_with("/again"));
}

TEST_F(ServerTest, ExpectContinueRejectedEarlyNeverAsksForTheBody) {
  start([](Exchange& exchange) -> Awaitable<void> {
    if (exchange.request().path == "/accept") {
      Result<std::string> body = co_await read_all(exchange.body(), 1 << 20);
      std::string reply = body ? *body : "error";
      std::ignore = co_await exchange.response().send({}, std::move(reply));
      co_return;
    }
    std::ignore = co_await exchange.response().send({.status = 403, .headers = {}}, "no");
  });
  {
    RawClient raw(server_->port());
    raw.send("PUT /reject HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n"
             "Expect: 100-continue\r\n\r\n");
    const std::string reply = raw.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 403")) << reply;
    EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
    EXPECT_EQ(reply.find("100 Continue"), std::string::npos) << reply;
  }
  RawClient raw(server_->port());
  raw.send("PUT /accept HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(raw.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  raw.send("hello");
  const std::string reply = raw.read_until("hello");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200")) << reply;
}

TEST_F(ServerTest, UnreadSmallBodyIsDrainedForKeepAlive) {
  start([](Exchange& exchange) -> Awaitable<void> {
    std::ignore = co_await exchange.response().send({}, "ignored your body");
  });
  for (int i = 0; i < 2; ++i) {
    Result<ClientResponse> response =
        call(request(Method::kPut, "/x"), std::string(100000, 'b'));
    ASSERT_TRUE(response) << response.status();
    EXPECT_EQ(response->body, "ignored your body");
  }
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(ServerTest, StopDrainsInFlightRequests) {
  std::atomic<bool> entered = false;
  std::atomic<bool> release = false;
  ServerLimits limits;
  limits.drain_timeout = 5s;
  start(
      [&](Exchange& exchange) -> Awaitable<void> {
        if (exchange.request().path == "/slow") {
          entered = true;
          co_await async_wait_until(release);
        }
        std::ignore = co_await exchange.response().send({}, "done");
      },
      limits);
  ASSERT_TRUE(call(request(Method::kGet, "/warm")));  // leaves an idle connection
  auto slow = std::async(std::launch::async,
                         [&] { return call(request(Method::kGet, "/slow")); });
  ASSERT_TRUE(wait_for([&] { return entered.load(); }));
  std::promise<void> stopped;
  asio::co_spawn(
      io_,
      [&]() -> Awaitable<void> {
        co_await server_->stop();
        stopped.set_value();
      },
      asio::detached);
  // The idle connection goes at once; the in-flight request holds stop() open.
  EXPECT_TRUE(wait_for([&] { return server_->connection_count() == 1; }));
  std::future<void> stop_done = stopped.get_future();
  EXPECT_EQ(stop_done.wait_for(20ms), std::future_status::timeout);
  release = true;
  Result<ClientResponse> response = slow.get();
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->body, "done");
  ASSERT_EQ(stop_done.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(server_->connection_count(), 0u);
  Result<ClientResponse> refused = call(request(Method::kGet, "/after"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), Code::kUnavailable);
}

TEST_F(ServerTest, ClientTimesOutWithoutProgress) {
  start([this](Exchange& exchange) -> Awaitable<void> {
    co_await async_wait_until(release_);  // a member: the handler may outlive the test body
    std::ignore = co_await exchange.response().send({}, "late");
  });
  client_ = Client::create(io_.get_executor(), client_options(100ms));
  Result<ClientResponse> response = call(request(Method::kGet, "/"));
  release_ = true;
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code(), Code::kDeadlineExceeded);
}

TEST_F(ServerTest, ClientEnforcesMaxBody) {
  start([](Exchange& exchange) -> Awaitable<void> {
    std::ignore = co_await exchange.response().send({}, std::string(10000, 'x'));
  });
  Result<ClientResponse> response = call(request(Method::kGet, "/"), "", 100);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code(), Code::kResourceExhausted);
}

TEST(ServerCreateTest, AddressInUseIsAStatus) {
  asio::io_context io;
  Result<std::unique_ptr<Server>> first =
      Server::create(io, {}, [](Exchange&) -> Awaitable<void> { co_return; });
  ASSERT_TRUE(first) << first.status();
  Result<std::unique_ptr<Server>> second = Server::create(
      io, ServerOptions{.host = "127.0.0.1", .port = (*first)->port(), .limits = {}},
      [](Exchange&) -> Awaitable<void> { co_return; });
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("in use"), std::string::npos);
}

}  // namespace
}  // namespace silo::http
