#include "async/gather.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include <thread>

#include "base/result.h"

namespace silo::async {
namespace {

namespace asio = boost::asio;

// Results come back in task order whatever order the tasks finish in, on a multi-threaded
// io_context, for types that own memory (a GCC 12 bug once freed the shared state early).
TEST(GatherTest, ResultsInTaskOrderOnManyThreads) {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { io.run(); });

  auto run = [&]() -> asio::awaitable<std::vector<Result<std::string>>> {
    std::vector<Task<Result<std::string>>> tasks;
    for (int i = 0; i < 50; ++i) {
      tasks.push_back([i]() -> asio::awaitable<Result<std::string>> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        timer.expires_after(std::chrono::microseconds((50 - i) * 100));  // later tasks finish first
        co_await timer.async_wait(asio::use_awaitable);
        if (i % 7 == 0) co_return Status::not_found("task {} has nothing to say at length", i);
        co_return std::string(100, static_cast<char>('a' + i % 26));
      });
    }
    co_return co_await gather<Result<std::string>>(std::move(tasks));
  };
  auto results = asio::co_spawn(io, run(), asio::use_future).get();
  work.reset();
  for (auto& t : threads) t.join();

  ASSERT_EQ(results.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    if (i % 7 == 0) {
      ASSERT_FALSE(results[i].has_value()) << i;
      EXPECT_EQ(results[i].error().code(), Code::kNotFound);
    } else {
      ASSERT_TRUE(results[i].has_value()) << i;
      EXPECT_EQ(*results[i], std::string(100, static_cast<char>('a' + i % 26)));
    }
  }
}

TEST(GatherTest, NoTasksCompletesAtOnce) {
  asio::io_context io;
  auto run = []() -> asio::awaitable<size_t> {
    co_return (co_await gather<Status>({})).size();
  };
  auto done = asio::co_spawn(io, run(), asio::use_future);
  io.run();
  EXPECT_EQ(done.get(), 0u);
}

}  // namespace
}  // namespace silo::async
