// silo-bench: load generator for Silo and for reference HTTP servers (PERF.md).
#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "bench.h"

namespace {

using silo::Result;
using silo::Status;

// "64MiB" -> {64, "mib"}: the number and its unit, lower-cased; `what` names the kind of
// value in the error ("a size (e.g. 100KiB, 64MiB, 1GB)").
Result<std::pair<double, std::string>> split_number(const std::string& text, std::string_view what) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    return Status::invalid_argument("'{}' is not {}", text, what);
  }
  std::string unit = text.substr(end);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::make_pair(value, unit);
}

// "64MiB", "100KiB", "1GB", "4096", "64M" (binary units for K/M/G with or without "iB").
Result<uint64_t> parse_size(const std::string& text) {
  ASSIGN_OR_RETURN(const auto parsed, split_number(text, "a size (e.g. 100KiB, 64MiB, 1GB)"));
  const auto& [value, unit] = parsed;
  double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else return Status::invalid_argument("'{}': unknown size unit '{}' (B, KiB, MiB, GiB, KB, MB, GB)", text, unit);
  if (value < 0) return Status::invalid_argument("'{}': a size must not be negative", text);
  return static_cast<uint64_t>(value * scale);
}

// "10s", "500ms", "2m", "1.5" (seconds).
Result<double> parse_duration(const std::string& text) {
  ASSIGN_OR_RETURN(const auto parsed, split_number(text, "a duration (e.g. 10s, 500ms, 2m)"));
  const auto& [value, unit] = parsed;
  if (value < 0) return Status::invalid_argument("'{}': a duration must not be negative", text);
  if (unit.empty() || unit == "s") return value;
  if (unit == "ms") return value / 1000;
  if (unit == "m") return value * 60;
  return Status::invalid_argument("'{}': unknown duration unit '{}' (ms, s, m)", text, unit);
}

