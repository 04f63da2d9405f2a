#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>

#include <functional>
#include <memory>

namespace silo::async {

// A completion handler of async_initiate as a copyable function that resumes the waiting
// coroutine on its own executor (posted: never inside the caller's stack or locks).
// Shared by gather() and Signal.
template <typename Handler>
std::function<void()> resume_later(Handler handler) {
  auto shared = std::make_shared<Handler>(std::move(handler));
  return [shared] {
    auto executor = boost::asio::get_associated_executor(*shared);
    boost::asio::post(executor, [shared] { std::move (*shared)(); });
  };
}

}  // namespace silo::async
