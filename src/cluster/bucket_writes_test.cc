#include "cluster/bucket_writes.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <filesystem>
#include <optional>
#include <random>

namespace silo::cluster {
namespace {

class BucketWritesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("silo-writes-" + std::to_string(std::random_device()()));
    auto maps = ClusterMaps::open(dir_.string());
    ASSERT_TRUE(maps.has_value()) << maps.status();
    maps_ = std::move(*maps);
    bucket_.set_name("b");
    bucket_.set_id(7);
    install(/*version=*/1, /*is_deleting=*/false);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void install(uint64_t version, bool is_deleting) {
    wire::BucketMap map;
    map.set_version(version);
    map.set_next_bucket_id(8);
    wire::Bucket b = bucket_;
    b.set_is_deleting(is_deleting);
    *map.add_buckets() = b;
    ASSERT_TRUE(maps_->install(map).has_value());
  }

  std::filesystem::path dir_;
  std::unique_ptr<ClusterMaps> maps_;
  wire::Bucket bucket_;
};

TEST_F(BucketWritesTest, ACommitIntoALiveBucketIsCountedUntilItsTicketEnds) {
  BucketWrites writes(*maps_);
  std::optional<BucketWrites::Ticket> ticket;
  ticket.emplace(writes);
  store::PutOptions options;
  writes.guard(options, bucket_, *ticket);
  ASSERT_TRUE(options.precondition);
  ASSERT_TRUE(options.precondition(nullptr).is_ok());

  // drain() waits while the commit is in flight and returns once its ticket is gone.
  boost::asio::io_context io;
  std::optional<Status> drained;
  boost::asio::co_spawn(
      io, [&]() -> http::Awaitable<void> { drained = co_await writes.drain(bucket_.id()); }, boost::asio::detached);
  boost::asio::steady_timer timer(io, std::chrono::milliseconds(30));
  timer.async_wait([&](const boost::system::error_code&) {
    EXPECT_FALSE(drained.has_value()) << "a commit is in flight";
    ticket.reset();
  });
  io.run();
  ASSERT_TRUE(drained.has_value());
  EXPECT_TRUE(drained->is_ok()) << *drained;
}

TEST_F(BucketWritesTest, ACommitIntoABucketBeingDeletedIsRefusedAndNotCounted) {
  BucketWrites writes(*maps_);
  BucketWrites::Ticket ticket(writes);
  store::PutOptions options;
  bool inner_ran = false;
  options.precondition = [&inner_ran](const wire::ObjectRecord*) {
    inner_ran = true;
    return Status::ok();
  };
  writes.guard(options, bucket_, ticket);
  install(/*version=*/2, /*is_deleting=*/true);
  const Status s = options.precondition(nullptr);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.reason(), "NoSuchBucket");
  EXPECT_FALSE(inner_ran);
  boost::asio::io_context io;
  std::optional<Status> drained;
  boost::asio::co_spawn(
      io, [&]() -> http::Awaitable<void> { drained = co_await writes.drain(bucket_.id()); }, boost::asio::detached);
  io.run();
  ASSERT_TRUE(drained.has_value());
  EXPECT_TRUE(drained->is_ok());
}

TEST_F(BucketWritesTest, TheInnerPreconditionDecidesAfterTheBucketCheck) {
  BucketWrites writes(*maps_);
  BucketWrites::Ticket ticket(writes);
  store::PutOptions options;
  options.precondition = [](const wire::ObjectRecord*) {
    return Status::failed_precondition("If-None-Match").with_reason("PreconditionFailed");
  };
  writes.guard(options, bucket_, ticket);
  EXPECT_EQ(options.precondition(nullptr).reason(), "PreconditionFailed");
}

TEST(DurabilityTest, TheBucketsSettingElseTheClusters) {
  config::ClusterConfig config;
  config.durability = config::Durability::kFsync;
  wire::Bucket bucket;
  EXPECT_EQ(durability_of(bucket, config), store::Durability::kFsync);
  bucket.mutable_props()->set_durability(wire::DURABILITY_PAGE_CACHE);
  EXPECT_EQ(durability_of(bucket, config), store::Durability::kPageCache);
  config.durability = config::Durability::kPageCache;
  bucket.mutable_props()->set_durability(wire::DURABILITY_FSYNC);
  EXPECT_EQ(durability_of(bucket, config), store::Durability::kFsync);
}

}  // namespace
}  // namespace silo::cluster
