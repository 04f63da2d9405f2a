// The batch stream against a fetcher in memory: order whatever the order answers come in,
// every size of entry through both paths (read ahead, streamed), the window's limits,
// continue_on_error, failures before and after the first byte, entries asked again.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "archive/tar_reader.h"
#include "archive/tar_writer.h"
#include "batch/batch_stream.h"
#include "http/testing/fake_exchange.h"

namespace silo::batch {
namespace {

namespace asio = boost::asio;
using http::testing::FakeExchange;

// What the fake knows of the whole run, to check the window against.
struct Watch {
  size_t open_now = 0;   // bodies opened and not destroyed
  size_t open_max = 0;
  uint64_t bytes_read = 0;  // by every body
  const FakeExchange* exchange = nullptr;
  uint64_t held_max = 0;  // bytes read and not sent yet, at most
};

class FakeBody final : public EntryBody {
 public:
  FakeBody(std::string bytes, bool is_tar, Watch& watch, std::optional<uint64_t> fail_at)
      : EntryBody(bytes.size(), 1700000000, is_tar), bytes_(std::move(bytes)), watch_(watch), fail_at_(fail_at) {
    watch_.open_max = std::max(watch_.open_max, ++watch_.open_now);
  }
  ~FakeBody() override { --watch_.open_now; }

  http::Awaitable<Result<size_t>> read(std::span<char> out) override {
    if (fail_at_ && at_ >= *fail_at_) co_return Status::unavailable("connection reset");
    uint64_t n = std::min<uint64_t>(out.size(), bytes_.size() - at_);
    if (fail_at_) n = std::min<uint64_t>(n, *fail_at_ - at_);
    std::copy_n(bytes_.data() + at_, n, out.data());
    at_ += n;
    watch_.bytes_read += n;
    const uint64_t sent = watch_.exchange->sent().size();
    if (watch_.bytes_read > sent) watch_.held_max = std::max(watch_.held_max, watch_.bytes_read - sent);
    co_return static_cast<size_t>(n);
  }

 private:
  std::string bytes_;
  Watch& watch_;
  std::optional<uint64_t> fail_at_;
  uint64_t at_ = 0;
};

// Answers entries by name after a random short delay, so they complete out of order.
class FakeFetcher final : public Fetcher {
 public:
  explicit FakeFetcher(Watch& watch) : watch_(watch) {}

  std::map<std::string, std::string> objects;        // "bucket/name" -> bytes
  std::map<std::string, uint64_t> fail_at;           // "bucket/name" -> reads fail past this
  std::map<std::string, int> opens;                  // "bucket/name" -> times asked
  std::map<std::string, int> delay_ms;               // "bucket/name" -> answers after this

  http::Awaitable<Result<std::unique_ptr<EntryBody>>> open(const wire::BatchEntry& entry) override {
    const std::string key = entry.bucket + "/" + entry.name;
    ++opens[key];
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto fixed = delay_ms.find(key);
    timer.expires_after(fixed != delay_ms.end() ? std::chrono::microseconds(fixed->second * 1000)
                                                : std::chrono::microseconds(random_() % 2000));
    co_await timer.async_wait(asio::use_awaitable);
    const auto found = objects.find(key);
    if (found == objects.end()) co_return Status::not_found("no {}", key).with_reason("NoSuchKey");
    std::optional<uint64_t> fails;
    if (auto f = fail_at.find(key); f != fail_at.end()) {
      fails = f->second;
      fail_at.erase(f);  // once: asked again, it answers whole
    }
    co_return std::unique_ptr<EntryBody>(
        std::make_unique<FakeBody>(found->second, entry.archmode.has_value(), watch_, fails));
  }

