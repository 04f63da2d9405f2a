// Reads that miss or find a broken copy here (docs/membership-and-rebalance.md
// "Get-from-neighbor", docs/data-protection.md "Repairs on read"): the copy is read from
// the target that still has it, pulled back, or rebuilt, before the client hears of it.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <array>

#include "archive/members.h"
#include "async/sleep.h"
#include "base/log.h"
#include "rebalance/rebalance.h"

namespace silo::rebalance {

http::Awaitable<Status> Rebalance::read_here_or_neighbor(http::Exchange& exchange, const ObjectRef& object,
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
  const bool has_other_copies = peers_.holders_of(object).size() > 1;
  if (s.code() == Code::kDataLoss && (has_other_copies || peers_.is_rebalancing())) {
    co_return co_await repair_and_read(exchange, object, read, std::move(s));
  }
  if (s.code() != Code::kNotFound || archive::is_member_miss(s)) co_return s;
  if (replication::is_local_only(exchange.request())) {
    // Asked for our copy because we had it a moment ago: it moved on since.
    co_return Status::unavailable("object {} moved while being read; retry", object.name);
  }
  if (!peers_.is_rebalancing() && !has_other_copies) co_return s;
  const std::vector<wire::NodeInfo> copy_holders = peers_.copy_holders(object);
  if (!peers_.is_rebalancing() && copy_holders.size() > 1 && peers_.is_self_among(copy_holders)) {
    // A holder that lacks its copy (a lost drive, a missed async write): serve from another
    // and get the copy back meanwhile.
    // Named locals, not temporaries beside co_await (docs/adr/0003).
    const auto executor = co_await boost::asio::this_coro::executor;
    std::string what = fmt::format("restoring the copy of {}", object.name);
    boost::asio::co_spawn(
        executor, replication::in_background(replication_.pull_copy(object, std::nullopt), std::move(what)),
        boost::asio::detached);
  }
  s = co_await read_from_neighbor(exchange, object);
  if (s.is_ok() || exchange.response().has_begun()) co_return s;
  // Missed here and found nowhere else (or moved on): a copy may have landed here since.
  const Status again = co_await read();
  if (again.code() == Code::kNotFound && !exchange.response().has_begun()) co_return s;
  co_return again;
}

http::Awaitable<Status> Rebalance::repair_and_read(http::Exchange& exchange, const ObjectRef& object,
                                                   const ReadFn& read, Status s) {
  // The copy here is corrupt (nothing was sent): replace it with a good one, then serve.
  // Also when another holder relayed the read here for this node's own copy (the holder
  // of a coded bucket's small object that has no copy does): the good copy is pulled, not
  // the request relayed, so no relay loop can start.
  auto bad = co_await store_.stat(object);
  if (!bad) co_return s;
  if (bad->has_ec() && replication::is_local_only(exchange.request())) co_return s;
  if (bad->has_ec()) {
    // A slice whose file is gone (a corrupt one is handled by send_ec): rebuild it, and
    // let a holder of another slice answer meanwhile.
    co_await erasure_.start_rebuild(object, {});
    co_return co_await read_from_neighbor(exchange, object);
  }
  // A named call, not a ternary around co_await (docs/adr/0003).
  const uint64_t bad_generation = bad->generation();
  const Status repaired = co_await replication_.pull_copy(object, bad_generation);
  // No good copy to be had: the loss is said as it is (every copy corrupt: kDataLoss), or
  // as a wait when another copy could not be read now; corrupt bytes are never served.
  if (repaired.code() == Code::kDataLoss) co_return repaired;
  if (!repaired.is_ok()) {
    co_return Status::unavailable("the copy of {} here is corrupt and no other could be read now ({}); retry",
                                  object.name, repaired.message());
  }
  replication_.note_repaired();
  SILO_LOG_INFO("corrupt copy of {} replaced by a good one from another target", object.name);
  co_return co_await read();
}

}  // namespace silo::rebalance
