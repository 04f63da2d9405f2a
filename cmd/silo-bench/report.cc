// Prints results: a short human table, or (--json) one JSON object (CONTRACT.md).
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "bench.h"

namespace silo::bench {
namespace {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += c;
    }
  }
  return out + "\"";
}

double ms(uint64_t nanos) { return static_cast<double>(nanos) / 1e6; }

std::string latency_json(const stats::LatencyHistogram& h) {
  return fmt::format(
      R"({{"count":{},"mean":{:.3f},"min":{:.3f},"p50":{:.3f},"p90":{:.3f},"p99":{:.3f},"p999":{:.3f},"max":{:.3f}}})",
      h.count(), h.mean() / 1e6, ms(h.min()), ms(h.percentile(0.5)), ms(h.percentile(0.9)), ms(h.percentile(0.99)),
      ms(h.percentile(0.999)), ms(h.max()));
}

std::string usage_json(const ServerUsage& usage, uint64_t bytes) {
  const double gb = static_cast<double>(bytes) / 1e9;
  return fmt::format(R"({{"cpu_seconds":{:.3f},"cpu_seconds_per_gb":{:.4f},"peak_rss_mb":{:.1f}}})", usage.cpu_s,
                     gb > 0 ? usage.cpu_s / gb : 0.0, static_cast<double>(usage.peak_rss_bytes) / 1e6);
}

const char* path_name(Path path) {
  switch (path) {
    case Path::kDirect: return "direct";
    case Path::kGateway: return "gateway";
    case Path::kUrl: return "url";
    case Path::kFile: return "file";
  }
  return "?";
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kGet: return "get";
    case Mode::kPut: return "put";
    case Mode::kMixed: return "mixed";
    case Mode::kList: return "list";
    case Mode::kAccel: return "accel";
    case Mode::kBatch: return "batch";
  }
  return "?";
}

}  // namespace

void print(const Config& config, const Report& r, bool json) {
  const double seconds = r.seconds > 0 ? r.seconds : 1e-9;
  const double ok_ops = static_cast<double>(r.ops - r.errors);
  if (json) {
    std::string errors;
    for (const auto& [kind, n] : r.error_kinds) errors += fmt::format("{}{}:{}", errors.empty() ? "" : ",", json_string(kind), n);
    std::printf("%s\n",
                fmt::format(R"({{"mode":"{}","path":"{}","concurrency":{},"seconds":{:.3f},"ops":{},"errors":{},)"
                            R"("error_kinds":{{{}}},"first_error":{},"bytes":{},"keys":{},"ops_per_s":{:.1f},)"
                            R"("mb_per_s":{:.2f},"gb_per_s":{:.4f},"keys_per_s":{:.1f},"latency_ms":{},"ttfb_ms":{},"server":{}}})",
                            mode_name(config.mode), path_name(config.path), config.concurrency, r.seconds, r.ops,
                            r.errors, errors, json_string(r.first_error), r.bytes, r.keys, ok_ops / seconds,
                            static_cast<double>(r.bytes) / seconds / 1e6, static_cast<double>(r.bytes) / seconds / 1e9,
                            static_cast<double>(r.keys) / seconds, latency_json(r.latency), latency_json(r.ttfb),
                            usage_json(r.server, r.bytes))
                    .c_str());
    return;
  }
  std::printf("%s %s, %d connections, %.2f s\n", mode_name(config.mode), path_name(config.path), config.concurrency,
              r.seconds);
  std::printf("  ops       %llu ok, %llu errors  (%.1f ops/s)\n", static_cast<unsigned long long>(r.ops - r.errors),
              static_cast<unsigned long long>(r.errors), ok_ops / seconds);
  std::printf("  bytes     %.1f MB  (%.1f MB/s)\n", static_cast<double>(r.bytes) / 1e6,
              static_cast<double>(r.bytes) / seconds / 1e6);
  if (config.mode == Mode::kBatch) {
    std::printf("  samples   %llu  (%.0f samples/s)\n", static_cast<unsigned long long>(r.keys),
                static_cast<double>(r.keys) / seconds);
  }
  if (config.mode == Mode::kList) {
    std::printf("  keys      %llu  (%.0f keys/s)\n", static_cast<unsigned long long>(r.keys),
                static_cast<double>(r.keys) / seconds);
  }
  for (const auto& [name, h] : {std::pair{"latency", &r.latency}, std::pair{"ttfb", &r.ttfb}}) {
    std::printf("  %-8s  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", name, ms(h->percentile(0.5)),
                ms(h->percentile(0.9)), ms(h->percentile(0.99)), ms(h->percentile(0.999)), ms(h->max()));
  }
  if (!config.watch_pids.empty()) {
    const double gb = static_cast<double>(r.bytes) / 1e9;
    std::printf("  server    %.2f CPU s (%.3f s/GB), peak RSS %.1f MB\n", r.server.cpu_s,
                gb > 0 ? r.server.cpu_s / gb : 0.0, static_cast<double>(r.server.peak_rss_bytes) / 1e6);
  }
  for (const auto& [kind, n] : r.error_kinds) {
    std::printf("  error     %s x %llu\n", kind.c_str(), static_cast<unsigned long long>(n));
  }
  if (!r.first_error.empty()) std::printf("  first     %s\n", r.first_error.c_str());
}

void print(const Config& config, const AccelReport& r, bool json) {
  if (json) {
    std::string trials;
    for (const auto& t : r.trials) {
      trials += fmt::format(R"({}{{"accelerators":{},"utilization":{:.4f},"seconds":{:.2f},"batches":{},"bytes":{},)"
                            R"("mb_per_s":{:.2f},"errors":{},"first_error":{}}})",
                            trials.empty() ? "" : ",", t.accelerators, t.utilization, t.seconds, t.batches, t.bytes,
                            static_cast<double>(t.bytes) / t.seconds / 1e6, t.errors, json_string(t.first_error));
    }
    uint64_t bytes = 0;
    for (const auto& t : r.trials) bytes += t.bytes;
    std::printf("%s\n",
                fmt::format(R"({{"mode":"accel","path":"{}","profile":"{}","sample_bytes":{},"batch_size":{},)"
                            R"("compute_s":{:.4f},"target_utilization":{:.2f},"max_accelerators":{},"trials":[{}],"server":{}}})",
                            path_name(config.path), r.profile, r.sample_bytes, r.batch_size, r.compute_s,
                            config.target_utilization, r.max_accelerators, trials, usage_json(r.server, bytes))
                    .c_str());
    return;
  }
  std::printf("accel %s %s: %llu B samples, batch %d, %.3f s compute per batch\n", r.profile.c_str(),
              path_name(config.path), static_cast<unsigned long long>(r.sample_bytes), r.batch_size, r.compute_s);
  for (const auto& t : r.trials) {
    std::printf("  %4d accelerators: utilization %5.1f %%  %8.1f MB/s  %llu batches  %llu errors\n", t.accelerators,
                100 * t.utilization, static_cast<double>(t.bytes) / t.seconds / 1e6,
                static_cast<unsigned long long>(t.batches), static_cast<unsigned long long>(t.errors));
  }
  std::printf("  most accelerators kept >= %.0f %% busy: %d\n", 100 * config.target_utilization, r.max_accelerators);
}

}  // namespace silo::bench