 private:
  Watch& watch_;
  std::mt19937 random_{7};
};

struct Outcome {
  Status status;
  StreamTally tally;
};

Outcome run_batch(FakeExchange& exchange, asio::io_context& io, const wire::BatchRequest& request, FakeFetcher& fetcher,
              StreamOptions options) {
  Outcome out;
  asio::co_spawn(
      io,
      [&]() -> http::Awaitable<void> {
        out.status = co_await stream_batch(exchange, request, fetcher, options, out.tally);
      },
      asio::detached);
  io.run();
  return out;
}

wire::BatchEntry object(std::string name) { return wire::BatchEntry{.bucket = "b", .name = std::move(name)}; }

std::string bytes_of(size_t size, char seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(seed + i * 31 % 251);
  return s;
}

// The members of a tar stream: name -> bytes, in order.
std::vector<std::pair<std::string, std::string>> members_of(const std::string& tar) {
  auto index = archive::index_tar(archive::read_bytes(tar), tar.size());
  EXPECT_TRUE(index.has_value()) << index.error();
  std::vector<std::pair<std::string, std::string>> out;
  if (!index) return out;
  for (const auto& m : index->members()) out.emplace_back(m.name(), tar.substr(m.offset(), m.size()));
  return out;
}

TEST(BatchStreamTest, SendsEveryEntryInRequestOrderThroughBothPaths) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  wire::BatchRequest request;
  const std::vector<size_t> sizes = {0, 1, 511, 512, 513, 4096, 300 * 1024, 70 * 1024, 3, 1 << 20, 10};
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const std::string name = "o" + std::to_string(round) + "-" + std::to_string(i);
      fetcher.objects["b/" + name] = bytes_of(sizes[i], static_cast<char>(round + i));
      request.entries.push_back(object(name));
    }
  }
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{.window_entries = 8, .window_bytes = 400 * 1024});
  ASSERT_TRUE(run.status.is_ok()) << run.status;
  EXPECT_EQ(exchange.status(), 200);
  EXPECT_EQ(exchange.head().headers.get("Content-Type"), "application/x-tar");
  EXPECT_EQ(exchange.length(), std::nullopt);  // chunked
  const auto members = members_of(exchange.sent());
  ASSERT_EQ(members.size(), request.entries.size());
  for (size_t i = 0; i < members.size(); ++i) {
    EXPECT_EQ(members[i].first, "b/" + request.entries[i].name);
    EXPECT_EQ(members[i].second, fetcher.objects["b/" + request.entries[i].name]) << members[i].first;
  }
  EXPECT_EQ(run.tally.entries, request.entries.size());
  EXPECT_LE(watch.open_max, 8u + 1);
  // Held in memory: what was read ahead (the window) and one chunk being streamed.
  EXPECT_LE(watch.held_max, 400u * 1024 + kStreamChunk);
  EXPECT_EQ(watch.open_now, 0u);
}

TEST(BatchStreamTest, AMissingEntryIsAnEmpty404MemberWithContinueOnError) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  fetcher.objects["b/a"] = "alpha";
  fetcher.objects["b/c"] = "gamma";
  wire::BatchRequest request{.entries = {object("a"), object("missing"), object("c")}, .continue_on_error = true};
  request.entries[1].archpath = "x.jpg";
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{});
  ASSERT_TRUE(run.status.is_ok()) << run.status;
  const auto members = members_of(exchange.sent());
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0], std::make_pair(std::string("b/a"), std::string("alpha")));
  EXPECT_EQ(members[1], std::make_pair(std::string("__404__/b/missing/x.jpg"), std::string()));
  EXPECT_EQ(members[2], std::make_pair(std::string("b/c"), std::string("gamma")));
  EXPECT_EQ(run.tally.missing, 1u);
}

TEST(BatchStreamTest, AFailureBeforeTheFirstByteIsTheEntrysErrorAndNothingIsSent) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  fetcher.objects["b/a"] = "alpha";
  const wire::BatchRequest request{.entries = {object("missing"), object("a")}};
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{});
  EXPECT_EQ(run.status.code(), Code::kNotFound);
  EXPECT_EQ(run.status.reason(), "NoSuchKey");
  EXPECT_EQ(exchange.status(), 0);  // the caller answers it
  EXPECT_EQ(watch.open_now, 0u);
}

