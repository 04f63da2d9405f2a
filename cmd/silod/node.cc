#include "node.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <map>
#include <thread>

#include "base/clock.h"
#include "base/cpus.h"
#include "base/log.h"
#include "base/open_files_limit.h"
#include "batch/owner_fetcher.h"
#include "batch/owner_reads.h"
#include "http/reply.h"
#include "wire/json.h"

namespace silo::silod {
namespace {

namespace asio = boost::asio;

wire::NodeRole wire_role(config::Role role) {
  switch (role) {
    case config::Role::kProxy: return wire::NODE_ROLE_PROXY;
    case config::Role::kTarget: return wire::NODE_ROLE_TARGET;
    case config::Role::kAll: return wire::NODE_ROLE_ALL;
  }
  return wire::NODE_ROLE_UNSPECIFIED;
}

http::ServerLimits server_limits(const config::HttpLimits& h) {
  http::ServerLimits limits;
  limits.max_header_bytes = h.max_header_bytes;
  limits.max_connections = h.max_connections;
  limits.max_requests_in_flight = h.max_requests_in_flight;
  limits.idle_timeout = h.idle_timeout;
  limits.header_timeout = h.header_timeout;
  limits.body_idle_timeout = h.body_idle_timeout;
  limits.drain_timeout = h.drain_timeout;
  return limits;
}

// "/v1/objects/b/a/b/c" -> {"b", "a/b/c"}; the name keeps every '/' after the bucket.
bool split_object_path(std::string_view rest, std::string& bucket, std::string& name) {
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  bucket = std::string(rest.substr(0, slash));
  name = std::string(rest.substr(slash + 1));
  return true;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

Node::Node(config::Config config) : config_(std::move(config)) {}

Node::~Node() = default;

Result<std::unique_ptr<Node>> Node::create(config::Config config) {
  std::unique_ptr<Node> node(new Node(std::move(config)));
  const config::NodeConfig& nc = node->config_.node;
  ASSIGN_OR_RETURN(node->maps_, cluster::ClusterMaps::open(nc.data_dir + "/state"));
  // The effective cluster config: the file's with the bucket map's run-time overrides,
  // recomputed on every install (docs/adr/0012).
  node->live_config_ = std::make_shared<config::LiveConfig>(node->config_.cluster);
  node->apply_config_overrides();
  node->maps_->on_change([self = node.get()] { self->apply_config_overrides(); });
  if (config::is_target(nc.role)) {
    store::StoreOptions options;
    options.mountpaths = rebalance::mountpaths_to_open(nc.mountpaths, nc.data_dir + "/state");
    options.threads_per_mountpath = nc.disk_threads_per_mountpath;
    // Kept files and connections share the open-file limit: at most half of it kept.
    options.open_files = static_cast<size_t>(std::min<uint64_t>(nc.open_files, raise_open_files_limit() / 2));
    options.min_part_size = node->config_.cluster.s3.min_part_size;
    ASSIGN_OR_RETURN(node->store_, store::Store::open(std::move(options)));
  }
  node->cluster_auth_ = std::make_unique<cluster::ClusterAuth>(node->config_.cluster.auth);
  node->users_ = std::make_unique<s3api::Users>(node->config_.cluster.auth, *node->maps_);
  // Every request a node sends to another is signed with the cluster secret.
  Node* signer = node.get();
  const auto sign = [signer](const http::Endpoint&, http::ClientRequest& request) {
    request.headers.set(cluster::kClusterAuthHeader,
                        signer->cluster_auth_->sign(signer->config_.node.id, http::method_name(request.method),
                                                    request.target, Clock::real().unix_nanos() / 1'000'000'000));
  };
  // Over TLS a node trusts the cluster's CA and shows its own certificate to its peers.
  http::ClientOptions data;
  data.decorate = sign;
  data.tls_ca_file = nc.tls.ca_file;
  if (nc.tls.is_enabled()) {
    data.tls_cert_file = nc.tls.cert_file;
    data.tls_key_file = nc.tls.key_file;
  }
  node->data_client_ = http::Client::create(node->io_.get_executor(), data);
  http::ClientOptions control = data;
  control.connect_timeout = std::chrono::milliseconds(1000);
  control.io_timeout = cluster::kControlCallTimeout;
  node->control_client_ = http::Client::create(node->io_.get_executor(), control);
  // Backends get their own client: nothing of the cluster's signing goes out to them.
  node->backends_ = std::make_shared<backend::BackendPool>(
      http::Client::create(node->io_.get_executor(), http::ClientOptions{}), node->live_config_);

  http::ServerOptions server_options;
  server_options.host = nc.host;
  server_options.port = nc.port;
  server_options.limits = server_limits(node->config_.cluster.http);
  // Requests between nodes are counted where they entered the cluster, not again here: a
  // busy node must still answer its peers (keepalives, relays of admitted requests).
  server_options.passes_request_cap = [](const http::RequestHead& head) {
    return head.headers.has(cluster::kClusterAuthHeader);
  };
  server_options.tls = http::ServerTls{.cert_file = nc.tls.cert_file,
                                       .key_file = nc.tls.key_file,
                                       .ca_file = nc.tls.ca_file,
                                       .require_client_cert = nc.tls.require_client_cert,
                                       // Kubernetes' probes show no certificate.
                                       .paths_without_cert = {"/v1/health"}};
  Node* self = node.get();
  // Every answer names the node map this node serves under: a smart client that sees a
  // newer one than it routes by refreshes its map (docs/python.md, CONTRACT.md).
  server_options.stamp = [self](http::Headers& headers) {
    if (self->maps_ == nullptr) return;
    headers.set(http::kNodeMapVersionHeader, std::to_string(self->maps_->node_map()->version()));
  };
  ASSIGN_OR_RETURN(node->server_, http::Server::create(node->io_, server_options, [self](http::Exchange& e) {
                     return self->serve(e);
                   }));
  // With port 0 the URL is known only now that the kernel picked the port.
  const std::string_view scheme = nc.tls.is_enabled() ? "https" : "http";
  if (nc.port == 0 && node->config_.node.public_url == fmt::format("{}://{}:0", scheme, nc.host)) {
    node->config_.node.public_url = fmt::format("{}://{}:{}", scheme, nc.host, node->server_->port());
  }
  node->self_.set_id(nc.id);
  node->self_.set_role(wire_role(nc.role));
  node->self_.set_url(node->config_.node.public_url);
  node->self_.set_state(wire::NODE_STATE_ONLINE);
  return node;
}

http::Awaitable<void> Node::start() {
  const config::NodeConfig& nc = config_.node;
  const bool is_ha = config_.cluster.meta_store.kind == config::MetaStoreConfig::Kind::kEtcd;
  // With the local meta store the proxy without a primary_url is the primary for good;
  // with etcd every proxy may become it.
  const bool is_fixed_primary = config::is_proxy(nc.role) && !is_ha && nc.primary_url.empty();
  has_left_ = ::access(left_marker().c_str(), F_OK) == 0;
  if (config::is_proxy(nc.role) && (is_ha || is_fixed_primary)) {
    auto jobs = cluster::JobRegistry::open(nc.data_dir + "/state");
    if (!jobs) {
      SILO_LOG_ERROR("jobs: {}", jobs.error());
      exit_code_ = 1;
      io_.stop();
      co_return;
    }
    jobs_ = std::move(*jobs);
    if (is_ha) {
      auto etcd = std::make_unique<cluster::EtcdMetaStore>(control_client_, config_.cluster.meta_store, self_, *maps_,
                                                           io_.get_executor());
      etcd_meta_ = etcd.get();
      meta_ = std::move(etcd);
    } else {
      meta_ = std::make_unique<cluster::LocalMetaStore>();
    }
    primary_ = std::make_unique<cluster::Primary>(*maps_, state_disk_, control_client_, self_, config_.cluster,
                                                  Clock::real(), *jobs_, *meta_);
  }
  if (!is_fixed_primary) {
    std::optional<http::Endpoint> seed;
    // An admin added this node earlier (POST /v1/cluster/nodes): it remembers where.
    std::string primary_url = nc.primary_url;
    if (primary_url.empty()) primary_url = read_attached_primary();
    if (!primary_url.empty()) {
      auto endpoint = http::Endpoint::parse(primary_url);
      if (!endpoint) {
        SILO_LOG_ERROR("node.primary_url: {}", endpoint.error());
        exit_code_ = 2;
        io_.stop();
        co_return;
      }
      seed = *endpoint;
    }
    member_ = std::make_unique<cluster::Member>(*maps_, state_disk_, control_client_, self_, seed, config_.cluster);
  }
  if (store_) {
    cache_ = std::make_unique<cache::Cache>(cache::CacheOptions{.node_id = self_.id(),
                                                                .config = live_config_,
                                                                .backend_of = cache::backends_of(backends_),
                                                                .fullest_mountpath_percent = {}},
                                            *maps_, *store_, stats_);
    peers_ = std::make_unique<replication::Peers>(self_, *maps_, live_config_);
    replication_ = std::make_unique<replication::Replication>(*peers_, *store_, data_client_, stats_);
    erasure_ = std::make_unique<erasure::Erasure>(*peers_, *store_, data_client_, *replication_, stats_);
    rebalance::WalkOptions walk_options;
    walk_options.give_up_after = live_config_->get()->rebalance_give_up;
    rebalance_ = std::make_unique<rebalance::Rebalance>(*peers_, *store_, data_client_, *replication_, *erasure_,
                                                        walk_options);
    mountpaths_ = std::make_unique<rebalance::Mountpaths>(*store_, nc.data_dir + "/state");
    scrub_ = std::make_unique<scrub::Scrub>(*peers_, *store_, *replication_, *erasure_);
    shards_ = std::make_unique<shards::Shards>(*store_, stats_);
    target_ = std::make_unique<target::Target>(
        target::TargetOptions{self_, live_config_}, *maps_, *store_, data_client_, member_.get(), stats_,
        target::Target::Services{*peers_, *replication_, *erasure_, *rebalance_, *scrub_, *cache_, *shards_});
    maps_->on_change([this] {
      asio::co_spawn(io_, target_->apply_bucket_map(), asio::detached);
      asio::co_spawn(io_, rebalance_->sync(), asio::detached);
    });
  }
  // Every node is a gateway (DESIGN.md: every node answers the S3 and native API); the
  // proxy role only means it stores nothing.
  {
    proxy::ProxyOptions options{self_, live_config_, nullptr, nullptr, backends_};
    if (target_) {
      options.local_target = [this](http::Exchange& e, std::string b, std::string n) {
        return target_->handle_object(e, std::move(b), std::move(n));
      };
      options.local_s3 = [this](http::Exchange& e, const s3api::S3Request& r) { return target_->handle_s3(e, r); };
    }
    proxy_ = std::make_unique<proxy::Proxy>(std::move(options), *maps_, data_client_, primary_.get(), stats_);
  }
  batch_ = std::make_unique<batch::Batch>(std::make_unique<batch::OwnerFetcher>(*maps_, data_client_, self_.id()),
                                          batch::StreamOptions{}, stats_, batch::RunSource{maps_.get(), data_client_});
  if (target_) owner_reads_ = std::make_unique<batch::OwnerReads>(*maps_, *store_, *shards_, self_.id(), stats_);
  if (target_) dsort_worker_ = std::make_unique<dsort::Worker>(*maps_, *store_, data_client_, self_, stats_);
  if (primary_) {
    dsort_coordinator_ = std::make_unique<dsort::Coordinator>(*primary_, *maps_, data_client_);
    primary_->add_runner("dsort", dsort_coordinator_.get());
  }
  add_native_routes();
  add_metrics();
  server_->start();
  SILO_LOG_INFO("{} node {} listening on {}", config::role_name(nc.role), nc.id, self_.url());

  if (has_left_) {
    // Decommissioned: the primary retired this node. A restart (Kubernetes starts a pod
    // that exits again) must not bring it back as a new node: it stays out, not ready.
    SILO_LOG_WARN("this node was decommissioned and left the cluster: it stays out (remove it; to join again, "
                  "delete {})",
                  left_marker());
    co_return;
  }
  if (is_fixed_primary) {
    const Status s = co_await primary_->start();
    if (!s.is_ok()) {
      SILO_LOG_ERROR("cannot take the primary role: {}", s);
      exit_code_ = 1;
      io_.stop();
      co_return;
    }
    asio::co_spawn(io_, primary_->watch_keepalives(), asio::detached);
    asio::co_spawn(io_, primary_->run_rebalance(), asio::detached);
  } else if (etcd_meta_ != nullptr) {
    if (!co_await start_ha_proxy()) co_return;
  } else {
    // Join: retry until the primary answers (it may be starting too), or a stop request.
    asio::steady_timer timer(io_);
    for (int attempt = 0; !is_stopping_; ++attempt) {
      const Status s = co_await member_->sync();
      if (s.is_ok()) break;
      if (!member_->has_seed() && maps_->node_map()->nodes().empty()) {
        if (attempt == 0) {
          SILO_LOG_INFO("waiting to be added: POST /v1/cluster/nodes {{\"url\": \"{}\"}} on a proxy of the cluster",
                        self_.url());
        }
      } else if (attempt % 10 == 0) {
        SILO_LOG_WARN("joining the primary: {} (retrying)", s);
      }
      timer.expires_after(std::chrono::milliseconds(200));
      boost::system::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (is_stopping_) co_return;
    asio::co_spawn(io_, member_->run(), asio::detached);
  }
  if (target_) {
    asio::co_spawn(io_, target_->apply_bucket_map(), asio::detached);
    asio::co_spawn(io_, target_->sweep_uploads(std::chrono::hours(1)), asio::detached);
    asio::co_spawn(io_, rebalance_->sync(), asio::detached);  // resumes one cut off by a restart
    asio::co_spawn(io_, mountpaths_->watch(std::chrono::seconds(1)), asio::detached);
    asio::co_spawn(io_, cache_->watch_space(), asio::detached);
    asio::co_spawn(io_, target_->replicate_fetched(), asio::detached);
  }
  is_ready_ = true;
  if (const Status s = write_ready_file(); !s.is_ok()) SILO_LOG_ERROR("ready file: {}", s);
  SILO_LOG_INFO("node {} ready (node map v{}, bucket map v{})", nc.id, maps_->node_map()->version(),
                maps_->bucket_map()->version());
}

http::Awaitable<bool> Node::start_ha_proxy() {
  // The primary's loops idle while another proxy holds the role.
  asio::co_spawn(io_, primary_->watch_keepalives(), asio::detached);
  asio::co_spawn(io_, primary_->run_rebalance(), asio::detached);
  cluster::EtcdMetaStore::Hooks hooks;
  hooks.install = [this](std::optional<wire::NodeMap> nodes,
                         std::optional<wire::BucketMap> buckets) -> http::Awaitable<void> {
    const Status s = co_await cluster::install_maps(*maps_, state_disk_, nodes ? &*nodes : nullptr,
                                                    buckets ? &*buckets : nullptr);
    if (!s.is_ok()) SILO_LOG_WARN("installing the maps from etcd: {}", s);
  };
  hooks.elected = [this]() { return primary_->start(); };
  hooks.deposed = [this]() { primary_->deactivate(); };
  asio::co_spawn(io_, etcd_meta_->run(std::move(hooks)), asio::detached);
  // Ready once this proxy is the primary or has joined the one that is.
  asio::steady_timer timer(io_);
  for (int attempt = 0; !is_stopping_ && !is_primary(); ++attempt) {
    const Status s = co_await member_->sync();
    if (s.is_ok()) break;
    if (attempt % 25 == 24) SILO_LOG_WARN("no primary to join yet: {} (retrying)", s);
    timer.expires_after(std::chrono::milliseconds(200));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (is_stopping_) co_return false;
  asio::co_spawn(io_, member_->run([this] { return is_primary(); }), asio::detached);
  co_return true;
}

void Node::apply_config_overrides() {
  const auto map = maps_->bucket_map();
  const Status s = live_config_->set_overrides(map->config_overrides());
  // A node whose config file differs from the primary's may fail a cross-field rule: it
  // keeps the config it has rather than stop serving.
  if (!s.is_ok()) {
    SILO_LOG_ERROR("config: the run-time overrides of bucket map v{} do not apply to this node's config file; "
                   "keeping the previous settings: {}",
                   map->version(), s);
  }
}

Status Node::write_ready_file() const {
  if (config_.node.ready_file.empty()) return Status::ok();
  const std::string body = fmt::format(R"({{"id":"{}","port":{},"pid":{},"url":"{}"}})", config_.node.id,
                                       server_->port(), ::getpid(), self_.url());
  return cluster::write_file_atomically(config_.node.ready_file, body);
}

http::Awaitable<void> Node::shutdown() {
  SILO_LOG_INFO("stopping: draining requests");
  is_ready_ = false;
  if (etcd_meta_ != nullptr) co_await etcd_meta_->resign();  // hand the role over at once
  if (primary_) primary_->stop();
  if (member_) member_->stop();
  if (rebalance_) rebalance_->stop();
  if (mountpaths_) mountpaths_->stop();
  if (scrub_) scrub_->stop_all();
  if (dsort_worker_) dsort_worker_->stop_all();
  if (dsort_coordinator_) dsort_coordinator_->stop();
  if (cache_) cache_->stop();
  co_await server_->stop();
  if (store_) store_->close();
  if (!config_.node.ready_file.empty()) ::unlink(config_.node.ready_file.c_str());
  SILO_LOG_INFO("stopped");
  io_.stop();
}

void Node::add_metrics() {
  for (const http::Method m : {http::Method::kGet, http::Method::kHead, http::Method::kPut, http::Method::kPost,
                               http::Method::kDelete, http::Method::kOptions, http::Method::kOther}) {
    std::string op(http::method_name(m));
    std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
    request_seconds_[static_cast<size_t>(m)] = &stats_.histogram(
        "silo_http_request_duration_seconds",
        "Time from a request's head to the end of its answer (S3 and native API, intra-cluster included).",
        stats::label("op", op));
  }
  stats_.gauge("silo_http_connections", "Open client connections.",
               [this] { return static_cast<double>(server_->connection_count()); });
  if (primary_) {
    stats_.gauge("silo_primary", "1 while this proxy acts as the primary.", [this] { return is_primary() ? 1.0 : 0.0; });
  }
  if (store_) {
    // Per mountpath: its file system's size and free bytes, and the objects on it.
    const auto per_mountpath = [this](auto figure) {
      return [this, figure] {
        std::vector<stats::LabeledValue> out;
        for (const store::MountpathInfo& m : store_->mountpaths()) {
          out.push_back({stats::label("mountpath", m.path) + "," + stats::label("state", store::mountpath_state_name(m.state)),
                         static_cast<double>(figure(m))});
        }
        return out;
      };
    };
    stats_.gauge_family("silo_mountpath_capacity_bytes", "Size of the file system of each mountpath.",
                        per_mountpath([](const store::MountpathInfo& m) { return m.capacity_bytes; }));
    stats_.gauge_family("silo_mountpath_available_bytes", "Bytes free for objects on each mountpath.",
                        per_mountpath([](const store::MountpathInfo& m) { return m.available_bytes; }));
    stats_.gauge_family("silo_mountpath_objects", "Objects on each mountpath (an estimate).",
                        per_mountpath([](const store::MountpathInfo& m) { return m.objects; }));
  }
  if (jobs_) {
    // The primary's jobs: how many of each kind are in each state, and the figures of
    // those running (a rebalance's progress: objects_done / objects_total).
    stats_.gauge_family("silo_jobs", "Jobs the primary knows, by kind and state.", [this] {
      std::map<std::pair<std::string, std::string>, double> counts;
      if (is_primary()) {
        for (const wire::JobInfo& job : jobs_->list()) counts[{job.kind(), job.state()}] += 1;
      }
      std::vector<stats::LabeledValue> out;
      for (const auto& [key, n] : counts) out.push_back({stats::label("kind", key.first) + "," + stats::label("state", key.second), n});
      return out;
    });
    const auto per_running_job = [this](auto figure) {
      return [this, figure] {
        std::vector<stats::LabeledValue> out;
        if (!is_primary()) return out;
        for (const wire::JobInfo& job : jobs_->list()) {
          if (job.state() != "running") continue;
          out.push_back({stats::label("kind", job.kind()) + "," + stats::label("id", job.id()),
                         static_cast<double>(figure(job))});
        }
        return out;
      };
    };
    stats_.gauge_family("silo_job_objects_done", "Objects a running job has done (moved, copied, fetched, ...).",
                        per_running_job([](const wire::JobInfo& j) { return j.objects_done(); }));
    stats_.gauge_family("silo_job_objects_total", "Objects a running job looks at (an estimate while it scans).",
                        per_running_job([](const wire::JobInfo& j) { return std::max(j.objects_total(), j.objects_done()); }));
    stats_.gauge_family("silo_job_bytes_done", "Bytes a running job has moved or written.",
                        per_running_job([](const wire::JobInfo& j) { return j.bytes_done(); }));
  }
}

http::Awaitable<void> Node::serve(http::Exchange& exchange) {
  const std::string& path = exchange.request().path;
  if (path == "/v1/health" || path == "/metrics") {
    co_await dispatch(exchange);
    co_return;
  }
  const auto began = std::chrono::steady_clock::now();
  stats::Histogram* timed = request_seconds_[static_cast<size_t>(exchange.request().method)];
  co_await dispatch(exchange);
  timed->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
}

http::Awaitable<void> Node::dispatch(http::Exchange& exchange) {
  const http::RequestHead& request = exchange.request();
  const std::string& path = request.path;
  const bool is_signed = request.headers.has("Authorization") || request.query.find("X-Amz-Signature=") != std::string::npos;
  if (path == "/v1/health") {
    co_await http::send_json(exchange, is_ready_ ? 200 : 503,
                             is_ready_   ? R"({"status":"ready"})"
                             : has_left_ ? R"({"status":"decommissioned"})"
                                         : R"({"status":"starting"})");
    co_return;
  }
  // Prometheus scrapes unsigned; a signed request for /metrics is S3 (a bucket "metrics").
  if (path == "/metrics" && !is_signed) {
    http::ResponseHead head;
    head.headers.set("Content-Type", "text/plain; version=0.0.4");
    std::ignore = co_await exchange.response().send(std::move(head), stats_.render());  // client gone
    co_return;
  }
  bool is_intra_cluster = false;
  if (auto value = request.headers.get(cluster::kClusterAuthHeader)) {
    const Status s = cluster_auth_->verify(*value, request.method_text, request.target,
                                           Clock::real().unix_nanos() / 1'000'000'000);
    if (!s.is_ok()) {
      SILO_LOG_WARN("refused {} {} from {}: {}", request.method_text, request.target, request.remote_address, s);
      co_await http::send_error(exchange, Status::permission_denied("{}", s.message()));
      co_return;
    }
    is_intra_cluster = true;
  }
  // Bucket names are at least 3 characters, so "/v1/..." is never S3.
  if (starts_with(path, "/v1/")) {
    co_await dispatch_native(exchange, is_intra_cluster);
  } else {
    co_await dispatch_s3(exchange, is_intra_cluster);
  }
}

http::Awaitable<void> Node::dispatch_s3(http::Exchange& exchange, bool is_intra_cluster) {
  const bool is_forwarded = is_intra_cluster && exchange.request().headers.has(http::kForwardedHeader);
  auto request = s3api::parse_s3_request(exchange.request(), *users_, config_.cluster.s3,
                                           Clock::real().unix_nanos() / 1'000'000'000);
  if (!request) {
    co_await s3api::send_s3_error(exchange, request.error(), s3::Subject::kService, nullptr);
    co_return;
  }
  // Relayed by another node, which checked the user's access where the request arrived
  // (with the client's address): not checked again.
  if (is_intra_cluster) request->subject.is_admin = true;
  // Relayed here by another node because this one owns the object: run it (the target
  // refuses to forward a second time, so differing maps cannot make a loop).
  if (is_forwarded && target_) {
    co_await target_->handle_s3(exchange, *request);
    co_return;
  }
  co_await proxy_->handle_s3(exchange, *request);
}

http::Awaitable<void> Node::dispatch_native(http::Exchange& exchange, bool is_intra_cluster) {
  const http::RequestHead& request = exchange.request();
  const std::string& path = request.path;
  const bool is_internal = starts_with(path, "/v1/internal/");
  NativeCaller caller;
  caller.is_intra_cluster = is_intra_cluster;
  const bool is_user_signed =
      request.headers.has("Authorization") || request.query.find("Signature=") != std::string::npos;
  if (!is_intra_cluster || is_user_signed) {
    // The native API takes the S3 keys: SigV4 in the header or the query. A request that
    // another node relays keeps its user's signature: the user is its subject (a bucket it
    // creates is its own), and the relaying node already checked its access.
    auto auth = s3api::authenticate(request, *users_, Clock::real().unix_nanos() / 1'000'000'000);
    if (!is_intra_cluster && (!auth || !*auth)) {
      // Named, not a ternary temporary inside co_await (docs/adr/0003).
      Status denied = Status::permission_denied("the native API needs a SigV4 signature with the cluster's keys");
      if (!auth) denied = Status::permission_denied("{}", auth.error().message());
      co_await http::send_error(exchange, denied);
      co_return;
    }
    if (auth && *auth) caller.subject = s3api::subject_of(request, *auth, *users_);
  }
  if (is_intra_cluster) caller.subject.is_admin = true;
  const bool is_admin = caller.subject.is_admin;
  // Internal endpoints: the nodes of the cluster, and admins (diagnostics, tests).
  if (is_internal && !is_admin) {
    co_await http::send_error(exchange, Status::permission_denied("{} is for the nodes of the cluster only", path));
    co_return;
  }
  std::string_view rest;
  const auto* handler = native_routes_.find(request.method, path, rest);
  if (handler == nullptr) {
    co_await send_no_such_endpoint(exchange);
    co_return;
  }
  co_await (*handler)(exchange, caller, rest);
}

void Node::add_native_routes() {
  using http::Method;
  using Exchange = http::Exchange;
  auto& routes = native_routes_;
  routes.add(std::nullopt, "/v1/cluster/map", [this](Exchange& exchange, const NativeCaller&, std::string_view) {
    return http::send_json(exchange, 200, wire::node_map_json(*maps_->node_map()));
  });
  routes.add(std::nullopt, "/v1/config", [this](Exchange& exchange, const NativeCaller& caller, std::string_view) {
    return proxy_->handle_config(exchange, config_.node, caller.subject.is_admin);
  });
  routes.add(Method::kPost, cluster::kKeepalivePath,
             [this](Exchange& exchange, const NativeCaller&, std::string_view) { return handle_keepalive(exchange); });
  routes.add(Method::kPost, cluster::kMetasyncPath,
             [this](Exchange& exchange, const NativeCaller&, std::string_view) { return handle_metasync(exchange); });
  routes.add(Method::kPost, cluster::kAttachPath,
             [this](Exchange& exchange, const NativeCaller&, std::string_view) { return handle_attach(exchange); });
  routes.add(Method::kPost, cluster::kLeavePath,
             [this](Exchange& exchange, const NativeCaller&, std::string_view) { return handle_leave(exchange); });
  if (target_) {
    routes.add(std::nullopt, cluster::kRebalancePath, [this](Exchange& exchange, const NativeCaller&, std::string_view) {
      return rebalance_->handle_progress(exchange);
    });
    routes.add(std::nullopt, std::string(cluster::kTasksPath) + "*",
               [this](Exchange& exchange, const NativeCaller&, std::string_view rest) {
                 return target_->handle_task(exchange, std::string(rest));
               });
    routes.add(std::nullopt, "/v1/internal/objects/*",
               [this](Exchange& exchange, const NativeCaller&, std::string_view rest) {
                 return replication_->handle_internal_object(exchange, rest);
               });
    routes.add(std::nullopt, "/v1/mountpaths**",
               [this](Exchange& exchange, const NativeCaller& caller, std::string_view rest) {
                 return mountpaths_->handle(exchange, rest, caller.subject.is_admin);
               });
    routes.add(std::nullopt, "/v1/internal/evict/*",
               [this](Exchange& exchange, const NativeCaller&, std::string_view rest) {
                 return target_->handle_evict(exchange, std::string(rest));
               });
    routes.add(std::nullopt, "/v1/internal/list/*", [this](Exchange& exchange, const NativeCaller&, std::string_view rest) {
      return target_->handle_list(exchange, std::string(rest));
    });
    routes.add(Method::kPost, "/v1/internal/batch", [this](Exchange& exchange, const NativeCaller&, std::string_view) {
      return owner_reads_->handle(exchange);
    });
    routes.add(std::nullopt, std::string(dsort::kWorkerPath) + "*",
               [this](Exchange& exchange, const NativeCaller&, std::string_view rest) {
                 return dsort_worker_->handle(exchange, rest);
               });
    routes.add(std::nullopt, "/v1/internal/uploads/*",
               [this](Exchange& exchange, const NativeCaller&, std::string_view rest) {
                 return target_->handle_list_uploads(exchange, std::string(rest));
               });
  }
  routes.add(std::nullopt, "/v1/objects/*", [this](Exchange& exchange, const NativeCaller& caller, std::string_view rest) {
    return route_object(exchange, rest, caller);
  });
  routes.add(Method::kPost, "/v1/batch", [this](Exchange& exchange, const NativeCaller& caller, std::string_view) {
    // Every entry is a read (s3:GetObject) of its object.
    return batch_->handle(exchange, [this, &caller](const wire::BatchEntry& entry) {
      const auto bucket = maps_->find_bucket(entry.bucket);
      if (!bucket) return Status::ok();  // the batch answers it missing
      access::Request wanted;
      wanted.action = "s3:GetObject";
      wanted.key = entry.name;
      return proxy_->authorize(caller.subject, *bucket, std::move(wanted));
    });
  });
  // /v1/buckets, /v1/users, /v1/cluster/nodes and /v1/jobs: a route per method and path
  // (after the object route, which the data path looks up first).
  proxy_->add_routes(routes, &NativeCaller::subject);
}

http::Awaitable<void> Node::route_object(http::Exchange& exchange, std::string_view rest, const NativeCaller& caller) {
  std::string bucket;
  std::string name;
  if (!split_object_path(rest, bucket, name)) {
    co_await send_no_such_endpoint(exchange);
    co_return;
  }
  // Forwarded by another node, which routed it and checked the caller's access: straight
  // to the target. The header alone, from a client, proves nothing.
  if (caller.is_intra_cluster && exchange.request().headers.has(http::kForwardedHeader) && target_) {
    co_await target_->handle_object(exchange, std::move(bucket), std::move(name));
  } else {
    co_await proxy_->handle_object(exchange, std::move(bucket), std::move(name), caller.subject);
  }
}

http::Awaitable<void> Node::send_no_such_endpoint(http::Exchange& exchange) {
  const http::RequestHead& request = exchange.request();
  co_await http::send_error(exchange, Status::not_found("no such endpoint: {} {} on a {} node", request.method_text,
                                                           request.path, config::role_name(config_.node.role)));
}

void Node::reload_tls(std::string_view why) {
  if (!server_->is_tls()) {
    SILO_LOG_INFO("{}: no TLS files to reload (plain HTTP)", why);
    return;
  }
  // The calls this node makes to its peers (the CA it trusts, the certificate it shows
  // them), then the server's side; the clients check every file the server uses, so a
  // bad file stops the reload before anything changed.
  Status s = data_client_->reload_tls();
  if (s.is_ok()) s = control_client_->reload_tls();
  if (s.is_ok()) s = server_->reload_tls();
  if (s.is_ok()) {
    SILO_LOG_INFO("{}: TLS certificate, key and CA reloaded", why);
  } else {
    SILO_LOG_ERROR("{}: TLS files not reloaded, the previous ones stay in use: {}", why, s);
  }
}

http::Awaitable<void> Node::watch_tls_files() {
  const config::TlsConfig& tls = config_.node.tls;
  // Modification time and size of each file (through symbolic links, as a mounted
  // Secret's are): a renewal changes them.
  const auto stamp = [&tls] {
    std::string out;
    for (const std::string& path : {tls.cert_file, tls.key_file, tls.ca_file}) {
      struct stat st {};
      if (!path.empty() && ::stat(path.c_str(), &st) == 0) {
        out += fmt::format("{}.{}:{};", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
      } else {
        out += "-;";
      }
    }
    return out;
  };
  std::string last = stamp();
  asio::steady_timer timer(io_);
  while (!is_stopping_) {
    timer.expires_after(std::chrono::seconds(10));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (const std::string now = stamp(); now != last) {
      last = now;
      reload_tls("TLS files changed");
    }
  }
}

int Node::run() {
  asio::signal_set signals(io_, SIGTERM, SIGINT);
  signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    SILO_LOG_INFO("signal {} received", signal);
    if (!is_stopping_.exchange(true)) asio::co_spawn(io_, shutdown(), asio::detached);
  });
  // SIGHUP: renewed TLS files are read again; connections accepted after use them.
  asio::signal_set reload_signals(io_, SIGHUP);
  std::function<void()> await_reload = [&] {
    reload_signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      reload_tls("SIGHUP");
      await_reload();
    });
  };
  await_reload();
  if (server_->is_tls()) asio::co_spawn(io_, watch_tls_files(), asio::detached);
  asio::co_spawn(io_, start(), asio::detached);
  std::vector<std::thread> threads;
  const uint32_t io_threads = config_.node.io_threads != 0 ? config_.node.io_threads : cpus::usable();
  SILO_LOG_INFO("{} network threads", io_threads);
  for (uint32_t i = 1; i < io_threads; ++i) threads.emplace_back([this] { io_.run(); });
  io_.run();
  for (auto& t : threads) t.join();
  return exit_code_;
}

}  // namespace silo::silod
