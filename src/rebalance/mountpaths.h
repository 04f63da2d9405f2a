#pragma once

// rebalance::Mountpaths: a target's mountpaths at run time (docs/membership-and-rebalance.md
// "Resilver"): their states, failure detection, attach, detach, enable and disable, and
// the resilver that moves objects to the mountpath the store's placement now names. The
// store does the moving (store::Store::resilver); this decides when and reports how it went.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "async/disk_executor.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "http/server.h"
#include "store/store.h"

namespace silo::rebalance {

// The mountpaths a target opens at start: the configured ones, less those detached at run
// time, plus those attached at run time (<state_dir>/mountpath_changes, written by
// remember_mountpath_change). Blocking.
std::vector<std::string> mountpaths_to_open(const std::vector<std::string>& configured, const std::string& state_dir);
// Records that `path` was attached (or detached) at run time. Blocking.
Status remember_mountpath_change(const std::string& state_dir, const std::string& path, bool attached);

// Lives as long as the node; `state_dir` is the node's state directory (the mountpath set
// last seen, the run-time changes).
class Mountpaths {
 public:
  Mountpaths(store::Store& store, std::string state_dir) : store_(store), state_dir_(std::move(state_dir)) {}

  // /v1/mountpaths: GET lists them with their state and the last resilver (or detach);
  // POST /v1/mountpaths/{id}/disable|enable (admins) takes one out of service or puts it
  // back, then resilvers; POST /v1/mountpaths {"path"} (admins) attaches one, then
  // resilvers; DELETE /v1/mountpaths/{id} (admins) starts its detach (202; GET shows how
  // it ends). Attach and detach are remembered across restarts (mountpaths_to_open).
  // `rest` is the path after /v1/mountpaths.
  http::Awaitable<void> handle(http::Exchange& exchange, std::string_view rest, bool is_admin);
  // Probes the mountpaths every `period` and takes failed ones out; resilvers at start
  // when the set of mountpaths changed since the last run. Runs until stop().
  http::Awaitable<void> watch(std::chrono::milliseconds period);
  void stop() { is_stopping_ = true; }

 private:
  struct Resilver;
  // Starts a resilver, preempting one that runs; with `detach_id`, the detach of that
  // mountpath instead (which moves only what is on it; its reason names the mountpath).
  void start_resilver(boost::asio::any_io_executor executor, std::string reason, std::string detach_id = {});
  // Remembers the mountpaths in use now (so a restart resilvers only when they changed).
  void remember_mountpath_set();
  http::Awaitable<void> attach(http::Exchange& exchange);
  // Checks a detach and starts it in the background (errors: kNotFound, the last one in
  // service, a detach already running).
  Status start_detach(boost::asio::any_io_executor executor, std::string id);
  http::Awaitable<void> run_resilver(std::shared_ptr<Resilver> resilver);
  // GET /v1/mountpaths as JSON.
  std::string listing_json();

  store::Store& store_;
  const std::string state_dir_;
  async::DiskExecutor disk_{1};  // probes, state files
  std::atomic<bool> is_stopping_{false};
  Mutex mutex_;
  std::shared_ptr<Resilver> resilver_ GUARDED_BY(mutex_);  // the current or last one
};

}  // namespace silo::rebalance
