#pragma once

// The job documents of the native API (GET /v1/jobs, /v1/jobs/{id}, the answer to
// POST /v1/jobs): one codec, the encoder for the proxy, the decoder for the client.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

class JobInfo;  // cluster_messages.proto

// One job as a client reads it: the cluster-wide figures of JobInfo (the per-node ones
// under "nodes" are left out).
struct JobEntry {
  std::string id;
  std::string kind;   // "rebalance", ...
  std::string state;  // "running" | "finished" | "preempted" | "aborted" | "failed"
  std::string phase;
  std::string detail;
  uint64_t objects_done = 0;       // moved (rebalance)
  uint64_t objects_total = 0;      // an estimate of all the objects the job looks at
  uint64_t objects_remaining = 0;  // still to look at
  uint64_t bytes_done = 0;
  uint64_t errors = 0;
  uint64_t corrupt_found = 0;     // scrub
  uint64_t corrupt_repaired = 0;  // scrub
  uint64_t copies_restored = 0;   // scrub
  uint64_t objects_skipped = 0;   // prefetch: cached already
  uint64_t bytes_per_second = 0;  // over the job's life so far
  std::vector<std::string> failed_objects;  // prefetch: "name: why", the first 100 per target
  // A dsort's figures (DsortSummary), so far.
  struct Dsort {
    uint64_t samples = 0;
    uint64_t output_shards = 0;
    uint64_t bytes = 0;
    uint64_t smallest_shard = 0;
    uint64_t largest_shard = 0;
    uint64_t spilled_bytes = 0;
    uint64_t duplicate_keys = 0;
    uint64_t input_objects = 0;
    uint64_t extraction_ms = 0;
    uint64_t creation_ms = 0;
    uint64_t samples_created = 0;  // in the shards created so far
    uint64_t input_bytes = 0;      // the samples' bytes that extraction found
    // A target's part: the inputs it reads, the records it made and the primary merged,
    // and the output shards it owns (sent to it, created).
    struct Part {
      std::string id;
      uint64_t inputs_read = 0, inputs_total = 0;
      uint64_t records = 0, records_ordered = 0;
      uint64_t shards_planned = 0, shards_created = 0;
      uint64_t samples_planned = 0, samples_created = 0;
      uint64_t bytes_planned = 0, bytes_created = 0;
      bool operator==(const Part&) const = default;
    };
    std::vector<Part> parts;
    bool operator==(const Dsort&) const = default;
  };
  std::optional<Dsort> dsort;
  bool operator==(const JobEntry&) const = default;
};

// {"id", "kind", "state", "phase", "detail", "started", "finished", "progress":
//  {"objects_done", "objects_total", "objects_scanned", "objects_remaining", "bytes_done",
//  "errors", "corrupt_found", "corrupt_repaired", "copies_restored", "objects_skipped",
//  "bytes_per_second"}, "failed_objects": [...], "nodes": {id: {...}}, "dsort": {...}
//  (a dsort only: DsortSummary's fields)} (CONTRACT.md).
std::string job_json(const JobInfo& job);
// {"jobs": [job_json...]}
std::string job_list_json(std::span<const JobInfo> jobs);
// Requires the progress figures every server sends (objects_done, objects_total,
// objects_remaining, bytes_done, errors); the scrub and prefetch ones default to 0.
Result<JobEntry> parse_job_json(std::string_view text);
Result<std::vector<JobEntry>> parse_job_list_json(std::string_view text);

}  // namespace silo::wire
