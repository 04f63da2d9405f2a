#pragma once

#include <map>

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"
#include "cluster/cluster_maps.h"
#include "wire/json.h"
#include "cluster/jobs.h"
#include "cluster/meta_store.h"
#include "config/config.h"
#include "http/client.h"
#include "async/disk_executor.h"

namespace silo::cluster {

// A kind of job that a module above the control plane runs from the primary (dsort):
// Primary::start_task() hands it the request body, abort_job() the abort.
class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Checks the request and starts the job (Primary::open_job()); returns it.
  virtual http::Awaitable<Result<wire::JobInfo>> start(std::string body) = 0;
  // Stops job `id`, undoes what it did and ends it "aborted" (Primary::close_job())
  // before it returns. Errors: kFailedPrecondition when it is not running.
  virtual http::Awaitable<Status> abort(std::string id) = 0;
};

// The primary proxy's authority over cluster metadata (single-primary `local` meta store):
// it admits nodes, marks silent ones down, creates and deletes buckets, and pushes every
// new node map and bucket map version to every node (metasync). Changes are serialized;
// each one installs (and persists) a new version before it is pushed. Lives as long as the
// node; its coroutines run on the node's io_context.
class Primary {
 public:
  Primary(ClusterMaps& maps, async::DiskExecutor& state_disk, std::shared_ptr<http::Client> client,
          wire::NodeInfo self, config::ClusterConfig cluster, Clock& clock, JobRegistry& jobs, MetaStore& meta);

  // Takes the role: enters this node in the node map as the primary and pushes the maps.
  // Called once at start (local meta store), or on every election win (etcd).
  http::Awaitable<Status> start();
  // Gives the role up (etcd: deposed); the loops idle until start() again.
  void deactivate();
  // Whether this node acts as the primary now: started, not deactivated, and the meta
  // store still grants it the role (an etcd lease renewed in time).
  bool is_active() const { return is_active_ && meta_.is_authoritative(); }
  // Marks nodes down when their keepalives stop; a primary that hears from none of two or
  // more nodes marks none down and gives the role up where another proxy can take it
  // (MetaStore::give_up). Runs until stop().
  http::Awaitable<void> watch_keepalives();
  void stop();

  // A node's join or keepalive: admits or updates it, answers with the maps it lacks.
  http::Awaitable<Result<wire::KeepaliveResponse>> keepalive(const wire::KeepaliveRequest& request);

  // Errors: kAlreadyExists.
  http::Awaitable<Result<wire::Bucket>> create_bucket(std::string name, wire::BucketProps props);
  // Errors: kNotFound. The caller checked that the bucket is empty.
  http::Awaitable<Status> delete_bucket(std::string name);
  // Marks (or unmarks) a bucket as being deleted. Errors: kNotFound.
  http::Awaitable<Status> set_bucket_deleting(std::string name, bool is_deleting);
  // Adds or replaces a user (bucket map `users`).
  http::Awaitable<Status> put_user(wire::User user);
  // Errors: kNotFound.
  http::Awaitable<Status> delete_user(std::string access_key);
  // Run-time config (docs/adr/0012): merges `patch`, a JSON merge-patch of the cluster
  // section (null removes an override), into the bucket map's config_overrides and
  // commits the new version when they change. Returns the effective cluster config: this
  // primary's config file with the overrides applied. Errors: kInvalidArgument naming
  // the key (unknown, read at start only, bad value).
  http::Awaitable<Result<config::ClusterConfig>> set_config(std::string patch);
  // Errors: kNotFound.
  http::Awaitable<Result<wire::Bucket>> set_bucket_props(std::string name, wire::BucketProps props);

