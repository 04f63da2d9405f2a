#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "client/client.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace silo::testing {

// The admin credentials every test cluster is started with, whatever the caller's shell
// exported (the README walkthrough has users export other SILO_ACCESS_KEY values).
inline constexpr std::string_view kTestAccessKey = "silo-admin";
inline constexpr std::string_view kTestSecretKey = "silo-secret-key";

// `options` with kTestAccessKey / kTestSecretKey filled in where unset: for a client of a
// test cluster started with the default keys (LocalCluster::client_options() knows its own).
client::ClientOptions admin_client_options(client::ClientOptions options = {});

struct ClusterOptions {
  int proxies = 1;
  int targets = 3;
  int mountpaths = 2;
  // Variables for deploy/local/cluster.sh, e.g. {"SILO_PROXY_MODE", "redirect"} or
  // {"SILO_KEEPALIVE_TIMEOUT_MS", "1000"}. Inherited SILO_* variables are dropped so a
  // developer's shell cannot change a test; the admin keys are kTestAccessKey and
  // kTestSecretKey unless set here.
  EnvVars env{};
  // `cluster.sh up --ha`: a real etcd holds the maps and every proxy may become primary.
  bool ha = false;
  // `cluster.sh up --tls`: every node serves HTTPS only with a certificate of the
  // cluster's CA (DIR/tls/ca.pem, which the cluster's clients trust).
  bool tls = false;
  // `cluster.sh up --netns` (root): every node in a network namespace of its own on a
  // bridge, reached at 10.200.X.N; cut() and heal() partition it.
  bool netns = false;
};

// One node as its files under <dir>/nodes/<id>/ describe it right now.
struct NodeInfo {
  std::string id;
  std::string role;  // "proxy" | "target"
  std::string dir;   // <cluster dir>/nodes/<id>
  std::string url;   // "http://127.0.0.1:PORT" (https:// with tls)
  uint16_t port = 0;
  pid_t pid = 0;     // the last one started (it may have exited since)
  std::vector<std::string> mountpaths;  // <dir>/mp1.. on targets
  std::string log_path;
};

// A real multi-process cluster on 127.0.0.1 driven through deploy/local/cluster.sh (the
// one launcher; never a second one), in a fresh /tmp directory with kernel-picked ports,
// so tests may run in parallel. Uses the silod of this build (SILO_BIN_DIR, overridable
// with SILO_TEST_BIN_DIR). Blocking; use from the test's thread. The destructor stops
// every node and deletes the directory, except when the current test failed (or
// SILO_KEEP_CLUSTER=1): then it prints where the logs are.
class LocalCluster {
 public:
  // Runs `cluster.sh up` and returns once every node is online.
  static Result<std::unique_ptr<LocalCluster>> start(ClusterOptions options);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  const std::string& dir() const { return dir_.path(); }
  // The primary proxy's URL (the cluster's endpoint).
  const std::string& endpoint() const { return endpoint_; }
  // A client of endpoint(), made at start.
  client::Client& client() { return *client_; }
  Result<std::unique_ptr<client::Client>> client_of(std::string_view id) const;
  // `options` with the cluster's admin keys (and, with tls, its CA) filled in (never the
  // caller's environment).
  client::ClientOptions client_options(client::ClientOptions options = {}) const;
  // A new client of `url` (default: endpoint()) signing with the cluster's admin keys.
  Result<std::unique_ptr<client::Client>> new_client(client::ClientOptions options = {},
                                                     std::string url = "") const;
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  // The CA file a tls cluster's certificates chain to; "" without tls.
  std::string ca_file() const { return options_.tls ? dir() + "/tls/ca.pem" : ""; }

  std::vector<std::string> node_ids() const;  // sorted: p1.., t1..
  std::vector<std::string> proxy_ids() const;
  std::vector<std::string> target_ids() const;
  Result<NodeInfo> node(std::string_view id) const;

  // SIGKILL, then waits until the process is gone.
  Status kill(std::string_view id);
  // `cluster.sh stop ID` / `cluster.sh restart ID` (restart waits until all are online).
  Status stop(std::string_view id);
  Status restart(std::string_view id);
  // Starts node `id`'s silod again with its config file, as a supervisor (a Kubernetes
  // StatefulSet) would, and returns at once: it may never become ready.
  Status launch(std::string_view id);
  // The client port of the cluster's etcd (ha clusters).
  Result<uint16_t> etcd_port() const;
  // `cluster.sh add --role ROLE` (with the cluster's mountpath count): a new node joins;
  // returns its id once it is online.
  Result<std::string> add_node(std::string_view role);
  // `cluster.sh add --role ROLE --no-join`: a node that serves but waits for an admin to
  // add it (POST /v1/cluster/nodes); returns its id once it listens.
  Result<std::string> add_waiting_node(std::string_view role);
  // `cluster.sh down`: every node stopped with SIGTERM; data kept.
  Status down();
  // down(), then restarts every node, the primary first.
  Status restart_all();

  // netns clusters: `cluster.sh cut ID --from PEERS` drops, inside node `id`'s namespace,
  // what it exchanges with `peers` (node ids, "etcd", or "all"); heal() lifts that.
  Status cut(std::string_view id, const std::vector<std::string>& peers);
  Status heal(std::string_view id);

  // Polls the primary's node map until node `id` has `state` ("online", "down").
  Status wait_for_node_state(std::string_view id, std::string_view state, std::chrono::milliseconds timeout);

 private:
  LocalCluster(ClusterOptions options, TempDir dir);
  Result<std::string> add(std::string_view role, bool join);
  // Runs cluster.sh with `args` and --dir; the error carries the end of its output.
  Status script(std::vector<std::string> args, std::chrono::milliseconds timeout);

  const ClusterOptions options_;
  TempDir dir_;
  std::string access_key_;
  std::string secret_key_;
  std::string endpoint_;
  std::unique_ptr<client::Client> client_;
};

// Calls `predicate` every `poll` until it returns true; kDeadlineExceeded naming `what`
// after `timeout`. The way to wait in tests (never a fixed sleep).
Status wait_until(const std::function<bool()>& predicate, std::chrono::milliseconds timeout,
                  std::string_view what, std::chrono::milliseconds poll = std::chrono::milliseconds(20));

// The value of `"key": <value>` in a small flat JSON document (a node file): the string
// without quotes, or the number's text; "" when absent. No JSON library: see README.
std::string json_field(std::string_view text, std::string_view key);

}  // namespace silo::testing