TEST(BatchStreamTest, AFailureAfterTheFirstByteCutsTheStream) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  wire::BatchRequest request;
  for (int i = 0; i < 50; ++i) {
    fetcher.objects["b/o" + std::to_string(i)] = bytes_of(1000, 'a');
    request.entries.push_back(object("o" + std::to_string(i)));
  }
  fetcher.objects.erase("b/o20");
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{.window_entries = 4});
  EXPECT_EQ(run.status.code(), Code::kNotFound);
  EXPECT_TRUE(exchange.is_cut());
  // Nothing past the failed entry, and no end blocks: no reader takes it for whole.
  EXPECT_FALSE(archive::index_tar(archive::read_bytes(exchange.sent()), exchange.sent().size()).has_value());
  EXPECT_EQ(run.tally.entries, 20u);
  EXPECT_EQ(watch.open_now, 0u);
}

TEST(BatchStreamTest, AnEntryWhoseReadAheadFailedIsAskedAgainAtItsTurn) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  fetcher.objects["b/a"] = bytes_of(5000, 'a');
  fetcher.objects["b/b"] = bytes_of(5000, 'b');   // read ahead: fails midway
  fetcher.objects["b/c"] = bytes_of(900000, 'c');  // streamed: its first read fails
  fetcher.fail_at["b/b"] = 100;
  fetcher.fail_at["b/c"] = 0;
  fetcher.delay_ms["b/a"] = 50;  // b is read ahead (and fails) while a is awaited
  fetcher.delay_ms["b/b"] = 0;
  const wire::BatchRequest request{.entries = {object("a"), object("b"), object("c")}};
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{.window_entries = 4, .window_bytes = 10000});
  ASSERT_TRUE(run.status.is_ok()) << run.status;
  const auto members = members_of(exchange.sent());
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[1].second, fetcher.objects["b/b"]);
  EXPECT_EQ(members[2].second, fetcher.objects["b/c"]);
  EXPECT_EQ(fetcher.opens["b/b"], 2);
  EXPECT_EQ(fetcher.opens["b/c"], 2);
}

TEST(BatchStreamTest, AStreamedEntryThatFailsMidwayCutsTheStream) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  fetcher.objects["b/a"] = bytes_of(900000, 'a');
  fetcher.fail_at["b/a"] = 600000;  // past the first chunk: bytes of it went out
  const wire::BatchRequest request{.entries = {object("a")}};
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{.window_entries = 2, .window_bytes = 1000});
  EXPECT_EQ(run.status.code(), Code::kUnavailable);
  EXPECT_TRUE(exchange.is_cut());
}

TEST(BatchStreamTest, ASelectionsAnswerGoesOutAsTheMembersItIs) {
  asio::io_context io;
  FakeExchange exchange(io.get_executor());
  Watch watch{.exchange = &exchange};
  FakeFetcher fetcher(watch);
  // What a target answers for archmode with batchprefix: members, no end blocks.
  std::string piece = archive::tar_header("b/s.tar/k1.jpg", 3, 0) + "jpg" + archive::tar_padding(3);
  piece += archive::tar_header("b/s.tar/k1.cls", 1, 0) + "7" + archive::tar_padding(1);
  fetcher.objects["b/s.tar"] = piece;
  fetcher.objects["b/x"] = "xx";
  wire::BatchRequest request{.entries = {object("s.tar"), object("x")}};
  request.entries[0].archpath = "k1";
  request.entries[0].archmode = "wdskey";
  const Outcome run = run_batch(exchange, io, request, fetcher, StreamOptions{});
  ASSERT_TRUE(run.status.is_ok()) << run.status;
  const auto members = members_of(exchange.sent());
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0], std::make_pair(std::string("b/s.tar/k1.jpg"), std::string("jpg")));
  EXPECT_EQ(members[1], std::make_pair(std::string("b/s.tar/k1.cls"), std::string("7")));
  EXPECT_EQ(members[2], std::make_pair(std::string("b/x"), std::string("xx")));
}

}  // namespace
}  // namespace silo::batch
