#pragma once

// scrub::Scrub: a target's part of scrub jobs (docs/data-protection.md "Scrub"). Every copy
// and slice here (of one bucket or all) is read and checked against its XXH3 at a bounded
// rate; a corrupt copy is replaced by a good one from another holder, a corrupt or lost
// slice rebuilt; the first holder that is up gives holders that lack their copy one.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "erasure/erasure.h"
#include "replication/peers.h"
#include "replication/replication.h"
#include "store/store.h"
#include "wire/json.h"

namespace silo::scrub {

// Lives as long as the node; each task runs on the executor it was started on. The same
// task interface as the cache's prefetch (cache::Cache::start_prefetch): the target's
// /v1/internal/tasks/{job id} handler drives both.
class Scrub {
 public:
  Scrub(replication::Peers& peers, store::Store& store, replication::Replication& replication,
        erasure::Erasure& erasure)
      : peers_(peers), store_(store), replication_(replication), erasure_(erasure) {}

  // Starts this node's part of scrub job `id` on `executor`: every object here, or those
  // of `bucket`. False when it runs already (a retried start).
  bool start(const boost::asio::any_io_executor& executor, std::string id, wire::JobRequest request,
             std::optional<wire::Bucket> bucket);
  // The task's progress; nullopt when there is no such task here.
  std::optional<wire::RebalanceProgress> progress(const std::string& id);
  // Asks the task to stop (it finishes the object it checks); false when there is none.
  bool stop(const std::string& id);
  // Stops every task (shutdown).
  void stop_all() { is_stopping_ = true; }

 private:
  struct Task;
  http::Awaitable<void> run(std::shared_ptr<Task> task);
  // Checks one copy; replaces it when corrupt; gives holders that lack it a copy when
  // this node is the first holder that is up.
  http::Awaitable<Status> check_object(Task& task, const ObjectRef& object);
  // A copy whose record names a file that is gone: a slice rebuilt, a copy pulled.
  http::Awaitable<Status> restore_lost(Task& task, const ObjectRef& object, Status lost);
  // A corrupt copy or slice here: replaced by a good one.
  http::Awaitable<Status> repair_corrupt(Task& task, const ObjectRef& object, const wire::ObjectRecord& record);

  replication::Peers& peers_;
  store::Store& store_;
  replication::Replication& replication_;
  erasure::Erasure& erasure_;
  std::atomic<bool> is_stopping_{false};
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<Task>> tasks_ GUARDED_BY(mutex_);  // by job id
};

}  // namespace silo::scrub
