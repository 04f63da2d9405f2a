// The rules by which targets agree on which piece of an object to keep (copy_wire.h):
// every target must decide alike, from the records alone.
#include "replication/copy_wire.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

#include "replication/testing/records.h"
#include "wire/json.h"

namespace silo::replication {
namespace {

using testing::slice_of;

wire::ObjectRecord copy(int64_t mtime, uint64_t xxh3, uint64_t size = 100) {
  return testing::copy_record(mtime, xxh3, size);
}

wire::BucketProps coded(uint32_t k, uint32_t m, uint64_t min_size) {
  wire::BucketProps props;
  props.mutable_ec()->set_data(k);
  props.mutable_ec()->set_parity(m);
  props.mutable_ec()->set_min_size(min_size);
  return props;
}

TEST(CopyWireTest, TheNewerVersionWinsAndTiesGoToTheLargerXxh3) {
  const auto old_version = copy(100, 7);
  const auto newer = copy(200, 5);
  EXPECT_TRUE(incoming_wins(nullptr, old_version));
  EXPECT_TRUE(incoming_wins(&old_version, newer));
  EXPECT_FALSE(incoming_wins(&newer, old_version));
  // Two PUTs in the same nanosecond on two targets: every target picks the same one.
  const auto twin = copy(100, 9);
  EXPECT_TRUE(incoming_wins(&old_version, twin));
  EXPECT_FALSE(incoming_wins(&twin, old_version));
  EXPECT_FALSE(incoming_wins(&old_version, old_version)) << "the same version never wins";
}

TEST(CopyWireTest, ASliceIsTheSameVersionAsItsWholeObject) {
  const auto whole = copy(100, 7, 5 << 20);
  const auto slice = slice_of(whole, 1);
  EXPECT_TRUE(same_version(whole, slice));
  EXPECT_TRUE(same_version(slice, slice_of(whole, 2)));
  EXPECT_FALSE(incoming_wins(&slice, slice_of(whole, 2))) << "two slices of one version: neither wins";
  EXPECT_FALSE(same_version(slice, slice_of(copy(100, 8, 5 << 20), 1)));
}

TEST(CopyWireTest, TheLayoutDecidesTheFormAndAFormItWantsReplacesTheSameVersion) {
  const auto props = coded(2, 1, 16 * 1024);
  const auto small = copy(100, 7, 1000);
  const auto large = copy(100, 8, 5 << 20);
  EXPECT_TRUE(fits_layout(small, props)) << "under min_size: copies";
  EXPECT_FALSE(fits_layout(large, props)) << "past min_size: slices";
  EXPECT_TRUE(fits_layout(slice_of(large, 0), props));
  EXPECT_FALSE(fits_layout(slice_of(large, 0, 4, 2), props)) << "a slice of another code";
  // Re-encoding: a slice replaces a full copy of the same version, never the reverse.
  const auto slice0 = slice_of(large, 0);
  EXPECT_TRUE(replaces(&large, slice0, props));
  EXPECT_FALSE(replaces(&slice0, large, props));
  EXPECT_FALSE(replaces(&slice0, slice_of(large, 1), props)) << "a holder keeps one piece";
  const auto replicated = wire::BucketProps();
  EXPECT_TRUE(replaces(&slice0, large, replicated)) << "back to copies";
}

TEST(CopyWireTest, PlacedRoundTrips) {
  for (const bool kept : {false, true}) {
    for (const bool same : {false, true}) {
      const Placed placed{.is_kept = kept, .replaced_same_version = kept && same};
      const Placed back = placed_of(placed_json(placed));
      EXPECT_EQ(back.is_kept, placed.is_kept);
      EXPECT_EQ(back.replaced_same_version, placed.replaced_same_version);
    }
  }
}


}  // namespace
}  // namespace silo::replication

namespace silo::replication {
namespace {

// A body of `total` bytes given `piece` bytes per read, with `pause` before each read.
class TrickleBody final : public http::BodyReader {
 public:
  TrickleBody(size_t total, size_t piece, std::chrono::milliseconds pause) : left_(total), piece_(piece), pause_(pause) {}
  http::Awaitable<Result<size_t>> read(std::span<char> buffer) override {
    if (pause_.count() > 0) {
      boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, pause_);
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
    const size_t n = std::min({buffer.size(), piece_, left_});
    std::fill_n(buffer.data(), n, 'x');
    left_ -= n;
    if (n == 0) is_done_ = true;
    co_return n;
  }
  bool is_done() const override { return is_done_; }

 private:
  size_t left_;
  const size_t piece_;
  const std::chrono::milliseconds pause_;
  bool is_done_ = false;
};

// Keeps the size of every write and the node's receive buffer bytes at each.
class SizesWriter final : public store::ObjectWriter {
 public:
  http::Awaitable<Status> write(std::span<const char> data) override {
    writes.push_back(data.size());
    buffered.push_back(receive_buffer_bytes());
    co_return Status::ok();
  }
  void set_checksum(std::string, std::string) override {}
  wire::ObjectRecord& attributes() override { return record_; }
  Result<int> open_reader() override { return Status::unimplemented("no reader"); }
  http::Awaitable<Result<wire::ObjectRecord>> commit() override { co_return record_; }
  http::Awaitable<Result<wire::ObjectRecord>> seal() override { co_return record_; }
  http::Awaitable<void> discard() override { co_return; }

  std::vector<size_t> writes;
  std::vector<uint64_t> buffered;

 private:
  wire::ObjectRecord record_;
};

uint64_t receive(TrickleBody& body, SizesWriter& writer, std::optional<uint64_t> expected) {
  boost::asio::io_context io;
  uint64_t received = 0;
  boost::asio::co_spawn(
      io,
      [&]() -> http::Awaitable<void> {
        Result<uint64_t> r = co_await receive_into(body, writer, expected);
        received = r ? *r : 0;
      },
      boost::asio::detached);
  io.run();
  return received;
}

// Issue #23 F6: a writer whose bytes trickle in holds a small buffer; one whose bytes
// arrive fast gets large writes (few disk hops); a small body a buffer of its size.
TEST(ReceiveIntoTest, TheBufferGrowsOnlyForBodiesThatArriveFast) {
  TrickleBody fast(8 << 20, 256 * 1024, std::chrono::milliseconds(0));
  SizesWriter fast_writer;
  EXPECT_EQ(receive(fast, fast_writer, 8 << 20), 8u << 20);
  EXPECT_EQ(fast_writer.writes.front(), 64u * 1024);
  EXPECT_EQ(*std::max_element(fast_writer.writes.begin(), fast_writer.writes.end()), 1u << 20)
      << "the buffer never reached 1 MiB";

  TrickleBody slow(256 * 1024, 16 * 1024, std::chrono::milliseconds(5));  // 64 KiB take 20 ms and more
  SizesWriter slow_writer;
  EXPECT_EQ(receive(slow, slow_writer, 256 * 1024), 256u * 1024);
  for (size_t n : slow_writer.writes) EXPECT_LE(n, 64u * 1024);
  for (uint64_t held : slow_writer.buffered) EXPECT_LE(held, 64u * 1024);

  TrickleBody small(1000, 1000, std::chrono::milliseconds(0));
  SizesWriter small_writer;
  EXPECT_EQ(receive(small, small_writer, 1000), 1000u);
  EXPECT_EQ(small_writer.writes, std::vector<size_t>{1000});
  EXPECT_LE(small_writer.buffered.front(), 1001u);
  EXPECT_EQ(receive_buffer_bytes(), 0u) << "a buffer outlived its body";
}

}  // namespace
}  // namespace silo::replication
