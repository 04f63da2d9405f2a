#pragma once

// What every `silo` command shares: the global flags, the client made from them, the
// exit codes, object addresses, and the helpers that print human or JSON output.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "client/client.h"

namespace silo::cli {

// Exit codes scripts can rely on (docs/cli.md "Exit codes").
enum class ExitCode : int {
  kOk = 0,
  kError = 1,        // the server refused or failed, or anything else
  kUsage = 2,        // bad arguments or flags, or a request the server calls invalid
  kNotFound = 3,     // no such bucket, object, job, node or mountpath
  kAuth = 4,         // bad credentials or not allowed
  kUnreachable = 5,  // nothing answers at the endpoint
  kUnsupported = 6,  // the command needs a server feature this server does not have
};

// The global flags, after the config file and the environment filled what they left.
struct GlobalOptions {
  std::string endpoint;
  std::string access_key;
  std::string secret_key;
  std::string config_path;  // --config; default ~/.config/silo/config.json
  std::string ca_bundle;    // --ca-bundle; default SILO_CA_BUNDLE, else the system's CAs
  bool is_json = false;     // --json
  bool is_quiet = false;    // --quiet: no progress, no per-object lines
  bool is_direct = false;   // --direct or SILO_DIRECT=1: object data straight to/from the owner target
};

// `bucket/name`, `s3://bucket/name` or `gs://bucket/name` (the Silo bucket of that name).
struct ObjectAddress {
  std::string bucket;
  std::string name;  // "" when the address names only the bucket (or `bucket/`)
};
// kInvalidArgument naming the expected form.
Result<ObjectAddress> parse_address(std::string_view text);

// Owns the client for the whole run (one process, one command). Used from the main
// thread; client() may be used from worker threads once made.
class Context {
 public:
  GlobalOptions options;

  // Resolves endpoint and keys (flags, then SILO_* variables, then the config file, then
  // the defaults) and makes the client on first use.
  Result<client::Client*> client();
  // The endpoint in use (after resolution).
  const std::string& endpoint() const { return endpoint_; }

  // Whether progress bars may be drawn (on stderr): stdout and stderr are terminals and
  // neither --json nor --quiet was given.
  bool shows_progress() const;

  // The action of the command the user named; set by its CLI11 callback, run by main().
  std::function<Status()> action;

 private:
  Status resolve();
  std::string endpoint_;
  std::unique_ptr<client::Client> client_;
};

// The exit code a failure stands for.
ExitCode exit_code_of(const Status& status);
// Prints `status` to stderr (as {"error": ...} JSON under --json), with a hint that names
// the fix, and returns its exit code. Unavailable errors are checked against the
// endpoint to tell "nothing answers" from "the server answered 503".
int report_error(Context& context, const Status& status);

// Output helpers.
std::string json_string(std::string_view text);  // quoted and escaped
std::string human_bytes(uint64_t bytes);         // "1.5 MiB"
std::string human_time(int64_t unix_nanos);      // "2024-05-01 12:00:00" (UTC)
// Parses "123", "4KiB", "10MB", "1.5GiB" into bytes; kInvalidArgument otherwise.
Result<uint64_t> parse_size(std::string_view text);
// Writes the bytes `fetch` hands its sink to `path` through `path`.silo-partial, renamed
// once fetch succeeded: a failed download leaves no file, whole or partial.
Status write_whole_file(const std::string& path, const std::function<Status(const client::SinkFn& sink)>& fetch);
// Runs `work(i)` for i in [0, count) on `workers` threads.
void run_parallel(size_t count, int workers, const std::function<void(size_t)>& work);

// A simple text table: columns padded to their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size() - 1; }
  void print() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace silo::cli
