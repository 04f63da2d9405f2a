#include "wire/job_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/clock.h"
#include "wire/codec.h"
#include "wire/detail/json_fields.h"

namespace silo::wire {
namespace {

using nlohmann::json;

json job_to_json(const JobInfo& job) {
  json nodes = json::object();
  json failed = json::array();
  uint64_t skipped = 0;
  for (const auto& [id, p] : job.nodes()) {
    nodes[id] = {{"phase", phase_name(p.phase())},       {"finished", p.finished()},
                 {"objects_scanned", p.objects_scanned()}, {"objects_total", p.objects_total()},
                 {"objects_moved", p.objects_moved()},     {"bytes_moved", p.bytes_moved()},
                 {"errors", p.errors()},                   {"last_error", p.last_error()},
                 {"corrupt_found", p.corrupt_found()},     {"corrupt_repaired", p.corrupt_repaired()},
                 {"copies_restored", p.copies_restored()}, {"objects_skipped", p.objects_skipped()},
                 {"failed_objects", p.failed_objects()}};
    if (job.kind() == "dsort") {
      nodes[id]["samples"] = p.samples();
      nodes[id]["spilled_bytes"] = p.spilled_bytes();
      nodes[id]["records_ordered"] = p.records_ordered();
      nodes[id]["shards_planned"] = p.shards_planned();
      nodes[id]["shards_created"] = p.shards_created();
      nodes[id]["samples_planned"] = p.samples_planned();
      nodes[id]["samples_created"] = p.samples_created();
      nodes[id]["shard_bytes_planned"] = p.shard_bytes_planned();
      nodes[id]["shard_bytes_created"] = p.shard_bytes_created();
    }
    for (const auto& f : p.failed_objects()) failed.push_back(f);
    skipped += p.objects_skipped();
  }
  // Bytes per second over the job's life so far.
  const int64_t end = job.finished_unix_nanos() > 0 ? job.finished_unix_nanos() : Clock::real().unix_nanos();
  const double seconds = static_cast<double>(std::max<int64_t>(end - job.started_unix_nanos(), 1)) / 1e9;
  json out{{"id", job.id()},
              {"kind", job.kind()},
              {"state", job.state()},
              {"phase", job.phase()},
              {"detail", job.detail()},
              {"started", job.started_unix_nanos()},
              {"finished", job.finished_unix_nanos()},
              {"progress",
               {{"objects_done", job.objects_done()},
                {"objects_total", job.objects_total()},
                {"objects_scanned", job.objects_scanned()},
                {"objects_remaining",
                 job.objects_total() > job.objects_scanned() ? job.objects_total() - job.objects_scanned() : 0},
                {"bytes_done", job.bytes_done()},
                {"errors", job.errors()},
                {"corrupt_found", job.corrupt_found()},
                {"corrupt_repaired", job.corrupt_repaired()},
                {"copies_restored", job.copies_restored()},
                {"objects_skipped", skipped},
                {"bytes_per_second", static_cast<uint64_t>(static_cast<double>(job.bytes_done()) / seconds)}}},
              {"failed_objects", failed},
              {"nodes", nodes}};
  if (job.has_dsort()) {
    const DsortSummary& d = job.dsort();
    out["dsort"] = {{"input_objects", d.input_objects()}, {"samples", d.samples()},
                    {"output_shards", d.output_shards()}, {"bytes", d.bytes()},
                    {"smallest_shard", d.smallest_shard()}, {"largest_shard", d.largest_shard()},
                    {"spilled_bytes", d.spilled_bytes()},   {"duplicate_keys", d.duplicate_keys()},
                    {"extraction_ms", d.extraction_ms()},   {"creation_ms", d.creation_ms()},
                    {"dry_run", d.dry_run()},               {"samples_created", d.samples_created()},
                    {"input_bytes", d.input_bytes()}};
  }
  return out;
}

Result<JobEntry> job_of(const detail::JsonFields& j) {
  JobEntry job;
  ASSIGN_OR_RETURN(job.id, j.string("id"));
  ASSIGN_OR_RETURN(job.kind, j.string("kind"));
  ASSIGN_OR_RETURN(job.state, j.string("state"));
  ASSIGN_OR_RETURN(job.phase, j.string_or("phase", ""));
  ASSIGN_OR_RETURN(job.detail, j.string_or("detail", ""));
  ASSIGN_OR_RETURN(const detail::JsonFields p, j.object("progress"));
  ASSIGN_OR_RETURN(job.objects_done, p.u64("objects_done"));
  ASSIGN_OR_RETURN(job.objects_total, p.u64("objects_total"));
  ASSIGN_OR_RETURN(job.objects_remaining, p.u64("objects_remaining"));
  ASSIGN_OR_RETURN(job.bytes_done, p.u64("bytes_done"));
  ASSIGN_OR_RETURN(job.errors, p.u64("errors"));
  // Scrub and prefetch figures: absent from servers older than those jobs.
  ASSIGN_OR_RETURN(job.corrupt_found, p.u64_or("corrupt_found", 0));
  ASSIGN_OR_RETURN(job.corrupt_repaired, p.u64_or("corrupt_repaired", 0));
  ASSIGN_OR_RETURN(job.copies_restored, p.u64_or("copies_restored", 0));
  ASSIGN_OR_RETURN(job.objects_skipped, p.u64_or("objects_skipped", 0));
  ASSIGN_OR_RETURN(job.bytes_per_second, p.u64_or("bytes_per_second", 0));
  ASSIGN_OR_RETURN(job.failed_objects, j.strings_or_none("failed_objects"));
  ASSIGN_OR_RETURN(const std::optional<detail::JsonFields> d, j.object_or_none("dsort"));
  if (d) {
    JobEntry::Dsort& out = job.dsort.emplace();
    ASSIGN_OR_RETURN(out.samples, d->u64_or("samples", 0));
    ASSIGN_OR_RETURN(out.output_shards, d->u64_or("output_shards", 0));
    ASSIGN_OR_RETURN(out.bytes, d->u64_or("bytes", 0));
    ASSIGN_OR_RETURN(out.smallest_shard, d->u64_or("smallest_shard", 0));
    ASSIGN_OR_RETURN(out.largest_shard, d->u64_or("largest_shard", 0));
    ASSIGN_OR_RETURN(out.spilled_bytes, d->u64_or("spilled_bytes", 0));
    ASSIGN_OR_RETURN(out.duplicate_keys, d->u64_or("duplicate_keys", 0));
    ASSIGN_OR_RETURN(out.input_objects, d->u64_or("input_objects", 0));
    ASSIGN_OR_RETURN(out.extraction_ms, d->u64_or("extraction_ms", 0));
    ASSIGN_OR_RETURN(out.creation_ms, d->u64_or("creation_ms", 0));
    ASSIGN_OR_RETURN(out.samples_created, d->u64_or("samples_created", 0));
    ASSIGN_OR_RETURN(out.input_bytes, d->u64_or("input_bytes", 0));
    // Each target's part, by id (the map's order).
    ASSIGN_OR_RETURN(const auto nodes, j.members_or_none("nodes"));
    for (const auto& [id, n] : nodes) {
      JobEntry::Dsort::Part& part = out.parts.emplace_back();
      part.id = id;
      ASSIGN_OR_RETURN(part.inputs_read, n.u64_or("objects_scanned", 0));
      ASSIGN_OR_RETURN(part.inputs_total, n.u64_or("objects_total", 0));
      ASSIGN_OR_RETURN(part.records, n.u64_or("objects_moved", 0));
      ASSIGN_OR_RETURN(part.records_ordered, n.u64_or("records_ordered", 0));
      ASSIGN_OR_RETURN(part.shards_planned, n.u64_or("shards_planned", 0));
      ASSIGN_OR_RETURN(part.shards_created, n.u64_or("shards_created", 0));
      ASSIGN_OR_RETURN(part.samples_planned, n.u64_or("samples_planned", 0));
      ASSIGN_OR_RETURN(part.samples_created, n.u64_or("samples_created", 0));
      ASSIGN_OR_RETURN(part.bytes_planned, n.u64_or("shard_bytes_planned", 0));
      ASSIGN_OR_RETURN(part.bytes_created, n.u64_or("shard_bytes_created", 0));
    }
  }
  return job;
}

}  // namespace

std::string job_json(const JobInfo& job) { return job_to_json(job).dump(); }

std::string job_list_json(std::span<const JobInfo> jobs) {
  json list = json::array();
  for (const auto& job : jobs) list.push_back(job_to_json(job));
  return json{{"jobs", list}}.dump();
}

Result<JobEntry> parse_job_json(std::string_view text) {
  constexpr std::string_view kDocument = "a job";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  return job_of(detail::JsonFields(doc, kDocument));
}

Result<std::vector<JobEntry>> parse_job_list_json(std::string_view text) {
  constexpr std::string_view kDocument = "the job list";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> items, detail::JsonFields(doc, kDocument).objects("jobs"));
  std::vector<JobEntry> jobs;
  jobs.reserve(items.size());
  for (const detail::JsonFields& item : items) {
    ASSIGN_OR_RETURN(JobEntry job, job_of(item));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace silo::wire
