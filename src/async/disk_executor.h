#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <type_traits>
#include <utility>

namespace silo::async {

// A pool of threads that run blocking disk work (file I/O, fsync, RocksDB) for one
// mountpath, so network threads never block. `co_await disk.run(fn)` runs fn on the pool
// and resumes the caller on its own executor with fn's result.
// Owned by its Mountpath; destroying it joins the threads after queued work ran.
class DiskExecutor {
 public:
  explicit DiskExecutor(size_t threads) : pool_(threads) {}
  ~DiskExecutor() { pool_.join(); }
  DiskExecutor(const DiskExecutor&) = delete;
  DiskExecutor& operator=(const DiskExecutor&) = delete;

  // Requires: fn returns a movable value (Status or Result<T>) and does not throw.
  template <typename Fn>
  boost::asio::awaitable<std::invoke_result_t<Fn>> run(Fn fn) {
    using R = std::invoke_result_t<Fn>;
    return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(R)>(
        [this](auto handler, Fn work) {
          boost::asio::post(pool_, [handler = std::move(handler), work = std::move(work)]() mutable {
            R result = work();
            auto ex = boost::asio::get_associated_executor(handler);
            boost::asio::post(ex, [handler = std::move(handler), result = std::move(result)]() mutable {
              std::move(handler)(std::move(result));
            });
          });
        },
        boost::asio::use_awaitable, std::move(fn));
  }

  // Runs fn on the pool without waiting for it (clean-up from destructors, which may run
  // on a network thread and cannot co_await). Requires: fn does not throw.
  template <typename Fn>
  void post(Fn fn) {
    boost::asio::post(pool_, std::move(fn));
  }

 private:
  boost::asio::thread_pool pool_;
};

}  // namespace silo::async
