// silo job ls|show|wait|abort, silo prefetch, silo evict, silo scrub.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "commands.h"
#include "progress.h"

namespace silo::cli {
namespace {

constexpr std::chrono::seconds kWaitPoll{2};        // each long-poll of /wait
constexpr std::chrono::seconds kPlainLineEvery{5};  // progress lines when not on a terminal

// A dsort's input objects read so far (the server sends objects_total and
// objects_remaining = objects_total - objects_scanned).
uint64_t objects_read(const client::JobEntry& j) {
  return j.objects_total - std::min(j.objects_remaining, j.objects_total);
}

std::string progress_text(const client::JobEntry& j) {
  if (j.kind == "dsort") {
    // objects_done and bytes_done count the output shards created.
    std::string out =
        fmt::format("{}/{} input objects read, {} shards created, {}", objects_read(j),
                    j.objects_total, j.objects_done, human_bytes(j.bytes_done));
    if (j.bytes_per_second > 0) out += fmt::format(", {}/s", human_bytes(j.bytes_per_second));
    if (j.errors > 0) out += fmt::format(", {} errors", j.errors);
    return out;
  }
  std::string out = j.objects_total > 0
                        ? fmt::format("{}/{} objects", j.objects_done, j.objects_total)
                        : fmt::format("{} objects", j.objects_done);
  if (j.objects_skipped > 0) out += fmt::format(", {} skipped", j.objects_skipped);
  out += fmt::format(", {}", human_bytes(j.bytes_done));
  if (j.bytes_per_second > 0) out += fmt::format(", {}/s", human_bytes(j.bytes_per_second));
  if (j.errors > 0) out += fmt::format(", {} errors", j.errors);
  return out;
}

void print_job(const client::JobEntry& j) {
  Table table({"PROPERTY", "VALUE"});
  table.add({"id", j.id});
  table.add({"kind", j.kind});
  table.add({"state", j.state});
  if (!j.phase.empty()) table.add({"phase", j.phase});
  table.add({"progress", progress_text(j)});
  if (j.objects_remaining > 0) table.add({"remaining", std::to_string(j.objects_remaining)});
  if (j.kind == "scrub") {
    table.add({"corrupt found", std::to_string(j.corrupt_found)});
    table.add({"corrupt repaired", std::to_string(j.corrupt_repaired)});
    table.add({"copies restored", std::to_string(j.copies_restored)});
  }
  if (j.dsort) {
    const client::JobEntry::Dsort& d = *j.dsort;
    const auto bytes = [](uint64_t n) {
      return n < 1024 ? human_bytes(n) : fmt::format("{} ({} bytes)", human_bytes(n), n);
    };
    table.add({"samples", std::to_string(d.samples)});
    table.add({"output shards", std::to_string(d.output_shards)});
    table.add({"bytes", bytes(d.bytes)});
    table.add({"smallest shard", bytes(d.smallest_shard)});
    table.add({"largest shard", bytes(d.largest_shard)});
    table.add({"spilled bytes", bytes(d.spilled_bytes)});
    table.add({"duplicate keys", std::to_string(d.duplicate_keys)});
  }
  if (!j.detail.empty()) table.add({"detail", j.detail});
  for (const auto& f : j.failed_objects) table.add({"failed", f});
  table.print();
  if (j.dsort && !j.dsort->parts.empty()) {
    // Each target: the inputs it read, its records merged, the output shards it builds.
    std::printf("\n");
    Table parts({"TARGET", "INPUTS READ", "RECORDS MERGED", "SHARDS CREATED", "SAMPLES CREATED", "BYTES CREATED"});
    for (const auto& p : j.dsort->parts) {
      parts.add({p.id, fmt::format("{}/{}", p.inputs_read, p.inputs_total),
                 fmt::format("{}/{}", p.records_ordered, p.records),
                 fmt::format("{}/{}", p.shards_created, p.shards_planned),
                 fmt::format("{}/{}", p.samples_created, p.samples_planned),
                 fmt::format("{}/{}", human_bytes(p.bytes_created), human_bytes(p.bytes_planned))});
    }
    parts.print();
  }
}

// What a job's progress bar shows. A dsort counts the input objects read while it
// extracts, then the shards created (their number is not known ahead); other jobs count
// the objects done.
struct BarFigures {
  std::string label;
  std::string unit;
  uint64_t items = 0;
  uint64_t total_items = 0;
  uint64_t bytes = 0;
};

BarFigures bar_figures(const client::JobEntry& j) {
  if (j.kind != "dsort") {
    return {j.kind + " " + j.id, "objects", j.objects_done + j.objects_skipped, j.objects_total,
            j.bytes_done};
  }
  if (j.phase.empty() || j.phase == "extraction")
    return {j.id + " extraction", "input objects", objects_read(j), j.objects_total, 0};
  return {j.id + " " + j.phase, "shards", j.objects_done, 0, j.bytes_done};
}

bool is_running(const client::JobEntry& j) {
  return j.state == "running" || j.state == "pending" || j.state == "queued" ||
         j.state == "starting";
}

// Reads a --list file: one object name a line; blank lines and lines starting with # skipped.
Result<std::vector<std::string>> read_names(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::invalid_argument("--list file {} cannot be read", path);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    names.push_back(line);
  }
  if (names.empty()) return Status::invalid_argument("--list file {} names no objects", path);
  return names;
}

// Which objects a prefetch or an evict selects (wire::ObjectSelection as JSON members).
struct Selection {
  std::string address;
  std::string prefix;
  std::string name_template;
  std::string list_path;
  std::vector<std::string> names;
};

// ("bucket", `"prefix": ...` members or "") from the flags; at most one kind.
Result<std::pair<std::string, std::string>> selection_json(const Selection& s) {
  ASSIGN_OR_RETURN(const ObjectAddress a, parse_address(s.address));
  std::string prefix = s.prefix;
  std::vector<std::string> names = s.names;
  if (!s.list_path.empty()) {
    ASSIGN_OR_RETURN(auto listed, read_names(s.list_path));
    names.insert(names.end(), listed.begin(), listed.end());
  }
  const int kinds = !prefix.empty() + !s.name_template.empty() + !names.empty() + !a.name.empty();
  if (kinds > 1) {
    return Status::invalid_argument(
        "choose one of BUCKET/PREFIX, --prefix, --template, --list and object names");
  }
  if (!a.name.empty()) prefix = a.name;
  std::string members;
  if (!prefix.empty()) members = fmt::format(R"("prefix":{})", json_string(prefix));
  if (!s.name_template.empty())
    members = fmt::format(R"("template":{})", json_string(s.name_template));
  if (!names.empty()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ",") + json_string(n);
    members = fmt::format(R"("names":[{}])", list);
  }
  return std::make_pair(a.bucket, members);
}

