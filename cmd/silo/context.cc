#include "context.h"

#include "wire/settings_json.h"

#include <atomic>
#include <thread>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace silo::cli {
namespace {

constexpr std::string_view kDefaultEndpoint = "http://127.0.0.1:8080";

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string default_config_path() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/silo/config.json";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.config/silo/config.json";
  }
  return {};
}

Result<client::Settings> read_settings(const std::string& path, bool must_exist) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    if (must_exist) return Status::invalid_argument("config file {} does not exist", path);
    return client::Settings{};
  }
  std::ifstream in(path);
  if (!in) return Status::invalid_argument("config file {} cannot be read", path);
  std::stringstream text;
  text << in.rdbuf();
  auto settings = wire::parse_client_settings_json(text.str());
  if (!settings) {
    return Status::invalid_argument(
        "config file {}: {} (expected {{\"endpoint\": \"http://host:port\", "
        "\"access_key\": \"...\", \"secret_key\": \"...\"}})",
        path, settings.error().message());
  }
  return settings;
}

// The first non-empty of `candidates`.
std::string first_set(std::initializer_list<std::string> candidates) {
  for (const auto& c : candidates) {
    if (!c.empty()) return c;
  }
  return {};
}

// Whether anything answers HTTP at `endpoint` (any status).
bool is_answering(client::Client& c) {
  return c.request(http::Method::kGet, "/v1/health").has_value();
}

std::string hint_for(const Context& context, const Status& status, ExitCode code) {
  switch (code) {
    case ExitCode::kUnreachable:
      return fmt::format(
          "nothing answers at {}: is the cluster running (deploy/local/cluster.sh up)? Set the "
          "endpoint with --endpoint or SILO_ENDPOINT",
          context.endpoint());
    case ExitCode::kAuth:
      // A bucket's owner or policy refused a user the cluster knows (docs/security.md).
      if (status.message().find("Access Denied") != std::string::npos) {
        return "these keys may not do this to the bucket: its owner and admins may, and what its "
               "policy grants ('silo bucket policy show BUCKET' as the owner)";
      }
      return "check the keys: --access-key/--secret-key, SILO_ACCESS_KEY/SILO_SECRET_KEY or the "
             "config file; admin-only commands need the cluster's admin keys";
    case ExitCode::kNotFound:
      return "check the name: 'silo bucket ls', 'silo ls BUCKET', 'silo job ls' and 'silo cluster "
             "show' list what exists";
    case ExitCode::kUsage:
      return "see 'silo COMMAND --help' for the arguments and an example";
    case ExitCode::kUnsupported:
      return status.reason().empty() ? "upgrade the server, or use the native API directly"
                                     : status.reason();
    default:
      if (status.code() == Code::kAlreadyExists)
        return "pick another name, or use the existing one";
      if (status.message().find("TLS certificate") != std::string::npos) {
        return "trust the cluster's CA: --ca-bundle FILE or SILO_CA_BUNDLE (deploy/local/cluster.sh up --tls "
               "writes it to DIR/tls/ca.pem)";
      }
      return "";
  }
}

}  // namespace

Result<ObjectAddress> parse_address(std::string_view text) {
  std::string_view rest = text;
  for (const std::string_view scheme : {"s3://", "gs://", "ais://", "silo://"}) {
    if (rest.substr(0, scheme.size()) == scheme) {
      rest.remove_prefix(scheme.size());
      break;
    }
  }
  const size_t slash = rest.find('/');
  ObjectAddress address;
  address.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) address.name = std::string(rest.substr(slash + 1));
  if (address.bucket.empty() || address.bucket.find(':') != std::string::npos) {
    return Status::invalid_argument(
        "'{}' is not an object address: write BUCKET[/NAME], s3://BUCKET[/NAME] or "
        "gs://BUCKET[/NAME]",
        text);
  }
  return address;
}

Status Context::resolve() {
  const bool names_config = !options.config_path.empty();
  ASSIGN_OR_RETURN(
      const client::Settings file,
      read_settings(names_config ? options.config_path : default_config_path(), names_config));
  endpoint_ = first_set({options.endpoint, env_or_empty("SILO_ENDPOINT"), file.endpoint,
                         std::string(kDefaultEndpoint)});
  options.access_key =
      first_set({options.access_key, env_or_empty("SILO_ACCESS_KEY"), file.access_key});
  options.secret_key =
      first_set({options.secret_key, env_or_empty("SILO_SECRET_KEY"), file.secret_key});
  if (endpoint_.find("://") == std::string::npos) endpoint_ = "http://" + endpoint_;
  if (const std::string direct = env_or_empty("SILO_DIRECT"); !direct.empty()) {
    if (direct != "0" && direct != "1") return Status::invalid_argument("SILO_DIRECT is '{}'; use 1 or 0", direct);
    options.is_direct = options.is_direct || direct == "1";
  }
  return Status::ok();
}

