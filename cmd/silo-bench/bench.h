#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "client/client.h"
#include "stats/latency.h"

namespace silo::bench {

// SIGINT or SIGTERM asked the run to end early: it stops handing out requests, lets the
// ones in flight finish, and reports what it measured (a reader stopped by a script).
bool stop_requested();
void install_stop_handler();

enum class Mode { kGet, kPut, kMixed, kList, kAccel, kBatch };
// How requests reach the data: to the owner target (direct), S3 through a proxy
// (gateway), plain GETs of `url`/NAME (a reference server such as nginx), or local files.
enum class Path { kDirect, kGateway, kUrl, kFile };

struct Config {
  Mode mode = Mode::kGet;
  Path path = Path::kDirect;
  std::string endpoint;      // a proxy of the cluster (direct, gateway, and setup calls)
  std::string url;           // kUrl: "http://host:port/dir"
  std::string dir;           // kFile: directory holding the objects
  std::string bucket;
  std::string prefix;        // names are prefix + format(index), or listed under it
  std::string name_format;   // fmt format of the index, e.g. "shard-{:06}.tar"
  size_t objects = 0;        // 0: list the bucket (get/accel on direct/gateway)
  // Archive members (docs/shards.md): with members > 0 a GET reads member
  // format(member_format, j) of the object (?archpath=), j uniform in [0, members).
  size_t members = 0;
  std::string member_format = "{:06}";
  size_t batch_entries = 1000;  // batch: entries (random object, random member) per POST /v1/batch
  uint64_t size_min = 1 << 20, size_max = 1 << 20;  // put sizes, uniform in [min, max]
  bool random_order = true;
  int concurrency = 16;
  int threads = 0;           // io threads; 0: one per core
  double duration_s = 0;     // 0: run `count` ops (or `epochs` passes)
  uint64_t count = 0;
  int epochs = 0;
  double put_fraction = 0.2;  // mixed
  size_t page_size = 1000;    // list
  uint64_t seed = 1;
  bool progress = true;
  std::vector<int> watch_pids;  // server processes whose CPU and RSS are reported
  client::ClientOptions credentials;

  // Simulated accelerators (mode kAccel).
  std::string profile = "resnet50";
  int accelerators = 0;       // 0: search for the most kept at >= target_utilization
  double target_utilization = 0.9;
  uint64_t sample_bytes = 0;  // 0: the profile's
  int batch_size = 0;
  double compute_s = 0;
  int readers_per_accelerator = 0;  // 0: the profile's
  int prefetch_batches = 2;
};

// What the server processes in `watch_pids` spent during a run.
struct ServerUsage {
  double cpu_s = 0;         // utime + stime of all watched processes
  uint64_t peak_rss_bytes = 0;  // largest sum of VmRSS seen (sampled every 100 ms)
};

struct Report {
  std::string mode, path;
  double seconds = 0;
  uint64_t ops = 0, errors = 0, bytes = 0, keys = 0;
  std::map<std::string, uint64_t> error_kinds;  // "HTTP 503", "kUnavailable", ...
  std::string first_error;
  stats::LatencyHistogram latency, ttfb;
  ServerUsage server;
};

struct AccelTrial {
  int accelerators = 0;
  double utilization = 0;    // compute time / (accelerators x wall time)
  double seconds = 0;
  uint64_t batches = 0, bytes = 0, errors = 0;
  std::string first_error;
};

struct AccelReport {
  std::string profile, path;
  uint64_t sample_bytes = 0;
  int batch_size = 0;
  double compute_s = 0;
  std::vector<AccelTrial> trials;
  int max_accelerators = 0;  // most that kept >= target utilization
  ServerUsage server;
};

// Runs get / put / mixed / list.
Result<Report> run_load(const Config& config);
// Runs the simulated accelerators.
Result<AccelReport> run_accel(const Config& config);

void print(const Config& config, const Report& report, bool json);
void print(const Config& config, const AccelReport& report, bool json);

// ---- shared by load.cc and accel.cc ----

// The object names a run works on: generated from prefix/format, listed from the bucket
// (direct, gateway) or from `dir` (file).
Result<std::vector<std::string>> object_names(const Config& config);
// Samples CPU time and RSS of `pids` from /proc.
class UsageProbe {
 public:
  explicit UsageProbe(std::vector<int> pids);
  void sample();  // records the current RSS sum if it is a new peak
  ServerUsage finish();

 private:
  std::vector<int> pids_;
  double start_cpu_s_ = 0;
  uint64_t peak_rss_ = 0;
};

}  // namespace silo::bench