void add_selection_flags(CLI::App* command, Selection& s) {
  command->add_option("bucket", s.address, "BUCKET (s3://BUCKET, gs://BUCKET) or BUCKET/PREFIX")
      ->required();
  command->add_option("names", s.names, "Object names");
  command->add_option("--prefix,-p", s.prefix, "Objects whose names start so");
  command->add_option("--template,-t", s.name_template, "Brace template: 'train-{0000..0999}.tar'");
  command->add_option("--list,-f", s.list_path, "File with one object name a line");
}

struct StartOptions {
  Selection selection;
  uint32_t workers = 0;
  bool is_waiting = false;
  double rate_mb_s = 0;
};

}  // namespace

Status report_started_job(Context& context, client::Client& c, const client::JobEntry& job,
                          bool is_waiting) {
  if (is_waiting) {
    if (!context.options.is_json && !context.options.is_quiet)
      std::printf("started %s job %s\n", job.kind.c_str(), job.id.c_str());
    return wait_for_job(context, c, job.id);
  }
  if (context.options.is_json) {
    std::printf("%s\n", job_json(job).c_str());
  } else {
    std::printf("started %s job %s (watch it with 'silo job wait %s')\n", job.kind.c_str(),
                job.id.c_str(), job.id.c_str());
  }
  return Status::ok();
}

