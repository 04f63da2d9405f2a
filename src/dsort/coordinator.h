#pragma once

// dsort::Coordinator: resharding jobs on the primary (docs/resharding.md). It checks the
// spec, has every target extract the samples of the inputs it owns, merges the targets'
// sorted records page by page into the global order, cuts that order into output shards,
// and sends each shard's plan to the shard's owner (dsort::Worker), at most two per
// target in creation at once. An abort, a failure or a change of the targets removes every output shard it
// sent and ends the job.
#include <map>
#include <memory>
#include <set>
#include <string>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "cluster/cluster_maps.h"
#include "cluster/primary.h"
#include "dsort/records.h"
#include "dsort/worker.h"
#include "http/client.h"
#include "wire/dsort_json.h"

namespace silo::dsort {

// Lives as long as the node (a proxy that may be primary); registered with
// Primary::add_runner("dsort", ...). Coroutines run on the node's io_context.
class Coordinator : public cluster::JobRunner {
 public:
  Coordinator(cluster::Primary& primary, cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client);
  ~Coordinator() override;

  // POST /v1/jobs {"kind": "dsort", ...} (wire/dsort_json.h). Errors: kInvalidArgument
  // (the spec; the output could be read as input), kNotFound (NoSuchBucket),
  // kUnavailable (a target is down or not in normal mode, a rebalance runs),
  // kFailedPrecondition (another dsort writes into the same output bucket).
  http::Awaitable<Result<wire::JobInfo>> start(std::string body) override;
  http::Awaitable<Status> abort(std::string id) override;
  // Stops every job where it is (shutdown); their output stays (the job record says running).
  void stop();

 private:
  struct Run;
  struct Cursor;
  http::Awaitable<void> run(std::shared_ptr<Run> run);
  http::Awaitable<Status> extract(Run& run);
  http::Awaitable<Status> order_and_create(Run& run);
  http::Awaitable<Status> advance(Run& run, Cursor& cursor);
  // Starts the creation of each plan cut (run.ready), waiting for a free slot for each.
  http::Awaitable<Status> send_ready(Run& run);
  // Waits for every creation started; the first one's error.
  http::Awaitable<Status> drain(Run& run);
  // One shard's creation by its owner.
  http::Awaitable<void> create(std::shared_ptr<Run> run, wire::NodeInfo owner, ShardPlan plan);
  // Copies the ordering and creation figures into the job, per target and in all.
  void publish(Run& run);
  // Removes the output shards sent for creation (run.sent keeps those it could not);
  // says what it removed and what it could not.
  http::Awaitable<std::string> remove_outputs(Run& run);
  // Tries remove_outputs() again every few seconds until none are left (or 30 min).
  http::Awaitable<void> remove_later(std::shared_ptr<Run> run);
  // Ends the targets' parts (their records and spilled runs go).
  http::Awaitable<void> drop_parts(Run& run);
  // Why the job cannot go on: aborted, not the primary any more, the targets changed.
  Status check(const Run& run) const;
  http::Awaitable<Result<http::ClientResponse>> call(const wire::NodeInfo& node, http::Method method,
                                                     std::string target, std::string body, size_t max_body);

  cluster::Primary& primary_;
  cluster::ClusterMaps& maps_;
  std::shared_ptr<http::Client> client_;
  std::atomic<bool> is_stopping_{false};
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<Run>> runs_ GUARDED_BY(mutex_);  // running ones
  std::set<std::string> writing_ GUARDED_BY(mutex_);  // their output buckets
};

// What the targets look like to a job: every target's id, state and mode and the
// rebalance id. A job fails when this changes under it (a rebalance would move inputs).
std::string targets_fingerprint(const wire::NodeMap& map);

}  // namespace silo::dsort