  // Membership (docs/membership-and-rebalance.md). Maintenance and decommission take the
  // node's objects off it by a rebalance; a decommissioned node is removed from the map
  // (and told to stop) once that rebalance is done. Returns the new node map.
  // Errors: kNotFound; kFailedPrecondition (the primary itself, a retiring node).
  http::Awaitable<Result<wire::NodeMap>> set_node_mode(std::string id, wire::NodeMode mode);
  // Adds the node serving at `url` that waits to be added (started without a primary
  // URL): tells it where the primary is and returns once it joined. Errors: kUnavailable
  // (unreachable), kFailedPrecondition (it belongs to a cluster already).
  http::Awaitable<Result<wire::NodeMap>> add_node(std::string url);
  // Forgets a node that is down for good (its objects are lost unless copies exist).
  // Errors: kNotFound; kFailedPrecondition when it is not down.
  http::Awaitable<Result<wire::NodeMap>> remove_node(std::string id);
  // Drives the rebalance of the node map: polls the targets, advances the phase once all
  // have finished it, keeps the job's progress, retires decommissioned nodes. Runs until stop().
  http::Awaitable<void> run_rebalance();
  JobRegistry& jobs() { return jobs_; }
  const wire::NodeInfo& self() const { return self_; }
  // Starts a job every target that is up runs a part of, as `request` says (its JSON is
  // `body`, handed to the targets as is):
  // - scrub (docs/data-protection.md "Scrub"): each checks its copies (of `bucket`, or of
  //   all buckets) at `rate_bytes` per second at most (0: no bound), repairing what it can;
  // - prefetch (docs/remote-buckets.md): each fetches the objects it owns of the names the
  //   request gives, from the remote bucket's backend;
  // - rebalance: start_rebalance().
  // Returns the job. Errors: kNotFound (bucket), kInvalidArgument (prefetch of a bucket
  // that is not remote).
  http::Awaitable<Result<wire::JobInfo>> start_task(wire::JobRequest request, std::string body);
  // Starts a new rebalance with the owners as they are (one that failed, tried again),
  // preempting one that runs. Returns its job.
  http::Awaitable<Result<wire::JobInfo>> start_rebalance();
  // Stops a running scrub or prefetch on every target and ends its job "aborted".
  // Errors: kNotFound; kFailedPrecondition (not running, or a kind that cannot stop).
  http::Awaitable<Status> abort_job(std::string id);
  // Jobs of `kind` run by `runner` (which outlives this): started and aborted through it.
  // Call before serving.
  void add_runner(std::string kind, JobRunner* runner) { runners_[std::move(kind)] = runner; }
  // For runners: a new job of `kind` in `phase`, persisted as running. Errors:
  // kUnavailable when this node is not the primary (any more).
  http::Awaitable<Result<wire::JobInfo>> open_job(std::string kind, std::string phase);
  // For runners: ends `job` (its progress as given) as `state` ("finished", "aborted",
  // "failed") with `detail`, persisted.
  http::Awaitable<Status> close_job(wire::JobInfo job, std::string state, std::string detail);

 private:
  struct Changed {
    bool node_map = false;
    bool bucket_map = false;
    bool layout = false;  // a bucket's layout changed: starts a rebalance (set node_map too)
  };
  using Change = std::function<Status(wire::NodeMap&, wire::BucketMap&, Changed&)>;

  // Applies `change` to copies of the current maps, installs the new versions, then pushes
  // them to every node that is not down.
  http::Awaitable<Status> mutate(Change change);
  http::Awaitable<void> push_maps();
  std::optional<wire::Bucket> bucket_now(const std::string& name) const;
  // Whether the nodes of `nodes` can hold the layout `props` asks for (copies <= targets).
  static Status check_layout(const wire::NodeMap& nodes, const wire::BucketProps& props);
  // One round of run_rebalance().
  http::Awaitable<void> rebalance_round();
  // Registers the job of the map's rebalance, ending older running ones as preempted.
  Status note_rebalance(const wire::NodeMap& map);
  // Polls every target's part of task job `id` until all have finished (or are gone),
  // keeping the job's progress; then ends the job.
  http::Awaitable<void> watch_task(std::string id, std::vector<wire::NodeInfo> targets);
  // Sends `method` to /v1/internal/tasks/{id} on `node` with `body`.
  http::Awaitable<Result<http::ClientResponse>> call_task(const wire::NodeInfo& node, http::Method method,
                                                          const std::string& id, std::string body = "");
  // Removes decommissioned nodes whose objects are off them, telling each to stop.
  http::Awaitable<void> retire_decommissioned();