namespace {

Status start_prefetch(Context& context, const StartOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const auto selection, selection_json(o.selection));
  std::string body =
      fmt::format(R"({{"kind":"prefetch","bucket":{})", json_string(selection.first));
  if (!selection.second.empty()) body += "," + selection.second;
  if (o.workers > 0) body += fmt::format(R"(,"workers":{})", o.workers);
  body += "}";
  ASSIGN_OR_RETURN(const client::JobEntry job, c->start_job(body));
  return report_started_job(context, *c, job, o.is_waiting);
}

Status start_scrub(Context& context, const StartOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  std::string body = R"({"kind":"scrub")";
  if (!o.selection.address.empty()) {
    ASSIGN_OR_RETURN(const ObjectAddress a, parse_address(o.selection.address));
    body += fmt::format(R"(,"bucket":{})", json_string(a.bucket));
  }
  if (o.rate_mb_s > 0) body += fmt::format(R"(,"rate_mb_s":{})", o.rate_mb_s);
  body += "}";
  ASSIGN_OR_RETURN(const client::JobEntry job, c->start_job(body));
  return report_started_job(context, *c, job, o.is_waiting);
}

Status start_rebalance(Context& context, bool is_waiting) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const client::JobEntry job, c->start_job(R"({"kind":"rebalance"})"));
  return report_started_job(context, *c, job, is_waiting);
}

struct EvictOptions {
  Selection selection;
  bool is_forgetting = false;
};

Status evict(Context& context, const EvictOptions& o) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const auto selection, selection_json(o.selection));
  if (o.is_forgetting && !selection.second.empty()) {
    return Status::invalid_argument(
        "--forget applies to a whole bucket, not to a selection of objects");
  }
  std::string body = "{" + selection.second;
  if (o.is_forgetting) body += R"("keep_props":false)";
  body += "}";
  ASSIGN_OR_RETURN(const uint64_t evicted, c->evict(selection.first, body));
  if (context.options.is_json) {
    std::printf("{\"bucket\":%s,\"evicted\":%llu}\n", json_string(selection.first).c_str(),
                static_cast<unsigned long long>(evicted));
  } else {
    std::printf("evicted %llu cached objects of %s%s\n", static_cast<unsigned long long>(evicted),
                selection.first.c_str(), o.is_forgetting ? " and forgot the bucket" : "");
  }
  return Status::ok();
}

Status list_jobs(Context& context) {
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  ASSIGN_OR_RETURN(const auto jobs, c->jobs());
  if (context.options.is_json) {
    std::string list;
    for (const auto& j : jobs) list += (list.empty() ? "" : ",") + job_json(j);
    std::printf("{\"jobs\":[%s]}\n", list.c_str());
    return Status::ok();
  }
  if (jobs.empty()) {
    std::printf("no jobs\n");
    return Status::ok();
  }
  Table table({"ID", "KIND", "STATE", "PROGRESS"});
  for (const auto& j : jobs) table.add({j.id, j.kind, j.state, progress_text(j)});
  table.print();
  return Status::ok();
}

}  // namespace

