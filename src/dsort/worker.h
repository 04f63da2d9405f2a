#pragma once

// dsort::Worker: a target's part of resharding jobs (docs/resharding.md), behind
// /v1/internal/dsort/{job}[/records|/shards], which the primary's Coordinator drives:
// extraction of the samples of the inputs this target owns into a RecordSorter, the sorted
// records in pages for the global merge, and the creation of the output shards it owns.
#include <map>
#include <span>
#include <memory>
#include <string>
#include <string_view>

#include "async/disk_executor.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "cluster/cluster_maps.h"
#include "dsort/records.h"
#include "http/client.h"
#include "http/server.h"
#include "stats/registry.h"
#include "store/store.h"
#include "wire/codec.h"
#include "wire/dsort_json.h"

namespace silo::dsort {

inline constexpr std::string_view kWorkerPath = "/v1/internal/dsort/";
// Says whether more pages follow ("true" | "false").
inline constexpr const char* kMoreHeader = "X-Silo-More";
// The records of one page (GET .../records): about this many bytes.
inline constexpr size_t kPageBytes = 1 << 20;
// The most sample records a target holds in memory per job before spilling, unless the
// job's memory_limit says otherwise.
inline constexpr uint64_t kDefaultMemoryLimit = 256ull << 20;
// An output shard's plan (POST .../shards): its name, its size in bytes (end blocks
// included), its samples' records in order.
struct ShardPlan {
  std::string name;
  uint64_t size = 0;
  std::vector<Record> records;
  uint64_t samples = 0;  // the coordinator's count (not sent: the records are the samples' members)
};
std::string encode_plan(const ShardPlan& plan);
// The native API's path of an object (percent-encoded).
std::string object_path(std::string_view bucket, std::string_view name);
// OK for a 2xx answer, else its error (http::status_of_answer) after `what`.
Status check_answer(const http::ClientResponse& answer, std::string_view what);
// The answer to POST .../shards: spaces (heartbeats), then {"name", "size"} or an error.
Status check_creation_answer(const http::ClientResponse& answer, std::string_view what);
Result<ShardPlan> decode_plan(std::string_view bytes);

// Lives as long as the node (a target); its coroutines run on the node's io_context.
class Worker {
 public:
  Worker(cluster::ClusterMaps& maps, store::Store& store, std::shared_ptr<http::Client> client, wire::NodeInfo self,
         stats::Registry& stats);
  ~Worker();

  // `rest` follows kWorkerPath: "{job}" (POST: start extraction with the spec as body;
  // GET: progress, a wire::RebalanceProgress; DELETE: stop and drop the job's records and
  // spilled runs), "{job}/records?page=N" (GET: page N of the sorted records, pages asked
  // in order, the last one again on a retry; X-Silo-More: true while more follow),
  // "{job}/shards" (POST a ShardPlan: build that shard and store it; the answer
  // begins at once, see check_creation_answer()).
  http::Awaitable<void> handle(http::Exchange& exchange, std::string_view rest);
  // Stops every job (shutdown).
  void stop_all();

 private:
  struct Job;
  http::Awaitable<Status> start(http::Exchange& exchange, const std::string& id);
  http::Awaitable<void> extract(std::shared_ptr<Job> job);
  // Drops `job` once its coordinator has not called for kAbandonedAfter (15 min).
  http::Awaitable<void> drop_when_abandoned(std::shared_ptr<Job> job);
  http::Awaitable<Status> extract_all(Job& job);
  // Order by list: reads the key list into job.list.
  http::Awaitable<Status> load_list(Job& job);
  // Reads the samples of `shards` (at once) into the sorter.
  http::Awaitable<Status> extract_shards(Job& job, std::span<const std::string> shards);
  http::Awaitable<Status> extract_shard(Job& job, const std::string& name, std::vector<Record>& out);
  // One listing page's loose objects (members), into the sorter.
  http::Awaitable<Status> extract_loose(Job& job, std::span<const wire::ListEntry> entries);
  // Content order: the content members of `shard`'s samples, by key.
  http::Awaitable<Result<std::map<std::string, std::string, std::less<>>>> contents_of(Job& job,
                                                                                    const std::string& shard);
  // Content order, loose input: the object KEY.<member> into `content`.
  http::Awaitable<Status> loose_content(Job& job, const std::string& key, std::string& content);
  // The sample's sort key; `content` is its content member's bytes (order by content).
  Result<std::string> sort_key_of(Job& job, const std::string& key, const std::string* content);
  http::Awaitable<Status> add_records(Job& job, std::vector<Record> records);
  http::Awaitable<Status> send_page(http::Exchange& exchange, Job& job);
  // POST .../shards: starts create_shard() and answers with heartbeats until it ends.
  struct Creation;
  http::Awaitable<Status> answer_creation(http::Exchange& exchange, std::shared_ptr<Job> job);
  http::Awaitable<void> create(std::shared_ptr<Job> job, std::shared_ptr<Creation> creation);
  // Builds the shard `plan` names from its samples and stores it (an ordinary PUT).
  http::Awaitable<Status> create_shard(Job& job, const ShardPlan& plan);
  // GET of `target` (a native object path and query) from this node, as the owner.
  http::Awaitable<Result<http::ClientResponse>> get_here(std::string target, size_t max_body);
  // The job, its last_call set to now (a call of its coordinator); null when none.
  std::shared_ptr<Job> find(const std::string& id);

  cluster::ClusterMaps& maps_;
  store::Store& store_;
  std::shared_ptr<http::Client> client_;
  const wire::NodeInfo self_;
  http::Endpoint self_endpoint_;
  async::DiskExecutor disk_{2};
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<Job>> jobs_ GUARDED_BY(mutex_);
  stats::Counter& records_;
  stats::Counter& spilled_;
  stats::Counter& shards_;
  stats::Counter& shard_bytes_;
};

}  // namespace silo::dsort
