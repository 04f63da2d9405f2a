#include "testing/local_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

namespace silo::testing {
namespace {

// Whether `node`'s last pid still runs that node (its command line names the node's
// config): a node that died leaves a pid that may name another process by now (pids wrap,
// and parallel tests start many), which must never be killed in its place.
bool runs_node(const NodeInfo& node) {
  if (!is_running(node.pid)) return false;
  std::ifstream in("/proc/" + std::to_string(node.pid) + "/cmdline");
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // cluster.sh launches nodes by the canonical path of their config.
  std::error_code ec;
  const std::filesystem::path config = std::filesystem::weakly_canonical(node.dir + "/config.json", ec);
  return !ec && cmdline.find(config.string()) != std::string::npos;
}

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kUpTimeout{90000};
constexpr milliseconds kNodeTimeout{60000};
constexpr size_t kOutputTail = 3000;

#ifndef SILO_BIN_DIR
#error "SILO_BIN_DIR must be defined by the build (the directory holding silod)"
#endif
#ifndef SILO_CLUSTER_SCRIPT
#error "SILO_CLUSTER_SCRIPT must be defined by the build (deploy/local/cluster.sh)"
#endif

std::string bin_dir() {
  if (const char* dir = std::getenv("SILO_TEST_BIN_DIR"); dir != nullptr && *dir != '\0') return dir;
  return SILO_BIN_DIR;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string env_value(const EnvVars& env, std::string_view name, std::string_view otherwise) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return std::string(otherwise);
}

bool is_truthy(const char* v) { return v != nullptr && *v != '\0' && std::string_view(v) != "0"; }

template <typename T>
T to_number(std::string_view text) {
  T value{};
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::vector<std::string> ids_with_prefix(const std::string& dir, char prefix) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir + "/nodes", ec)) {
    const std::string id = entry.path().filename().string();
    if (prefix == '\0' || id.front() == prefix) ids.push_back(id);
  }
  // p1 < p2 < p10 < t1 (cluster.sh sorts with sort -V).
  std::sort(ids.begin(), ids.end(), [](const std::string& a, const std::string& b) {
    if (a.front() != b.front()) return a.front() < b.front();
    return to_number<int>(std::string_view(a).substr(1)) < to_number<int>(std::string_view(b).substr(1));
  });
  return ids;
}

}  // namespace

std::string json_field(std::string_view text, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  size_t pos = text.find(quoted);
  if (pos == std::string_view::npos) return "";
  pos = text.find(':', pos + quoted.size());
  if (pos == std::string_view::npos) return "";
  pos = text.find_first_not_of(" \t\r\n", pos + 1);
  if (pos == std::string_view::npos) return "";
  if (text[pos] == '"') {
    const size_t end = text.find('"', pos + 1);
    return std::string(text.substr(pos + 1, end == std::string_view::npos ? end : end - pos - 1));
  }
  const size_t end = text.find_first_of(",}\r\n ", pos);
  return std::string(text.substr(pos, end == std::string_view::npos ? end : end - pos));
}

Status wait_until(const std::function<bool()>& predicate, milliseconds timeout, std::string_view what,
                  milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (predicate()) return Status::ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::deadline_exceeded("{} did not happen within {} ms", what, timeout.count());
    }
    std::this_thread::sleep_for(poll);
  }
}

LocalCluster::LocalCluster(ClusterOptions options, TempDir dir)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      access_key_(env_value(options_.env, "SILO_ACCESS_KEY", kTestAccessKey)),
      secret_key_(env_value(options_.env, "SILO_SECRET_KEY", kTestSecretKey)) {}

Result<std::unique_ptr<LocalCluster>> LocalCluster::start(ClusterOptions options) {
  ASSIGN_OR_RETURN(TempDir dir, TempDir::create("silo-it"));
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(std::move(options), std::move(dir)));
  const ClusterOptions& o = cluster->options_;
  std::vector<std::string> args = {"up", "--proxies", std::to_string(o.proxies), "--targets", std::to_string(o.targets),
                                   "--mountpaths", std::to_string(o.mountpaths), "--base-port", "0"};
  if (o.ha) args.push_back("--ha");
  if (o.tls) args.push_back("--tls");
  if (o.netns) args.push_back("--netns");
  Status up = cluster->script(std::move(args), kUpTimeout);
  if (!up.is_ok()) {
    cluster->dir_.keep();  // the test has not failed yet, but its logs are needed
    return up.annotate("cluster kept in {}", cluster->dir());
  }
  ASSIGN_OR_RETURN(const std::string primary_url, read_file(cluster->dir() + "/primary_url"));
  cluster->endpoint_ = trim(primary_url);
  ASSIGN_OR_RETURN(cluster->client_, cluster->new_client());
  return cluster;
}