std::string job_json(const client::JobEntry& j) {
  std::string failed;
  for (const auto& f : j.failed_objects) failed += (failed.empty() ? "" : ",") + json_string(f);
  std::string dsort;
  if (j.dsort) {
    const client::JobEntry::Dsort& d = *j.dsort;
    std::string parts;
    for (const auto& p : d.parts) {
      parts += fmt::format(
          R"({}{}:{{"inputs_read":{},"inputs_total":{},"records":{},"records_ordered":{},"shards_planned":{},)"
          R"("shards_created":{},"samples_planned":{},"samples_created":{},"bytes_planned":{},"bytes_created":{}}})",
          parts.empty() ? "" : ",", json_string(p.id), p.inputs_read, p.inputs_total, p.records,
          p.records_ordered, p.shards_planned, p.shards_created, p.samples_planned, p.samples_created,
          p.bytes_planned, p.bytes_created);
    }
    dsort = fmt::format(
        R"(,"dsort":{{"samples":{},"output_shards":{},"bytes":{},"smallest_shard":{},"largest_shard":{},)"
        R"("spilled_bytes":{},"duplicate_keys":{},"input_objects":{},"extraction_ms":{},"creation_ms":{},)"
        R"("samples_created":{},"input_bytes":{},"targets":{{{}}}}})",
        d.samples, d.output_shards, d.bytes, d.smallest_shard, d.largest_shard, d.spilled_bytes,
        d.duplicate_keys, d.input_objects, d.extraction_ms, d.creation_ms, d.samples_created,
        d.input_bytes, parts);
  }
  return fmt::format(
      R"({{"id":{},"kind":{},"state":{},"phase":{},"detail":{},"progress":{{"objects_done":{},"objects_total":{},)"
      R"("objects_remaining":{},"objects_skipped":{},"bytes_done":{},"bytes_per_second":{},"errors":{},)"
      R"("corrupt_found":{},"corrupt_repaired":{},"copies_restored":{}}},"failed_objects":[{}]{}}})",
      json_string(j.id), json_string(j.kind), json_string(j.state), json_string(j.phase),
      json_string(j.detail), j.objects_done, j.objects_total, j.objects_remaining,
      j.objects_skipped, j.bytes_done, j.bytes_per_second, j.errors, j.corrupt_found,
      j.corrupt_repaired, j.copies_restored, failed, dsort);
}

Status wait_for_job(Context& context, client::Client& c, const std::string& id) {
  ASSIGN_OR_RETURN(client::JobEntry job, c.job(id));
  // One bar, or one a phase when the figures change meaning with the phase (dsort).
  std::optional<Progress> progress;
  const auto show = [&context, &progress](const client::JobEntry& j) {
    BarFigures f = bar_figures(j);
    if (!progress || progress->label() != f.label) {
      if (progress) progress->finish();
      progress.emplace(f.label, f.total_items, 0, context.shows_progress(), f.unit);
    }
    progress->set(f.items, f.total_items, f.bytes, j.bytes_per_second);
  };
  const bool prints_lines =
      !context.options.is_json && !context.options.is_quiet && !context.shows_progress();
  auto last_line = std::chrono::steady_clock::now();
  while (is_running(job)) {
    show(job);
    const auto now = std::chrono::steady_clock::now();
    if (prints_lines && now - last_line >= kPlainLineEvery) {
      std::printf("%s %s: %s, %s\n", job.kind.c_str(), job.id.c_str(), job.state.c_str(),
                  progress_text(job).c_str());
      std::fflush(stdout);
      last_line = now;
    }
    ASSIGN_OR_RETURN(job, c.wait_job(id, kWaitPoll));
  }
  show(job);
  progress->finish();
  if (context.options.is_json) {
    std::printf("%s\n", job_json(job).c_str());
  } else if (!context.options.is_quiet) {
    print_job(job);
  }
  if (job.state != "finished") {
    return Status::aborted("job {} ended {}{}", job.id, job.state,
                           job.detail.empty() ? "" : ": " + job.detail);
  }
  return Status::ok();
}

