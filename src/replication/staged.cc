// The receiving end of staged slices (docs/adr/0014): a coded overwrite's slice is
// received and fsynced here without replacing the slice of the version this holder has,
// and committed (or dropped) only when its owner says so, once every holder has staged
// its slice. So an overwrite that fails anywhere leaves the previous version whole. A
// slice whose commit never came is committed at its deadline when another holder has
// committed its version (the owner failed inside the commit round), else dropped.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>

#include "base/log.h"
#include "http/reply.h"
#include "replication/replication.h"

namespace silo::replication {
namespace {

namespace asio = boost::asio;

// How long a staged slice waits for its commit. The owner commits within milliseconds of
// the last holder's answer; a slice still here after this belongs to an owner that failed
// or crashed, and would only hold disk space.
constexpr std::chrono::seconds kStagedDeadline{60};
constexpr size_t kMaxTokenBytes = 64;

}  // namespace

http::Awaitable<Status> Replication::stage_copy(http::Exchange& exchange, const ObjectRef& object,
                                                std::string token) {
  if (token.empty() || token.size() > kMaxTokenBytes) {
    co_return Status::invalid_argument("a stage token has 1 to {} characters", kMaxTokenBytes);
  }
  CO_ASSIGN_OR_RETURN(std::unique_ptr<Incoming> incoming, co_await receive_copy(exchange.body(), object, std::nullopt));
  // A holder that has this version or a newer one says so now, not at the commit: the
  // owner then knows before it commits anything. (The commit decides again, under the lock.)
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket) co_return Status::not_found("bucket id {} does not exist", object.bucket_id.value());
  auto here = co_await store_.stat(object);
  if (!here && here.error().code() != Code::kNotFound) co_return std::move(here).error();
  if (!replaces(here ? &*here : nullptr, incoming->record, bucket->props())) {
    co_await incoming->writer->discard();
    std::string kept_existing = placed_json(Placed());
    co_await http::send_json(exchange, 200, std::move(kept_existing));
    co_return Status::ok();
  }
  // Durable before the owner hears of it: the commit is then a rename and a record.
  CO_ASSIGN_OR_RETURN(const int fd, incoming->writer->open_reader());
  const Status synced = co_await reader_.run([fd] {
    const int rc = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    return rc == 0 ? Status::ok() : Status::from_errno(error, "fsync of a staged slice");
  });
  CO_RETURN_IF_ERROR(synced);
  bool was_dropped = false;
  {
    MutexLock lock(staged_mutex_);
    if (staged_.contains(token)) {
      co_return Status::already_exists("a slice is staged under token {} already", token);
    }
    // The owner may have given up (and dropped this token) while the slice was synced.
    was_dropped = dropped_early_.erase(token) > 0;
    if (!was_dropped) staged_.emplace(token, std::move(incoming));
  }
  if (was_dropped) {
    co_await incoming->writer->discard();
    co_return Status::aborted("the slice of {} staged under token {} was dropped by its owner meanwhile",
                              object.name, token);
  }
  const auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, expire_staged(token), asio::detached);
  Placed staged;
  staged.is_kept = true;
  std::string kept_incoming = placed_json(staged);
  co_await http::send_json(exchange, 200, std::move(kept_incoming));
  co_return Status::ok();
}

http::Awaitable<Status> Replication::commit_staged(http::Exchange& exchange, const ObjectRef& object,
                                                   const std::string& token) {
  std::unique_ptr<Incoming> incoming = take_staged(object, token);
  if (!incoming) {
    co_return Status::not_found("no slice of {} is staged under token {} (expired or dropped)", object.name,
                                token);
  }
  CO_ASSIGN_OR_RETURN(const Placed placed, co_await commit_incoming(*incoming));
  std::string answer = placed_json(placed);
  co_await http::send_json(exchange, 200, std::move(answer));
  co_return Status::ok();
}

http::Awaitable<Status> Replication::drop_staged(http::Exchange& exchange, const ObjectRef& object,
                                                 const std::string& token) {
  // Idempotent: the owner drops every slice it may have staged, expired or not.
  std::unique_ptr<Incoming> incoming = take_staged(object, token);
  if (incoming) {
    co_await incoming->writer->discard();
  } else {
    // Not staged (yet): a slice still being received or synced under this token is
    // discarded when it arrives. Remembered for a deadline, the expired ones pruned here.
    const auto now = std::chrono::steady_clock::now();
    MutexLock lock(staged_mutex_);
    std::erase_if(dropped_early_, [now](const auto& entry) { return entry.second <= now; });
    dropped_early_[token] = now + kStagedDeadline;
  }
  http::ResponseHead head;
  head.status = 204;
  std::ignore = co_await exchange.response().send(std::move(head), "");
  co_return Status::ok();
}

http::Awaitable<void> Replication::expire_staged(std::string token) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(kStagedDeadline);
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  std::unique_ptr<Incoming> expired;
  {
    MutexLock lock(staged_mutex_);
    const auto it = staged_.find(token);
    if (it == staged_.end()) co_return;
    expired = std::move(it->second);
    staged_.erase(it);
  }
  // An owner that failed inside its commit round reached some holders and not this one.
  // A committed slice of this version on another holder means the round was decided
  // (the owner commits nothing before every holder staged, and drops the stages when no
  // commit took): this slice commits too, so the new version gets every slice still
  // alive. None committed anywhere: the overwrite was abandoned, and this slice goes.
  const bool is_decided = co_await is_committed_elsewhere(expired->object, expired->record);
  if (is_decided) {
    auto placed = co_await commit_incoming(*expired);
    if (placed) {
      SILO_LOG_WARN("the staged slice of {} (token {}) got no commit within {} s but another holder has "
                    "its version: committed ({})",
                    expired->object.name, token, kStagedDeadline.count(), placed->is_kept ? "kept" : "superseded");
      co_return;
    }
    SILO_LOG_WARN("committing the staged slice of {} (token {}) late: {}", expired->object.name, token,
                  placed.error());
  } else {
    SILO_LOG_WARN("the staged slice of {} (token {}) got no commit within {} s: dropped", expired->object.name,
                  token, kStagedDeadline.count());
  }
  co_await expired->writer->discard();
}

http::Awaitable<bool> Replication::is_committed_elsewhere(const ObjectRef& object, const wire::ObjectRecord& slice) {
  for (const auto& node : peers_.candidates_of(object)) {
    if (node.id() == peers_.self().id()) continue;
    auto theirs = co_await record_at(node, object);  // down or failing: not known to have it
    if (theirs && *theirs && same_version(**theirs, slice)) co_return true;
  }
  co_return false;
}

std::unique_ptr<Replication::Incoming> Replication::take_staged(const ObjectRef& object,
                                                                const std::string& token) {
  MutexLock lock(staged_mutex_);
  const auto it = staged_.find(token);
  if (it == staged_.end()) return nullptr;
  if (it->second->object.bucket_id != object.bucket_id || it->second->object.name != object.name) return nullptr;
  std::unique_ptr<Incoming> taken = std::move(it->second);
  staged_.erase(it);
  return taken;
}

}  // namespace silo::replication