  ClusterMaps& maps_;
  async::DiskExecutor& state_disk_;
  std::shared_ptr<http::Client> client_;
  const wire::NodeInfo self_;
  const config::ClusterConfig cluster_;
  Clock& clock_;
  JobRegistry& jobs_;
  std::map<std::string, JobRunner*, std::less<>> runners_;  // filled before serving
  MetaStore& meta_;
  std::atomic<bool> is_active_{false};
  Mutex mutation_mutex_;  // held on the state disk thread only, never across co_await
  Mutex seen_mutex_;
  std::unordered_map<std::string, Clock::TimePoint> last_seen_ GUARDED_BY(seen_mutex_);
  bool hears_nobody_ = false;  // watch_keepalives() only: logs the start of a silence once
  std::atomic<bool> stopping_{false};
  std::unique_ptr<boost::asio::steady_timer> timer_;
  std::unique_ptr<boost::asio::steady_timer> rebalance_timer_;
};

// A non-primary node's link to the primary: joins, then sends keepalives and installs the
// maps the primary sends back.
class Member {
 public:
  // `seed`: where to find the primary before the node map names one (node.primary_url);
  // none for an HA proxy, which learns the primary from etcd.
  Member(ClusterMaps& maps, async::DiskExecutor& state_disk, std::shared_ptr<http::Client> client,
         wire::NodeInfo self, std::optional<http::Endpoint> seed, config::ClusterConfig cluster);
  // Where to find the primary from now on (an admin added this node).
  void set_seed(http::Endpoint seed);
  bool has_seed() const;
  // One keepalive round trip now (the first one is the join), to the primary of the node
  // map, else the seed, else any other proxy of the map (HA: the primary may have moved).
  http::Awaitable<Status> sync();
  // Keepalives every interval until stop(), skipped while `is_primary` says this node is
  // the primary itself (HA proxies).
  http::Awaitable<void> run(std::function<bool()> is_primary = nullptr);
  void stop();

 private:
  // One keepalive to `to`; a proxy that is not the primary names the primary
  // (kPrimaryUrlHeader), which is tried once when `follows` is set.
  http::Awaitable<Status> sync_with(const http::Endpoint& to, bool follows = true);

  ClusterMaps& maps_;
  async::DiskExecutor& state_disk_;
  std::shared_ptr<http::Client> client_;
  const wire::NodeInfo self_;
  mutable Mutex seed_mutex_;
  std::optional<http::Endpoint> seed_ GUARDED_BY(seed_mutex_);
  const config::ClusterConfig cluster_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<boost::asio::steady_timer> timer_;
};

// Installs the maps of a metasync push or keepalive answer (those that are newer).
http::Awaitable<Status> install_maps(ClusterMaps& maps, async::DiskExecutor& state_disk,
                                     const wire::NodeMap* node_map, const wire::BucketMap* bucket_map);

inline constexpr const char* kKeepalivePath = "/v1/internal/keepalive";
// How long a control-plane call (keepalive, push) may make no progress before it fails
// (the node's control client). A node can be stuck this long on a primary that became
// unreachable before it tries the next one, so a new primary waits as much longer for it.
inline constexpr std::chrono::milliseconds kControlCallTimeout{5000};
// On a keepalive's 409 from a proxy that is not the primary: the primary's URL as that
// proxy knows it (a node that joins through any proxy finds the primary; HA).
inline constexpr const char* kPrimaryUrlHeader = "X-Silo-Primary-Url";
inline constexpr const char* kMetasyncPath = "/v1/internal/metasync";
// GET on a target: its wire::RebalanceProgress.
inline constexpr const char* kRebalancePath = "/v1/internal/rebalance";
// /v1/internal/tasks/{job id} on a target: its part of a job (POST starts, GET progress,
// DELETE stops).
inline constexpr const char* kTasksPath = "/v1/internal/tasks/";
// POST to a node waiting to be added, with the primary's URL as the body: join it.
inline constexpr const char* kAttachPath = "/v1/internal/attach";
// POST to a decommissioned node: stop sending keepalives and shut down.
inline constexpr const char* kLeavePath = "/v1/internal/leave";
// "rebalance-<id>"
std::string rebalance_job_id(uint64_t rebalance_id);

}  // namespace silo::cluster