void add_job_commands(CLI::App& app, Context& context) {
  CLI::App* job = app.add_subcommand(
      "job", "List, show, wait for and abort jobs (rebalance, scrub, prefetch, ...)");
  job->require_subcommand(1);

  CLI::App* ls_cmd =
      add_command(*job, "ls", "List jobs with their state and progress", "silo job ls --json");
  on_run(ls_cmd, context, [&context] { return list_jobs(context); });

  auto show_id = std::make_shared<std::string>();
  CLI::App* show_cmd =
      add_command(*job, "show", "Show one job's state and progress", "silo job show prefetch-3");
  show_cmd->add_option("id", *show_id, "Job id (see 'silo job ls')")->required();
  on_run(show_cmd, context, [&context, show_id]() -> Status {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    ASSIGN_OR_RETURN(const client::JobEntry j, c->job(*show_id));
    if (context.options.is_json) {
      std::printf("%s\n", job_json(j).c_str());
    } else {
      print_job(j);
    }
    return Status::ok();
  });

  auto wait_id = std::make_shared<std::string>();
  CLI::App* wait_cmd = add_command(
      *job, "wait", "Wait until a job ends, showing its progress; exit code 1 unless it finished",
      "silo job wait prefetch-3");
  wait_cmd->add_option("id", *wait_id, "Job id")->required();
  on_run(wait_cmd, context, [&context, wait_id]() -> Status {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    return wait_for_job(context, *c, *wait_id);
  });

  auto abort_id = std::make_shared<std::string>();
  CLI::App* abort_cmd =
      add_command(*job, "abort", "Abort a running job", "silo job abort prefetch-3");
  abort_cmd->add_option("id", *abort_id, "Job id")->required();
  on_run(abort_cmd, context, [&context, abort_id]() -> Status {
    ASSIGN_OR_RETURN(client::Client * c, context.client());
    RETURN_IF_ERROR(c->abort_job(*abort_id));
    if (context.options.is_json) {
      std::printf("{\"id\":%s,\"aborted\":true}\n", json_string(*abort_id).c_str());
    } else {
      std::printf("aborted job %s\n", abort_id->c_str());
    }
    return Status::ok();
  });

  auto prefetch = std::make_shared<StartOptions>();
  CLI::App* prefetch_cmd = add_command(
      app, "prefetch", "Fetch objects of a remote bucket from its backend into the cluster (a job)",
      "silo prefetch s3://cache --template 'train-{0000..0999}.tar' --wait\n"
      "  silo prefetch cache --prefix val/\n  silo prefetch cache --list names.txt --workers 16");
  add_selection_flags(prefetch_cmd, prefetch->selection);
  prefetch_cmd->add_option("--workers", prefetch->workers, "Parallel fetches per target");
  prefetch_cmd->add_flag("--wait", prefetch->is_waiting, "Wait for the job, showing its progress");
  on_run(prefetch_cmd, context,
         [&context, prefetch] { return start_prefetch(context, *prefetch); });

  auto ev = std::make_shared<EvictOptions>();
  CLI::App* evict_cmd = add_command(
      app, "evict",
      "Remove cached objects of a remote bucket from the cluster (the backend keeps them)",
      "silo evict cache --prefix val/\n  silo evict cache              (every cached object)\n"
      "  silo evict cache --forget     (and forget the bucket)");
  add_selection_flags(evict_cmd, ev->selection);
  evict_cmd->add_flag("--forget", ev->is_forgetting, "Whole bucket: also forget the remote bucket");
  on_run(evict_cmd, context, [&context, ev] { return evict(context, *ev); });

  auto scrub = std::make_shared<StartOptions>();
  CLI::App* scrub_cmd = add_command(
      app, "scrub", "Verify every object's checksums and repair from good copies (a job)",
      "silo scrub photos --rate 100 --wait");
  scrub_cmd->add_option("bucket", scrub->selection.address, "Bucket (none: every bucket)");
  scrub_cmd->add_option("--rate", scrub->rate_mb_s, "MB/s per target (none: no bound)");
  scrub_cmd->add_flag("--wait", scrub->is_waiting, "Wait for the job, showing its progress");
  on_run(scrub_cmd, context, [&context, scrub] { return start_scrub(context, *scrub); });

  auto rebalance_waits = std::make_shared<bool>(false);
  CLI::App* rebalance_cmd = add_command(
      app, "rebalance",
      "Start a rebalance that moves every object to its holders (membership changes start one by themselves; "
      "this tries one that failed again)",
      "silo rebalance --wait");
  rebalance_cmd->add_flag("--wait", *rebalance_waits, "Wait for the job, showing its progress");
  on_run(rebalance_cmd, context,
         [&context, rebalance_waits] { return start_rebalance(context, *rebalance_waits); });
}

}  // namespace silo::cli
