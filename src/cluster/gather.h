#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace silo::cluster {

// Runs every task concurrently and returns their results in task order (Asio 1.18 has no
// awaitable operators). The tasks run on one strand, so they may share state without locks;
// their I/O still overlaps.
template <typename T>
boost::asio::awaitable<std::vector<T>> gather(std::vector<std::function<boost::asio::awaitable<T>()>> tasks) {
  namespace asio = boost::asio;
  auto strand = asio::make_strand(co_await asio::this_coro::executor);
  co_return co_await asio::co_spawn(
      strand,
      [&tasks, strand]() -> asio::awaitable<std::vector<T>> {
        struct State {
          explicit State(decltype(strand) s, size_t n) : timer(s), results(n), remaining(n) {}
          asio::steady_timer timer;
          std::vector<std::optional<T>> results;
          size_t remaining;
        };
        auto state = std::make_shared<State>(strand, tasks.size());
        for (size_t i = 0; i < tasks.size(); ++i) {
          asio::co_spawn(
              strand,
              [state, i, task = std::move(tasks[i])]() -> asio::awaitable<void> {
                state->results[i].emplace(co_await task());
                if (--state->remaining == 0) state->timer.cancel();
              },
              asio::detached);
        }
        while (state->remaining > 0) {
          state->timer.expires_at(asio::steady_timer::time_point::max());
          boost::system::error_code ec;
          co_await state->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        std::vector<T> out;
        out.reserve(state->results.size());
        for (auto& r : state->results) out.push_back(std::move(*r));
        co_return out;
      },
      asio::use_awaitable);
}

}  // namespace silo::cluster
