#pragma once

// Target::read_here_or_neighbor (a template: the native and the S3 GET share it).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <array>

#include "base/log.h"
#include "async/sleep.h"
#include "target/target.h"

namespace silo::target {

template <typename ReadFn>
http::Awaitable<Status> Target::read_here_or_neighbor(http::Exchange& exchange, const ObjectRef& object,
                                                      ReadFn read) {
  Status s = co_await read();
  // A coded read that found its slices replaced mid-way (re-encoding) starts over: by
  // then the owner has the whole copy or the new slices are in place.
  static constexpr std::array<int, 4> kPausesMs = {10, 50, 200, 500};
  std::unique_ptr<boost::asio::steady_timer> timer;
  for (size_t i = 0; i < kPausesMs.size() && s.code() == Code::kAborted && !exchange.response().has_begun(); ++i) {
    co_await async::pause(timer, std::chrono::milliseconds(kPausesMs[i]));
    s = co_await read();
  }
  if (s.code() == Code::kAborted && !exchange.response().has_begun()) {
    co_return Status::unavailable("{}; retry", s.message());
  }
  if (exchange.response().has_begun()) co_return s;
  const bool has_other_copies = holders_of(object).size() > 1;
  if (s.code() == Code::kDataLoss && (has_other_copies || is_rebalancing())) {
    // The copy here is corrupt (nothing was sent): replace it with a good one, then serve.
    // Also when another holder relayed the read here for this node's own copy (the
    // holder of a coded bucket's small object that has no copy does): the good copy is
    // pulled, not the request relayed, so no relay loop can start.
    auto bad = co_await store_.stat(object);
    if (!bad) co_return s;
    if (bad->has_ec() && is_local_only(exchange.request())) co_return s;
    if (bad->has_ec()) {
      // A slice whose file is gone (a corrupt one is handled by send_ec): rebuild it, and
      // let a holder of another slice answer meanwhile.
      co_await start_rebuild(object, {});
      co_return co_await read_from_neighbor(exchange, object);
    }
    // A named call, not a ternary around co_await (docs/adr/0003).
    const uint64_t bad_generation = bad->generation();
    const Status repaired = co_await pull_copy(object, bad_generation);
    if (!repaired.is_ok()) co_return s;  // no good copy to be had: the corruption is reported, never served
    corrupt_repaired_.add();
    SILO_LOG_INFO("corrupt copy of {} replaced by a good one from another target", object.name);
    co_return co_await read();
  }
  if (s.code() != Code::kNotFound) co_return s;
  if (is_local_only(exchange.request())) {
    // Asked for our copy because we had it a moment ago: it moved on since.
    co_return Status::unavailable("object {} moved while being read; retry", object.name);
  }
  if (!is_rebalancing() && !has_other_copies) co_return s;
  const std::vector<wire::NodeInfo> replicas = replica_holders(object);
  const bool is_replica_holder = is_self_among(replicas);
  if (!is_rebalancing() && replicas.size() > 1 && is_replica_holder) {
    // A holder that lacks its copy (a lost drive, a missed async write): serve from another
    // and get the copy back meanwhile.
    // Named locals, not temporaries beside co_await (docs/adr/0003).
    const auto executor = co_await boost::asio::this_coro::executor;
    std::string what = fmt::format("restoring the copy of {}", object.name);
    boost::asio::co_spawn(executor, in_background(pull_copy(object, std::nullopt), std::move(what)),
                          boost::asio::detached);
  }
  s = co_await read_from_neighbor(exchange, object);
  if (s.is_ok() || exchange.response().has_begun()) co_return s;
  // Missed here and found nowhere else (or moved on): a copy may have landed here since.
  const Status again = co_await read();
  if (again.code() == Code::kNotFound && !exchange.response().has_begun()) co_return s;
  co_return again;
}

}  // namespace silo::target
