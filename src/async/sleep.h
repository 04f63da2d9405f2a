#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>

#include <boost/asio/awaitable.hpp>

namespace silo::async {

// Sleeps for `period` unless the timer is cancelled (cancel_sleep). Creates the timer on
// first use on the coroutine's executor.
inline boost::asio::awaitable<void> pause(std::unique_ptr<boost::asio::steady_timer>& timer,
                                   std::chrono::milliseconds period) {
  namespace asio = boost::asio;
  if (!timer) timer = std::make_unique<asio::steady_timer>(co_await asio::this_coro::executor);
  timer->expires_after(period);
  boost::system::error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// Wakes a pause() on `timer` now (from any thread).
inline void cancel(std::unique_ptr<boost::asio::steady_timer>& timer) {
  if (timer) boost::asio::post(timer->get_executor(), [t = timer.get()] { t->cancel(); });
}

}  // namespace silo::async
