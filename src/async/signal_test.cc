#include "async/signal.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <thread>

namespace silo::async {
namespace {

namespace asio = boost::asio;

// Many waiters on several threads, each following a counter another thread moves on with
// a notify per step: every waiter sees the last value (no wakeup is lost between a
// waiter's check and its wait), and a notify before the wait counts.
TEST(SignalTest, NoWakeupIsLostBetweenCheckAndWait) {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { io.run(); });

  Signal signal;
  std::atomic<int> value{0};
  constexpr int kSteps = 2000;
  auto follow = [&]() -> asio::awaitable<int> {
    for (;;) {
      const uint64_t seen = signal.count();
      if (value.load() == kSteps) co_return kSteps;
      co_await signal.wait(seen);
    }
  };
  std::vector<std::future<int>> waiters;
  for (int i = 0; i < 20; ++i) waiters.push_back(asio::co_spawn(io, follow(), asio::use_future));
  std::thread mover([&] {
    for (int i = 0; i < kSteps; ++i) {
      value.fetch_add(1);
      signal.notify();
    }
  });
  for (auto& w : waiters) {
    ASSERT_EQ(w.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "a waiter missed its wakeup";
    EXPECT_EQ(w.get(), kSteps);
  }
  mover.join();

  // A wait for a count that already moved on completes at once.
  const uint64_t before = signal.count();
  signal.notify();
  auto late = [&]() -> asio::awaitable<int> {
    co_await signal.wait(before);
    co_return 1;
  };
  auto done = asio::co_spawn(io, late(), asio::use_future);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  work.reset();
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace silo::async
