#include "cluster/bucket_writes.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

namespace silo::cluster {

store::Durability durability_of(const wire::Bucket& bucket, const config::ClusterConfig& config) {
  switch (bucket.props().durability()) {
    case wire::DURABILITY_FSYNC: return store::Durability::kFsync;
    case wire::DURABILITY_PAGE_CACHE: return store::Durability::kPageCache;
    default: break;
  }
  return config.durability == config::Durability::kFsync ? store::Durability::kFsync
                                                         : store::Durability::kPageCache;
}

BucketWrites::Ticket::~Ticket() {
  if (*bucket_id_ == 0) return;
  MutexLock lock(writes_.mutex_);
  if (--writes_.in_flight_[*bucket_id_] == 0) writes_.in_flight_.erase(*bucket_id_);
}

void BucketWrites::guard(store::PutOptions& options, const wire::Bucket& bucket, Ticket& ticket) {
  options.precondition = [this, name = bucket.name(), id = bucket.id(), inner = std::move(options.precondition),
                          counted = ticket.bucket_id_](const wire::ObjectRecord* current) -> Status {
    // The check and the count are one step under mutex_: a drain() that finds no commit
    // in flight runs after the map marking the bucket deleting arrived, so every later
    // check here sees that mark.
    MutexLock lock(mutex_);
    const auto now = maps_.find_bucket(name);
    if (!now || now->id() != id || now->is_deleting()) {
      return Status::not_found("The specified bucket does not exist (it is being deleted): {}", name)
          .with_reason("NoSuchBucket");
    }
    if (inner) RETURN_IF_ERROR(inner(current));
    ++in_flight_[id];
    *counted = id;
    return Status::ok();
  };
}

http::Awaitable<Status> BucketWrites::drain(uint64_t bucket_id) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  for (int i = 0; i < 2000; ++i) {  // 10 s
    {
      MutexLock lock(mutex_);
      if (!in_flight_.contains(bucket_id)) co_return Status::ok();
    }
    timer.expires_after(std::chrono::milliseconds(5));
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  co_return Status::unavailable("commits into bucket id {} did not finish within 10 s", bucket_id);
}

}  // namespace silo::cluster
