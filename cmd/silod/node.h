#pragma once

#include <boost/asio/io_context.hpp>

#include <array>
#include <atomic>
#include <memory>

#include "batch/batch.h"
#include "batch/owner_reads.h"
#include "cluster/cluster_maps.h"
#include "cluster/intra_auth.h"
#include "cluster/meta_store.h"
#include "cluster/primary.h"
#include "dsort/coordinator.h"
#include "dsort/worker.h"
#include "s3api/s3_request.h"
#include "config/live_config.h"
#include "backend/backend_pool.h"
#include "cache/cache.h"
#include "cluster/durability.h"
#include "http/client.h"
#include "http/route_table.h"
#include "http/server.h"
#include "proxy/proxy.h"
#include "stats/registry.h"
#include "async/disk_executor.h"
#include "store/store.h"
#include "rebalance/mountpaths.h"
#include "target/target.h"

namespace silo::silod {

// One silod process: the roles its config names, wired to one HTTP server, one io_context
// and the node's maps. Built and run by main(); stop() (SIGTERM) drains it.
class Node {
 public:
  static Result<std::unique_ptr<Node>> create(config::Config config);
  ~Node();
  // Serves until a stop request; returns the process exit code.
  int run();

 private:
  explicit Node(config::Config config);
  http::Awaitable<void> start();
  // HA (etcd) proxy: campaigns and follows the maps; ready once primary or joined.
  http::Awaitable<bool> start_ha_proxy();
  bool is_primary() const { return primary_ && primary_->is_active(); }
  http::Awaitable<void> shutdown();
  // Every request: timed into request_seconds_ (but health checks and scrapes), then
  // dispatched.
  http::Awaitable<void> serve(http::Exchange& exchange);
  http::Awaitable<void> dispatch(http::Exchange& exchange);
  // The node's gauges: connections, primary, mountpath space, jobs.
  void add_metrics();
  http::Awaitable<void> dispatch_native(http::Exchange& exchange, bool is_intra_cluster);
  http::Awaitable<void> dispatch_s3(http::Exchange& exchange, bool is_intra_cluster);
  // What the native dispatcher learned about the caller before routing.
  struct NativeCaller {
    // Who: a user (its key), anonymous, or another node of the cluster (is_admin; with the
    // user's key when it relays a user's request that the user signed).
    access::Subject subject;
    bool is_intra_cluster = false;  // signed with the cluster's secret
  };
  // Fills native_routes_ from the roles this node runs; called once they exist.
  void add_native_routes();
  // /v1/objects/{bucket}/{name}: to the target when forwarded to it, else to the proxy.
  http::Awaitable<void> route_object(http::Exchange& exchange, std::string_view rest, const NativeCaller& caller);
  http::Awaitable<void> send_no_such_endpoint(http::Exchange& exchange);

  http::Awaitable<void> handle_metasync(http::Exchange& exchange);
  http::Awaitable<void> handle_keepalive(http::Exchange& exchange);
  // POST /v1/internal/attach from the primary: an admin added this waiting node.
  http::Awaitable<void> handle_attach(http::Exchange& exchange);
  std::string read_attached_primary() const;
  std::string left_marker() const;
  // POST /v1/internal/leave from the primary: this node was decommissioned.
  http::Awaitable<void> handle_leave(http::Exchange& exchange);
  Status write_ready_file() const;
  // Recomputes the effective cluster config from the bucket map's run-time overrides.
  void apply_config_overrides();
  // Reads the TLS files again (SIGHUP, or the files changed); logs the outcome.
  void reload_tls(std::string_view why);
  // Reloads the TLS files when they change: a Kubernetes Secret mounted as a volume is
  // updated in place, and the image has no shell to send SIGHUP from.
  http::Awaitable<void> watch_tls_files();

  config::Config config_;  // as the file says; the cluster section in effect is live_config_'s
  std::shared_ptr<config::LiveConfig> live_config_;
  std::unique_ptr<cluster::ClusterAuth> cluster_auth_;
  std::unique_ptr<s3api::Users> users_;
  boost::asio::io_context io_;
  stats::Registry stats_;
  // silo_http_request_duration_seconds by method (http::Method's order).
  std::array<stats::Histogram*, 7> request_seconds_{};
  async::DiskExecutor state_disk_{1};
  std::unique_ptr<cluster::ClusterMaps> maps_;
  std::unique_ptr<store::Store> store_;
  std::shared_ptr<http::Client> data_client_;
  std::shared_ptr<http::Client> control_client_;
  std::shared_ptr<backend::BackendPool> backends_;  // remote buckets' backends
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<cluster::JobRegistry> jobs_;
  std::unique_ptr<cluster::MetaStore> meta_;
  cluster::EtcdMetaStore* etcd_meta_ = nullptr;  // meta_ when it is etcd
  std::unique_ptr<cluster::Primary> primary_;
  std::unique_ptr<cluster::Member> member_;
  // The data services beneath a target, made before it and destroyed after it, each after
  // those it uses: the cache of remote buckets, copies, erasure coding, rebalance,
  // mountpaths and scrub.
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<replication::Peers> peers_;
  std::unique_ptr<replication::Replication> replication_;
  std::unique_ptr<erasure::Erasure> erasure_;
  std::unique_ptr<rebalance::Rebalance> rebalance_;
  std::unique_ptr<rebalance::Mountpaths> mountpaths_;
  std::unique_ptr<scrub::Scrub> scrub_;
  std::unique_ptr<shards::Shards> shards_;
  std::unique_ptr<target::Target> target_;
  std::unique_ptr<proxy::Proxy> proxy_;
  std::unique_ptr<batch::Batch> batch_;  // POST /v1/batch, on every node
  std::unique_ptr<batch::OwnerReads> owner_reads_;  // POST /v1/internal/batch, on targets
  std::unique_ptr<dsort::Worker> dsort_worker_;            // /v1/internal/dsort/..., on targets
  std::unique_ptr<dsort::Coordinator> dsort_coordinator_;  // dsort jobs, on a (possible) primary
  http::RouteTable<NativeCaller> native_routes_;  // /v1/...: filled before serving
  wire::NodeInfo self_;
  std::atomic<bool> is_ready_{false};
  std::atomic<bool> has_left_{false};  // decommissioned earlier: stays out of the cluster (left_marker())
  std::atomic<bool> is_stopping_{false};
  int exit_code_ = 0;
};

}  // namespace silo::silod