LocalCluster::~LocalCluster() {
  client_.reset();
  if (const Status s = script({"down"}, kNodeTimeout); !s.is_ok()) {
    std::cerr << "[LocalCluster] down failed: " << s << '\n';
  }
  // Whatever down left running (it should be nothing) must not outlive the test.
  for (const auto& id : node_ids()) {
    if (auto info = node(id); info && runs_node(*info)) ::kill(info->pid, SIGKILL);
  }
  if (::testing::Test::HasFailure() || is_truthy(std::getenv("SILO_KEEP_CLUSTER"))) {
    dir_.keep();
    std::cerr << "[LocalCluster] cluster kept in " << dir() << " (logs: " << dir()
              << "/nodes/*/silod.log, launcher output: " << dir() << "/cluster.sh.log)" << std::endl;
  }
}

Status LocalCluster::script(std::vector<std::string> args, milliseconds timeout) {
  CommandOptions command;
  command.unset_prefixes = {"SILO_", "SILOD_"};  // never the caller's settings
  command.env = {{"SILO_ACCESS_KEY", access_key_}, {"SILO_SECRET_KEY", secret_key_}};
  for (const auto& variable : options_.env) command.env.push_back(variable);
  command.env.emplace_back("SILO_BIN_DIR", bin_dir());
  command.env.emplace_back("SILO_READY_TIMEOUT", "45");
  command.output_path = dir() + "/cluster.sh.log";
  command.timeout = timeout;
  std::vector<std::string> argv = {"bash", SILO_CLUSTER_SCRIPT};
  for (auto& a : args) argv.push_back(std::move(a));
  argv.push_back("--dir");
  argv.push_back(dir());

  std::error_code ec;
  const uintmax_t before = fs::exists(command.output_path, ec) ? fs::file_size(command.output_path, ec) : 0;
  auto exit_code = run_command(argv, command);
  std::string tail;
  if (auto out = read_file(command.output_path)) {
    tail = out->substr(std::min<size_t>(before, out->size()));
    if (tail.size() > kOutputTail) tail = "..." + tail.substr(tail.size() - kOutputTail);
  }
  const std::string what = "cluster.sh " + argv[2];
  if (!exit_code) return Status(exit_code.error().code(), what + ": " + exit_code.error().message() + "\n" + tail);
  if (*exit_code != 0) return Status::internal("{} exited with {}:\n{}", what, *exit_code, tail);
  return Status::ok();
}

std::vector<std::string> LocalCluster::node_ids() const { return ids_with_prefix(dir(), '\0'); }
std::vector<std::string> LocalCluster::proxy_ids() const { return ids_with_prefix(dir(), 'p'); }
std::vector<std::string> LocalCluster::target_ids() const { return ids_with_prefix(dir(), 't'); }

Result<NodeInfo> LocalCluster::node(std::string_view id) const {
  NodeInfo info;
  info.id = std::string(id);
  info.dir = dir() + "/nodes/" + info.id;
  if (!fs::is_directory(info.dir)) return Status::not_found("no node {} in {}", id, dir());
  ASSIGN_OR_RETURN(const std::string role, read_file(info.dir + "/role"));
  info.role = trim(role);
  ASSIGN_OR_RETURN(const std::string config, read_file(info.dir + "/config.json"));
  info.port = to_number<uint16_t>(json_field(config, "port"));
  const Result<std::string> host = read_file(info.dir + "/host");  // netns clusters
  info.url = fmt::format("{}://{}:{}", options_.tls ? "https" : "http", host ? trim(*host) : "127.0.0.1", info.port);
  if (auto pid = read_file(info.dir + "/pid")) info.pid = to_number<pid_t>(trim(*pid));
  if (auto ready = read_file(info.dir + "/ready.json")) {
    // ready.json is the node's own word while it runs; config.json holds the pinned port.
    if (const std::string url = json_field(*ready, "url"); !url.empty()) info.url = url;
  }
  for (int i = 1; fs::is_directory(info.dir + "/mp" + std::to_string(i)); ++i) {
    info.mountpaths.push_back(info.dir + "/mp" + std::to_string(i));
  }
  info.log_path = info.dir + "/silod.log";
  return info;
}

Result<std::unique_ptr<client::Client>> LocalCluster::client_of(std::string_view id) const {
  ASSIGN_OR_RETURN(const NodeInfo info, node(id));
  return new_client({}, info.url);
}

client::ClientOptions admin_client_options(client::ClientOptions options) {
  if (options.access_key.empty()) options.access_key = std::string(kTestAccessKey);
  if (options.secret_key.empty()) options.secret_key = std::string(kTestSecretKey);
  return options;
}

