#pragma once

// The command groups of `silo`, one translation unit each. Each add_* function declares
// its commands on `app`; a command's callback stores its action in `context`, and main()
// runs it after parsing (so CLI11's exceptions stay in main()).
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "client/client.h"
#include "context.h"

namespace silo::cli {

void add_bucket_commands(CLI::App& app, Context& context);   // bucket ..., ls
void add_object_commands(CLI::App& app, Context& context);   // put, get, rm, cat, stat
void add_job_commands(CLI::App& app, Context& context);      // job ..., prefetch, evict
void add_cluster_commands(CLI::App& app, Context& context);  // cluster, node, mountpath, config
void add_batch_commands(CLI::App& app, Context& context);    // batch get
void add_dsort_commands(CLI::App& app, Context& context);    // dsort

// A subcommand with a description and an example shown by --help.
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description,
                      const std::string& example);
// Makes `action` the command's action when the user names `command`.
void on_run(CLI::App* command, Context& context, std::function<Status()> action);

// After POST /v1/jobs: prints the job's id (its JSON under --json), or with `is_waiting`
// follows it with wait_for_job().
Status report_started_job(Context& context, client::Client& c, const client::JobEntry& job,
                          bool is_waiting);
// Waits for job `id` to end, showing its progress (a bar on a terminal, a line every few
// seconds otherwise); prints the final state (JSON under --json). A job that ends other
// than "finished" is an error.
Status wait_for_job(Context& context, client::Client& c, const std::string& id);
// Before a put: NotFound for a bucket that does not exist (a bucket the caller may not
// list but may write to passes: the PUTs decide).
Status check_put_bucket(client::Client& c, std::string_view bucket);
// The whole of file `path` ("-": stdin); an error names it as `what` ("the list").
Result<std::string> read_text(const std::string& path, std::string_view what);
// One job as JSON, as `silo job show --json` prints it.
std::string job_json(const client::JobEntry& job);

}  // namespace silo::cli
