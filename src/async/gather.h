#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "async/resume.h"

namespace silo::async {

template <typename T>
using Task = std::function<boost::asio::awaitable<T>()>;

namespace gather_internal {

// Shared by the caller of gather() and its tasks. Tasks may run on several threads at
// once: each writes only its own slot; the count of unfinished tasks and the waiting
// caller's completion sit behind the mutex.
template <typename T>
struct State {
  explicit State(size_t count) : results(count), remaining(count) {}

  Mutex mutex;
  std::vector<std::optional<T>> results;  // slot i written once by task i; read when all are done
  size_t remaining GUARDED_BY(mutex);
  std::function<void()> resume GUARDED_BY(mutex);  // the waiting caller, once it waits
};

// A named coroutine: its parameters are plainly copied into its frame.
template <typename T>
boost::asio::awaitable<void> run_task(std::shared_ptr<State<T>> state, size_t index, Task<T> task) {
  std::optional<T> result;
  result.emplace(co_await task());
  std::function<void()> resume;
  {
    MutexLock lock(state->mutex);
    state->results[index] = std::move(result);
    if (--state->remaining == 0) resume = std::move(state->resume);
  }
  if (resume) resume();
}

// Completes the waiting caller once every task is done (at once if they already are).
template <typename T>
struct Wait {
  std::shared_ptr<State<T>> state;

  template <typename Handler>
  void operator()(Handler handler) const {
    std::function<void()> resume = resume_later(std::move(handler));
    MutexLock lock(state->mutex);
    if (state->remaining == 0) {
      lock.unlock();
      resume();
    } else {
      state->resume = std::move(resume);
    }
  }
};

}  // namespace gather_internal

// Runs every task concurrently on the caller's executor and returns their results in task
// order (Asio 1.18 has no awaitable operators).
template <typename T>
boost::asio::awaitable<std::vector<T>> gather(std::vector<Task<T>> tasks) {
  namespace asio = boost::asio;
  auto state = std::make_shared<gather_internal::State<T>>(tasks.size());
  const auto executor = co_await asio::this_coro::executor;
  for (size_t i = 0; i < tasks.size(); ++i) {
    asio::co_spawn(executor, gather_internal::run_task<T>(state, i, std::move(tasks[i])), asio::detached);
  }
  // A named initiation object, not a lambda: GCC 12 destroys a coroutine local captured
  // by a lambda inside a co_await expression too early (here: the State, freed while the
  // tasks still wrote into it).
  gather_internal::Wait<T> wait{state};
  co_await asio::async_initiate<decltype(asio::use_awaitable), void()>(wait, asio::use_awaitable);
  std::vector<T> out;
  out.reserve(state->results.size());
  for (auto& r : state->results) out.push_back(std::move(*r));
  co_return out;
}

}  // namespace silo::async