client::ClientOptions LocalCluster::client_options(client::ClientOptions options) const {
  if (options.access_key.empty()) options.access_key = access_key_;
  if (options.secret_key.empty()) options.secret_key = secret_key_;
  if (options.ca_bundle.empty()) options.ca_bundle = ca_file();
  return options;
}

Result<std::unique_ptr<client::Client>> LocalCluster::new_client(client::ClientOptions options,
                                                                 std::string url) const {
  return client::Client::create(url.empty() ? endpoint_ : url, client_options(std::move(options)));
}

Status LocalCluster::kill(std::string_view id) {
  ASSIGN_OR_RETURN(const NodeInfo info, node(id));
  if (!runs_node(info)) return Status::failed_precondition("node {} (pid {}) is not running", id, info.pid);
  if (::kill(info.pid, SIGKILL) != 0) return Status::from_errno(errno, fmt::format("kill -9 {}", info.pid));
  return wait_until([&] { return !is_running(info.pid); }, milliseconds(10000),
                    fmt::format("exit of node {} (pid {}) after SIGKILL", id, info.pid));
}

Status LocalCluster::stop(std::string_view id) { return script({"stop", std::string(id)}, kNodeTimeout); }

Status LocalCluster::restart(std::string_view id) { return script({"restart", std::string(id)}, kNodeTimeout); }

Status LocalCluster::launch(std::string_view id) {
  ASSIGN_OR_RETURN(const NodeInfo info, node(id));
  if (runs_node(info)) return Status::failed_precondition("node {} (pid {}) is running", id, info.pid);
  CommandOptions command;
  command.unset_prefixes = {"SILO_", "SILOD_"};
  command.env = {{"SILO_ACCESS_KEY", access_key_}, {"SILO_SECRET_KEY", secret_key_}};
  const std::string line = fmt::format(
      "setsid '{}/silod' --config '{}/config.json' >>'{}' 2>&1 </dev/null & echo $! >'{}/pid'", bin_dir(), info.dir,
      info.log_path, info.dir);
  ASSIGN_OR_RETURN(const int code, run_command({"bash", "-c", line}, command));
  if (code != 0) return Status::internal("starting node {}: exit {}", id, code);
  return Status::ok();
}

Status LocalCluster::cut(std::string_view id, const std::vector<std::string>& peers) {
  std::string from;
  for (const auto& peer : peers) from += (from.empty() ? "" : ",") + peer;
  return script({"cut", std::string(id), "--from", from}, kNodeTimeout);
}

Status LocalCluster::heal(std::string_view id) { return script({"heal", std::string(id)}, kNodeTimeout); }

Result<uint16_t> LocalCluster::etcd_port() const {
  ASSIGN_OR_RETURN(const std::string text, read_file(dir() + "/etcd/port"));
  const std::string port = trim(text);
  uint16_t value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size()) return Status::internal("bad etcd port '{}'", port);
  return value;
}

Result<std::string> LocalCluster::add_waiting_node(std::string_view role) { return add(role, false); }

Result<std::string> LocalCluster::add_node(std::string_view role) { return add(role, true); }

Result<std::string> LocalCluster::add(std::string_view role, bool join) {
  const std::vector<std::string> before = node_ids();
  std::vector<std::string> args = {"add", "--role", std::string(role), "--mountpaths",
                                   std::to_string(options_.mountpaths)};
  if (!join) args.push_back("--no-join");
  RETURN_IF_ERROR(script(std::move(args), kNodeTimeout));
  for (const std::string& id : node_ids()) {
    if (std::find(before.begin(), before.end(), id) == before.end()) return id;
  }
  return Status::internal("cluster.sh add reported success but no new node directory appeared");
}

Status LocalCluster::down() { return script({"down"}, kNodeTimeout); }

Status LocalCluster::restart_all() {
  RETURN_IF_ERROR(down());
  // The primary first: the others join it; cluster.sh restart returns once all are online.
  std::vector<std::string> ids = node_ids();
  const std::string primary = proxy_ids().empty() ? "" : proxy_ids().front();
  std::stable_partition(ids.begin(), ids.end(), [&](const std::string& id) { return id == primary; });
  for (const auto& id : ids) RETURN_IF_ERROR(restart(id));
  return Status::ok();
}

Status LocalCluster::wait_for_node_state(std::string_view id, std::string_view state, milliseconds timeout) {
  std::string last = "no answer";
  Status s = wait_until(
      [&] {
        auto map = client_->node_map();
        if (!map) {
          last = map.error().to_string();
          return false;
        }
        const client::NodeEntry* n = map->find(id);
        last = n == nullptr ? "absent from the map" : "state " + n->state;
        return n != nullptr && n->state == state;
      },
      timeout, fmt::format("node {} reaching state {}", id, state));
  if (!s.is_ok()) return Status(s.code(), s.message() + " (last seen: " + last + ")");
  return s;
}

}  // namespace silo::testing