Result<client::Client*> Context::client() {
  if (client_) return client_.get();
  RETURN_IF_ERROR(resolve());
  client::ClientOptions client_options;
  client_options.access_key = options.access_key;
  client_options.secret_key = options.secret_key;
  // Large objects and long job waits: generous, but a dead server still fails the call.
  client_options.io_timeout = std::chrono::milliseconds(120000);
  client_options.direct = options.is_direct;
  client_options.ca_bundle = options.ca_bundle;
  auto made = client::Client::create(endpoint_, client_options);
  if (!made) {
    return Status::invalid_argument(
        "endpoint '{}' is not a usable URL ({}): write http://HOST:PORT or https://HOST:PORT", endpoint_,
        made.error().message());
  }
  client_ = std::move(*made);
  return client_.get();
}

bool Context::shows_progress() const {
  return !options.is_json && !options.is_quiet && ::isatty(STDOUT_FILENO) &&
         ::isatty(STDERR_FILENO);
}

ExitCode exit_code_of(const Status& status) {
  switch (status.code()) {
    case Code::kOk:
      return ExitCode::kOk;
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      return ExitCode::kUsage;
    case Code::kNotFound:
      return ExitCode::kNotFound;
    case Code::kUnauthenticated:
    case Code::kPermissionDenied:
      return ExitCode::kAuth;
    case Code::kUnimplemented:
      return ExitCode::kUnsupported;
    default:
      return ExitCode::kError;
  }
}

int report_error(Context& context, const Status& status) {
  ExitCode code = exit_code_of(status);
  if (status.code() == Code::kUnavailable || status.code() == Code::kDeadlineExceeded) {
    auto c = context.client();
    if (c && !is_answering(**c)) code = ExitCode::kUnreachable;
  }
  const std::string hint = hint_for(context, status, code);
  if (context.options.is_json) {
    std::fprintf(stderr, "{\"error\":{\"code\":%s,\"message\":%s,\"hint\":%s,\"exit_code\":%d}}\n",
                 json_string(code_name(status.code())).c_str(),
                 json_string(status.message()).c_str(), json_string(hint).c_str(),
                 static_cast<int>(code));
  } else {
    std::fprintf(stderr, "silo: error: %s\n", status.message().c_str());
    if (!hint.empty()) std::fprintf(stderr, "  hint: %s\n", hint.c_str());
  }
  return static_cast<int>(code);
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string human_bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string human_time(int64_t unix_nanos) {
  if (unix_nanos <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_nanos / 1000000000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

Result<uint64_t> parse_size(std::string_view text) {
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || number < 0) {
    return Status::invalid_argument("'{}' is not a size (write 1048576, 64KiB, 10MB, 1.5GiB)",
                                    text);
  }
  std::string unit(end, text.data() + text.size());
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::pair<std::string_view, double> kUnits[] = {{"", 1},
                                                               {"b", 1},
                                                               {"k", 1e3},
                                                               {"kb", 1e3},
                                                               {"kib", 1024.0},
                                                               {"m", 1e6},
                                                               {"mb", 1e6},
                                                               {"mib", 1048576.0},
                                                               {"g", 1e9},
                                                               {"gb", 1e9},
                                                               {"gib", 1073741824.0},
                                                               {"t", 1e12},
                                                               {"tb", 1e12},
                                                               {"tib", 1099511627776.0}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) return static_cast<uint64_t>(std::llround(number * factor));
  }
  return Status::invalid_argument(
      "'{}' has an unknown size unit (write B, KB, KiB, MB, MiB, GB, GiB)", text);
}

void Table::print() const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

Status write_whole_file(const std::string& path, const std::function<Status(const client::SinkFn& sink)>& fetch) {
  const std::string partial = path + ".silo-partial";
  std::FILE* out = std::fopen(partial.c_str(), "wb");
  if (out == nullptr) return Status::from_errno(errno, "open " + partial);
  const Status got = fetch([out](std::span<const char> data) -> Status {
    if (std::fwrite(data.data(), 1, data.size(), out) != data.size()) return Status::from_errno(errno, "write");
    return Status::ok();
  });
  const bool is_closed = std::fclose(out) == 0;
  const int close_errno = errno;
  std::error_code ec;
  if (!got.is_ok() || !is_closed) {
    std::filesystem::remove(partial, ec);
    if (!got.is_ok()) return got;
    return Status::from_errno(close_errno, "close " + partial);
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) return Status::invalid_argument("rename {} to {}: {}", partial, path, ec.message());
  return Status::ok();
}

void run_parallel(size_t count, int workers, const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  auto loop = [&] {
    for (size_t i = next++; i < count; i = next++) work(i);
  };
  const int threads =
      static_cast<int>(std::min<size_t>(count, static_cast<size_t>(std::max(1, workers))));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
}

}  // namespace silo::cli
