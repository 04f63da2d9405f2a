// `silo`: the command-line tool of a Silo cluster (docs/cli.md). Talks to the cluster only
// through src/client (the native API, SigV4-signed).
#include <cstdio>
#include <string>

#include "commands.h"
#include "context.h"

namespace silo::cli {

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description,
                      const std::string& example) {
  CLI::App* command = parent.add_subcommand(name, description);
  command->footer("\nExample:\n  " + example);
  return command;
}

void on_run(CLI::App* command, Context& context, std::function<Status()> action) {
  command->callback([&context, action = std::move(action)] { context.action = action; });
}

namespace {

constexpr const char* kFooter = R"(
Addresses: BUCKET, BUCKET/NAME, BUCKET/PREFIX; s3://BUCKET/NAME and gs://BUCKET/NAME name
the Silo bucket BUCKET (a remote bucket caches its backend).

Endpoint and keys: the flags, else SILO_ENDPOINT, SILO_ACCESS_KEY, SILO_SECRET_KEY (and
SILO_CA_BUNDLE, SILO_CLIENT_CERT, SILO_CLIENT_KEY for https:// endpoints), else
~/.config/silo/config.json {"endpoint", "access_key", "secret_key"}, else
http://127.0.0.1:8080 with the cluster's default admin keys.

Exit codes: 0 ok, 1 server or other error, 2 bad arguments, 3 not found, 4 bad
credentials or not allowed, 5 endpoint unreachable, 6 not supported by this server.

Examples:
  silo bucket create photos copies=2
  silo put ./shards photos/train/
  silo ls photos/train/ --long
  silo prefetch s3://cache --template 'train-{0000..0999}.tar' --wait
  silo dsort photos out --template 'train-{00000..09999}.tar' --shard-size 256MiB --wait
  silo cluster show)";

int run(int argc, char** argv) {
  Context context;
  CLI::App app{"silo: the command-line tool of a Silo object store cluster", "silo"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.fallthrough();  // global flags also after the command: `silo ls b --json`
  app.add_option("--endpoint,-e", context.options.endpoint,
                 "Cluster endpoint (http://HOST:PORT of a proxy)");
  app.add_option("--access-key", context.options.access_key, "Access key");
  app.add_option("--secret-key", context.options.secret_key, "Secret key");
  app.add_option("--ca-bundle", context.options.ca_bundle,
                 "PEM CAs an https:// endpoint's certificate must chain to (default SILO_CA_BUNDLE, else the "
                 "system's)");
  app.add_option("--config", context.options.config_path,
                 "Config file (default ~/.config/silo/config.json)");
  app.add_flag("--json,-j", context.options.is_json, "Machine-readable JSON output");
  app.add_flag("--quiet,-q", context.options.is_quiet, "No progress bars or per-object lines");
  app.add_flag("--direct", context.options.is_direct,
               "Send object data straight to the target that owns it (HRW over the node map), not through "
               "the proxy; a target this machine cannot reach falls back to the proxy (SILO_DIRECT=1)");
  app.set_version_flag("--version", "silo 0.1");

  add_bucket_commands(app, context);
  add_object_commands(app, context);
  add_job_commands(app, context);
  add_cluster_commands(app, context);
  add_batch_commands(app, context);
  add_dsort_commands(app, context);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    if (context.options.is_json) {
      std::fprintf(
          stderr,
          "{\"error\":{\"code\":\"InvalidArgument\",\"message\":%s,\"hint\":%s,\"exit_code\":2}}\n",
          json_string(e.what()).c_str(),
          json_string("add --help to the command for its arguments and an example").c_str());
    } else {
      std::fprintf(stderr,
                   "silo: usage error: %s\n  hint: add --help to the command for its arguments and "
                   "an example\n",
                   e.what());
    }
    return static_cast<int>(ExitCode::kUsage);
  }
  if (!context.action) return report_error(context, Status::invalid_argument("no command given"));
  const Status status = context.action();
  std::fflush(stdout);
  if (!status.is_ok()) return report_error(context, status);
  return 0;
}

}  // namespace
}  // namespace silo::cli

int main(int argc, char** argv) { return silo::cli::run(argc, argv); }