int fail(const Status& status) {
  std::fprintf(stderr, "silo-bench: %s\n", status.to_string().c_str());
  return 2;
}

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using silo::bench::Config;
  using silo::bench::Mode;
  using silo::bench::Path;
  CLI::App app{
      "silo-bench: load generator for Silo (direct to the owner target, or S3 through a proxy) and for plain "
      "HTTP servers (nginx) or local files, with latency percentiles, time to first byte and server CPU.\n\n"
      "Examples:\n"
      "  silo-bench get --bucket b --duration 10s --concurrency 16            # direct, objects listed\n"
      "  silo-bench put --bucket b --objects 64 --size 64MiB --path gateway   # S3 PUTs through the proxy\n"
      "  silo-bench get --path url --url http://127.0.0.1:9480/data --objects 1000 --name-format 'o-{:06}'\n"
      "  silo-bench list --bucket b --path gateway --count 3                  # 3 full listings\n"
      "  silo-bench accel --bucket b --prefix shard- --profile resnet50       # most accelerators kept >= 90 % busy"};
  app.require_subcommand(1);
  Config config;
  config.endpoint = env_or("SILO_ENDPOINT", "http://127.0.0.1:8080");
  std::string path = "direct", order = "random", size = "1MiB", size_max, duration;
  bool json = false, no_progress = false;

  auto common = [&](CLI::App* sub) {
    sub->add_option("--endpoint", config.endpoint, "A proxy of the cluster ($SILO_ENDPOINT)");
    sub->add_option("--ca-bundle", config.credentials.ca_bundle,
                    "PEM CAs for https:// endpoints ($SILO_CA_BUNDLE; default: the system's)");
    sub->add_option("--path", path, "direct | gateway | url | file")
        ->check(CLI::IsMember({"direct", "gateway", "url", "file"}));
    sub->add_option("--url", config.url, "url path: base URL, objects are URL/NAME");
    sub->add_option("--dir", config.dir, "file path: directory holding the objects; put: PUT its files (names = paths)");
    sub->add_option("--bucket", config.bucket, "Bucket");
    sub->add_option("--prefix", config.prefix, "Object names start with this");
    sub->add_option("--objects", config.objects, "Work on N objects named PREFIX + format(index) (default: list them)");
    sub->add_option("--name-format", config.name_format, "fmt format of the index (default {:08})");
    sub->add_option("--concurrency,-c", config.concurrency, "Requests in flight")->check(CLI::Range(1, 100000));
    sub->add_option("--threads", config.threads, "io threads (default: cores)")->check(CLI::Range(0, 1024));
    sub->add_option("--duration,-d", duration, "Run this long (10s, 2m)");
    sub->add_option("--seed", config.seed, "Random seed");
    sub->add_option("--watch-pid", config.watch_pids, "Report CPU and peak RSS of this server process (repeatable)");
    sub->add_flag("--json", json, "Print one JSON object of results");
    sub->add_flag("--no-progress", no_progress, "No progress lines on stderr");
  };
  auto* get = app.add_subcommand("get", "GET objects");
  auto* put = app.add_subcommand("put", "PUT objects");
  auto* mixed = app.add_subcommand("mixed", "GET and PUT objects");
  auto* list = app.add_subcommand("list", "List the bucket, page after page");
  auto* accel = app.add_subcommand("accel", "Simulated accelerators (MLPerf Storage rule)");
  auto* batch = app.add_subcommand("batch", "POST /v1/batch of random archive members (one op = one batch)");
  for (auto* sub : {get, batch}) {
    sub->add_option("--members", config.members, "Read archive members: N per object (?archpath=)");
    sub->add_option("--member-format", config.member_format, "fmt format of the member index (default {:06})");
  }
  batch->add_option("--batch-entries", config.batch_entries, "Entries per batch (default 1000)")
      ->check(CLI::Range(1, 100000));
  for (auto* sub : {get, put, mixed, list, batch}) {
    common(sub);
    sub->add_option("--count,-n", config.count, "Run this many operations (list: full listings)");
  }
  for (auto* sub : {get, put, mixed}) {
    sub->add_option("--order", order, "random | sequential")->check(CLI::IsMember({"random", "sequential"}));
    sub->add_option("--epochs", config.epochs, "Read every object this many times (each pass in its own order)");
  }
  for (auto* sub : {put, mixed}) {
    sub->add_option("--size", size, "Object size, or the smallest with --size-max (default 1MiB)");
    sub->add_option("--size-max", size_max, "Sizes uniform in [--size, --size-max]");
  }
  mixed->add_option("--put-fraction", config.put_fraction, "Share of PUTs (default 0.2)")->check(CLI::Range(0.0, 1.0));
  list->add_option("--page-size", config.page_size, "Keys per page (default 1000)")->check(CLI::Range(1, 100000));
  common(accel);
  accel->add_option("--profile", config.profile, "resnet50 | unet3d (MLPerf Storage H100 workloads)");
  accel->add_option("--accelerators", config.accelerators, "Run with N (default: search for the most kept busy)");
  accel->add_option("--target-utilization", config.target_utilization, "Default 0.9")->check(CLI::Range(0.01, 1.0));
  accel->add_option("--sample-bytes", config.sample_bytes, "Override the profile's sample size");
  accel->add_option("--batch-size", config.batch_size, "Override the profile's batch size");
  accel->add_option("--compute-ms", config.compute_s, "Override the profile's compute time per batch (ms)");
  accel->add_option("--readers", config.readers_per_accelerator, "Reader coroutines per accelerator");
  accel->add_option("--prefetch-batches", config.prefetch_batches, "Batches a data loader reads ahead (default 2)");

  CLI11_PARSE(app, argc, argv);
  if (get->parsed()) config.mode = Mode::kGet;
  if (put->parsed()) config.mode = Mode::kPut;
  if (mixed->parsed()) config.mode = Mode::kMixed;
  if (list->parsed()) config.mode = Mode::kList;
  if (batch->parsed()) config.mode = Mode::kBatch;
  if (accel->parsed()) {
    config.mode = Mode::kAccel;
    config.compute_s /= 1000;  // given in ms
  }
  config.path = path == "gateway" ? Path::kGateway : path == "url" ? Path::kUrl : path == "file" ? Path::kFile : Path::kDirect;
  config.random_order = order == "random";
  config.progress = !no_progress;
  silo::client::fill_credentials(config.credentials);
  if (!duration.empty()) {
    auto d = parse_duration(duration);
    if (!d) return fail(d.error());
    config.duration_s = *d;
  }
  auto min_size = parse_size(size);
  if (!min_size) return fail(min_size.error());
  config.size_min = config.size_max = *min_size;
  if (!size_max.empty()) {
    auto max_size = parse_size(size_max);
    if (!max_size) return fail(max_size.error());
    if (*max_size < config.size_min) return fail(Status::invalid_argument("--size-max is below --size"));
    config.size_max = *max_size;
  }

  // Arguments that do not fit together.
  if (config.path == Path::kUrl && config.url.empty()) return fail(Status::invalid_argument("--path url needs --url"));
  if (config.path == Path::kFile && config.dir.empty()) return fail(Status::invalid_argument("--path file needs --dir"));
  if ((config.path == Path::kDirect || config.path == Path::kGateway) && config.bucket.empty()) {
    return fail(Status::invalid_argument("--bucket is required with --path {}", path));
  }
  if ((config.mode == Mode::kPut || config.mode == Mode::kMixed) &&
      (config.path == Path::kUrl || config.path == Path::kFile)) {
    return fail(Status::invalid_argument("{} needs --path direct or gateway", config.mode == Mode::kPut ? "put" : "mixed"));
  }
  if (config.mode == Mode::kPut && config.objects == 0 && config.dir.empty()) {
    return fail(Status::invalid_argument("put needs --objects N (names PREFIX + format(index)) or --dir DIR (its files)"));
  }
  if (config.mode == Mode::kList && (config.path == Path::kUrl || config.path == Path::kFile)) {
    return fail(Status::invalid_argument("list needs --path direct (native listing) or gateway (S3 ListObjectsV2)"));
  }
  if (config.mode == Mode::kBatch && (config.members == 0 || config.path != Path::kGateway)) {
    return fail(Status::invalid_argument("batch needs --members N and --path gateway (batches go to --endpoint)"));
  }
  if (config.duration_s > 0 && (config.count > 0 || config.epochs > 0)) {
    return fail(Status::invalid_argument("give one of --duration, --count and --epochs"));
  }

  if (config.mode == Mode::kAccel) {
    auto report = silo::bench::run_accel(config);
    if (!report) return fail(report.error());
    silo::bench::print(config, *report, json);
    return 0;
  }
  silo::bench::install_stop_handler();
  auto report = silo::bench::run_load(config);
  if (!report) return fail(report.error());
  silo::bench::print(config, *report, json);
  return report->errors > 0 ? 1 : 0;
}
