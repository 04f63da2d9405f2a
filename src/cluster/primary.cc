#include "cluster/primary.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "base/log.h"
#include "async/gather.h"
#include "async/sleep.h"
#include "wire/json.h"

namespace silo::cluster {
namespace {

namespace asio = boost::asio;

constexpr size_t kMaxControlBody = 16 * 1024 * 1024;

wire::NodeInfo* find_node(wire::NodeMap& map, const std::string& id) {
  for (auto& n : *map.mutable_nodes()) {
    if (n.id() == id) return &n;
  }
  return nullptr;
}

void sort_nodes(wire::NodeMap& map) {
  std::sort(map.mutable_nodes()->begin(), map.mutable_nodes()->end(),
            [](const auto& a, const auto& b) { return a.id() < b.id(); });
}

}  // namespace

http::Awaitable<Status> install_maps(ClusterMaps& maps, async::DiskExecutor& state_disk,
                                     const wire::NodeMap* node_map, const wire::BucketMap* bucket_map) {
  co_return co_await state_disk.run([&]() -> Status {
    // Buckets first: a node map that starts a rebalance for a bucket's new layout must find
    // that layout here when the walk starts.
    if (bucket_map != nullptr && bucket_map->version() > 0) RETURN_IF_ERROR(maps.install(*bucket_map).status());
    if (node_map != nullptr && node_map->version() > 0) RETURN_IF_ERROR(maps.install(*node_map).status());
    return Status::ok();
  });
}

Primary::Primary(ClusterMaps& maps, async::DiskExecutor& state_disk, std::shared_ptr<http::Client> client,
                 wire::NodeInfo self, config::ClusterConfig cluster, Clock& clock, JobRegistry& jobs,
                 MetaStore& meta)
    : maps_(maps),
      state_disk_(state_disk),
      client_(std::move(client)),
      self_(std::move(self)),
      cluster_(std::move(cluster)),
      clock_(clock),
      jobs_(jobs),
      meta_(meta) {}

void Primary::deactivate() { is_active_ = false; }

http::Awaitable<Status> Primary::start() {
  is_active_ = true;
  {
    // Every node already in the map gets a full timeout to check in before it is marked
    // down, counted from when it can have given up on the previous primary: its keepalive
    // to a primary that became unreachable fails only after kControlCallTimeout.
    MutexLock lock(seen_mutex_);
    for (const auto& n : maps_.node_map()->nodes()) last_seen_[n.id()] = clock_.now() + kControlCallTimeout;
  }
  const int64_t now = clock_.unix_nanos();
  const Status s = co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap&, Changed& changed) {
    wire::NodeInfo* me = find_node(nodes, self_.id());
    if (me == nullptr) {
      me = nodes.add_nodes();
      me->set_joined_unix_nanos(now);
    }
    const int64_t joined = me->joined_unix_nanos();
    *me = self_;
    me->set_joined_unix_nanos(joined);
    me->set_state(wire::NODE_STATE_ONLINE);
    sort_nodes(nodes);
    changed.node_map = true;  // a new version also announces that the primary is back
    return Status::ok();
  });
  if (!s.is_ok()) is_active_ = false;
  co_return s;
}

void Primary::stop() {
  stopping_ = true;
  async::cancel(timer_);
  async::cancel(rebalance_timer_);
}

http::Awaitable<void> Primary::watch_keepalives() {
  while (!stopping_) {
    co_await async::pause(timer_, cluster_.keepalive_interval);
    if (stopping_) break;
    if (!is_active()) continue;
    std::vector<std::string> silent;
    size_t others = 0;
    std::chrono::steady_clock::duration quiet{};  // since the last keepalive from any other online node
    {
      MutexLock lock(seen_mutex_);
      const auto now = clock_.now();
      std::optional<Clock::TimePoint> newest;
      for (const auto& n : maps_.node_map()->nodes()) {
        if (n.id() == self_.id() || n.state() != wire::NODE_STATE_ONLINE) continue;
        ++others;
        auto [it, inserted] = last_seen_.try_emplace(n.id(), now);
        if (!newest || it->second > *newest) newest = it->second;
        if (!inserted && now - it->second > cluster_.keepalive_timeout) silent.push_back(n.id());
      }
      if (newest) quiet = now - *newest;
    }
    // Every node sends a keepalive each interval, so silence from all of two or more means
    // this node is cut off far more likely than that they all failed at once. Marking them
    // down would stop the data path everywhere (the others install the map from etcd), so
    // none is; with etcd the role goes to a proxy that reaches them.
    if (others >= 2 && quiet > 2 * cluster_.keepalive_interval) {
      const auto quiet_ms = std::chrono::duration_cast<std::chrono::milliseconds>(quiet).count();
      if (!std::exchange(hears_nobody_, true)) {
        SILO_LOG_WARN("heard from none of the {} other nodes for {} ms: this node may be cut off; marking none down",
                      others, quiet_ms);
      }
      if (quiet > cluster_.keepalive_timeout &&
          meta_.give_up(fmt::format("heard from none of the {} other nodes for {} ms", others, quiet_ms),
                        3 * cluster_.meta_store.primary_lease)) {
        hears_nobody_ = false;
      }
      continue;
    }
    hears_nobody_ = false;
    if (silent.empty()) continue;
    const Status s = co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap&, Changed& changed) {
      for (const auto& id : silent) {
        wire::NodeInfo* n = find_node(nodes, id);
        if (n == nullptr || n->state() != wire::NODE_STATE_ONLINE) continue;
        SILO_LOG_WARN("node {} missed its keepalives for {} ms: marking it down", id,
                      cluster_.keepalive_timeout.count());
        n->set_state(wire::NODE_STATE_DOWN);
        changed.node_map = true;
      }
      return Status::ok();
    });
    if (!s.is_ok()) SILO_LOG_ERROR("marking nodes down failed: {}", s);
  }
}

http::Awaitable<Result<wire::KeepaliveResponse>> Primary::keepalive(const wire::KeepaliveRequest& request) {
  const wire::NodeInfo& node = request.node();
  if (node.id().empty() || node.url().empty() ||
      (node.role() != wire::NODE_ROLE_PROXY && node.role() != wire::NODE_ROLE_TARGET &&
       node.role() != wire::NODE_ROLE_ALL)) {
    co_return Status::invalid_argument("keepalive needs a node id, url and role");
  }
  if (node.id() == self_.id()) {
    co_return Status::already_exists("node id {} is the primary's own id", node.id());
  }
  {
    MutexLock lock(seen_mutex_);
    last_seen_[node.id()] = clock_.now();
  }
  const auto current = maps_.node_map();
  const wire::NodeInfo* known = nullptr;
  for (const auto& n : current->nodes()) {
    if (n.id() == node.id()) known = &n;
  }
  const bool needs_update = known == nullptr || known->url() != node.url() || known->role() != node.role() ||
                            known->state() == wire::NODE_STATE_DOWN;
  // A node that holds a newer map than the primary (the primary lost its state) makes the
  // primary jump past it, since nodes refuse versions older than their own.
  const bool behind = !meta_.has_external_versions() && (request.node_map_version() > current->version() ||
                                                         request.bucket_map_version() > maps_.bucket_map()->version());
  if (needs_update || behind) {
    const int64_t now = clock_.unix_nanos();
    CO_RETURN_IF_ERROR(co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap& buckets, Changed& changed) {
      wire::NodeInfo* n = find_node(nodes, node.id());
      if (n == nullptr) {
        n = nodes.add_nodes();
        n->set_id(node.id());
        n->set_joined_unix_nanos(now);
        n->set_state(wire::NODE_STATE_ONLINE);
        SILO_LOG_INFO("node {} ({}, {}) joins", node.id(), wire::role_name(node.role()), node.url());
      } else if (n->state() == wire::NODE_STATE_DOWN) {
        SILO_LOG_INFO("node {} is back online", node.id());
        n->set_state(wire::NODE_STATE_ONLINE);
      }
      n->set_role(node.role());
      n->set_url(node.url());
      sort_nodes(nodes);
      changed.node_map = true;
      if (request.node_map_version() >= nodes.version()) nodes.set_version(request.node_map_version());
      if (request.bucket_map_version() > buckets.version()) {
        // Our bucket map is older than a node's: re-issue ours past it. The node's extra
        // buckets (if any) are lost to this primary; it logs so an operator can tell.
        SILO_LOG_WARN("node {} holds bucket map v{} newer than the primary's v{}", node.id(),
                      request.bucket_map_version(), buckets.version());
        buckets.set_version(request.bucket_map_version());
        changed.bucket_map = true;
      }
      return Status::ok();
    }));
  }
  wire::KeepaliveResponse response;
  const auto node_map = maps_.node_map();
  const auto bucket_map = maps_.bucket_map();
  if (request.node_map_version() < node_map->version()) *response.mutable_node_map() = *node_map;
  if (request.bucket_map_version() < bucket_map->version()) *response.mutable_bucket_map() = *bucket_map;
  co_return response;
}

Status Primary::check_layout(const wire::NodeMap& nodes, const wire::BucketProps& props) {
  const size_t owners = owner_ids(nodes).size();
  const size_t needed = wire::holder_count(props);
  if (needed > 1 && needed > owners) {
    const std::string what = wire::is_erasure_coded(props)
                                 ? fmt::format("ec {}+{}", props.ec().data(), props.ec().parity())
                                 : fmt::format("copies={}", wire::copies_of(props));
    return Status::invalid_argument("{} needs {} targets in normal mode; the cluster has {}", what, needed, owners);
  }
  return Status::ok();
}

std::optional<wire::Bucket> Primary::bucket_now(const std::string& name) const { return maps_.find_bucket(name); }

http::Awaitable<Result<wire::Bucket>> Primary::create_bucket(std::string name, wire::BucketProps props) {
  const int64_t now = clock_.unix_nanos();
  CO_RETURN_IF_ERROR(co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap& buckets, Changed& changed) {
    for (const auto& b : buckets.buckets()) {
      if (b.name() == name) return Status::already_exists("bucket {} already exists", name);
    }
    if (Status bad = check_layout(nodes, props); !bad.is_ok()) return bad;  // (no macro: nested in one)
    wire::Bucket* b = buckets.add_buckets();
    b->set_name(name);
    b->set_id(std::max<uint64_t>(buckets.next_bucket_id(), 1));
    buckets.set_next_bucket_id(b->id() + 1);
    *b->mutable_props() = props;
    b->set_created_unix_nanos(now);
    std::sort(buckets.mutable_buckets()->begin(), buckets.mutable_buckets()->end(),
              [](const auto& x, const auto& y) { return x.name() < y.name(); });
    changed.bucket_map = true;
    return Status::ok();
  }));
  auto bucket = bucket_now(name);
  if (!bucket) co_return Status::aborted("bucket {} was deleted while being created", name);
  co_return *bucket;
}

http::Awaitable<Status> Primary::set_bucket_deleting(std::string name, bool is_deleting) {
  co_return co_await mutate([&](wire::NodeMap&, wire::BucketMap& buckets, Changed& changed) {
    for (auto& b : *buckets.mutable_buckets()) {
      if (b.name() != name) continue;
      changed.bucket_map = b.is_deleting() != is_deleting;
      b.set_is_deleting(is_deleting);
      return Status::ok();
    }
    return Status::not_found("bucket {} does not exist", name);
  });
}

http::Awaitable<Status> Primary::put_user(wire::User user) {
  user.set_created_unix_nanos(clock_.unix_nanos());
  co_return co_await mutate([&](wire::NodeMap&, wire::BucketMap& buckets, Changed& changed) {
    auto* list = buckets.mutable_users();
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& u) { return u.access_key() == user.access_key(); });
    if (it != list->end()) {
      *it = user;
    } else {
      *list->Add() = user;
      std::sort(list->begin(), list->end(), [](const auto& x, const auto& y) { return x.access_key() < y.access_key(); });
    }
    changed.bucket_map = true;
    return Status::ok();
  });
}

http::Awaitable<Result<config::ClusterConfig>> Primary::set_config(std::string patch) {
  config::ClusterConfig effective = cluster_;
  std::string overrides;
  const Status s = co_await mutate([&](wire::NodeMap&, wire::BucketMap& buckets, Changed& changed) {
    ASSIGN_OR_RETURN(overrides, config::merge_overrides(buckets.config_overrides(), patch));
    effective = cluster_;  // from the file again: a retried mutation must not stack
    RETURN_IF_ERROR(config::apply_overrides(effective, overrides));
    if (overrides != buckets.config_overrides()) {
      buckets.set_config_overrides(overrides);
      changed.bucket_map = true;
    }
    return Status::ok();
  });
  if (!s.is_ok()) co_return s;
  SILO_LOG_INFO("config: run-time overrides now {}", overrides.empty() ? "none" : config::mask_overrides(overrides));
  co_return effective;
}

http::Awaitable<Status> Primary::delete_user(std::string access_key) {
  co_return co_await mutate([&](wire::NodeMap&, wire::BucketMap& buckets, Changed& changed) {
    auto* list = buckets.mutable_users();
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& u) { return u.access_key() == access_key; });
    if (it == list->end()) return Status::not_found("user {} does not exist", access_key);
    list->erase(it);
    changed.bucket_map = true;
    return Status::ok();
  });
}

http::Awaitable<Status> Primary::delete_bucket(std::string name) {
  co_return co_await mutate([&](wire::NodeMap&, wire::BucketMap& buckets, Changed& changed) {
    auto* list = buckets.mutable_buckets();
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& b) { return b.name() == name; });
    if (it == list->end()) return Status::not_found("bucket {} does not exist", name);
    list->erase(it);
    changed.bucket_map = true;
    return Status::ok();
  });
}

http::Awaitable<Result<wire::Bucket>> Primary::set_bucket_props(std::string name, wire::BucketProps props) {
  CO_RETURN_IF_ERROR(co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap& buckets, Changed& changed) {
    for (auto& b : *buckets.mutable_buckets()) {
      if (b.name() == name) {
        if (Status bad = check_layout(nodes, props); !bad.is_ok()) return bad;  // (no macro: nested in one)
        // Objects already in the bucket get the new layout by a rebalance: more or fewer
        // copies, or re-encoding (copies <-> ec, k+m -> k'+m', a new min_size).
        if (!wire::same_layout(props, b.props())) changed.node_map = changed.layout = true;
        *b.mutable_props() = props;
        changed.bucket_map = true;
        return Status::ok();
      }
    }
    return Status::not_found("bucket {} does not exist", name);
  }));
  auto bucket = bucket_now(name);
  if (!bucket) co_return Status::not_found("bucket {} does not exist", name);
  co_return *bucket;
}

http::Awaitable<Result<wire::NodeMap>> Primary::set_node_mode(std::string id, wire::NodeMode mode) {
  if (id == self_.id()) {
    co_return Status::failed_precondition("node {} is the primary; start another proxy first and stop this one", id);
  }
  CO_RETURN_IF_ERROR(co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap&, Changed& changed) {
    wire::NodeInfo* n = find_node(nodes, id);
    if (n == nullptr) return Status::not_found("node {} is not in the cluster", id);
    if (n->mode() == wire::NODE_MODE_DECOMMISSIONING && mode != wire::NODE_MODE_DECOMMISSIONING) {
      return Status::failed_precondition("node {} is being decommissioned; that cannot be undone", id);
    }
    if (n->mode() == mode) return Status::ok();
    SILO_LOG_INFO("node {}: mode {} -> {}", id, wire::mode_name(n->mode()), wire::mode_name(mode));
    n->set_mode(mode);
    changed.node_map = true;
    return Status::ok();
  }));
  co_return *maps_.node_map();
}

http::Awaitable<Result<wire::NodeMap>> Primary::add_node(std::string url) {
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(url));
  http::ClientRequest req;
  req.method = http::Method::kPost;
  req.target = kAttachPath;
  auto answer = co_await client_->call(to, std::move(req), self_.url(), kMaxControlBody);
  if (!answer) co_return Status::unavailable("node at {} does not answer: {}", url, answer.error().message());
  if (answer->status != 200) {
    co_return Status::failed_precondition("node at {} refused to join (HTTP {}): {}", url, answer->status,
                                          answer->body);
  }
  co_return *maps_.node_map();
}

http::Awaitable<Result<wire::NodeMap>> Primary::remove_node(std::string id) {
  if (id == self_.id()) co_return Status::failed_precondition("node {} is the primary", id);
  CO_RETURN_IF_ERROR(co_await mutate([&](wire::NodeMap& nodes, wire::BucketMap&, Changed& changed) {
    auto* list = nodes.mutable_nodes();
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& n) { return n.id() == id; });
    if (it == list->end()) return Status::not_found("node {} is not in the cluster", id);
    if (it->state() != wire::NODE_STATE_DOWN) {
      return Status::failed_precondition(
          "node {} is {}: only a down node can be removed (decommission a live one, which moves its objects off)",
          id, wire::state_name(it->state()));
    }
    SILO_LOG_WARN("node {} removed from the cluster while down: its objects are lost unless copies exist", id);
    list->erase(it);
    changed.node_map = true;
    return Status::ok();
  }));
  {
    MutexLock lock(seen_mutex_);
    last_seen_.erase(id);
  }
  co_return *maps_.node_map();
}

http::Awaitable<Status> Primary::mutate(Change change) {
  if (!is_active()) co_return Status::unavailable("node {} is not the primary (any more); retry", self_.id());
  auto changed = co_await state_disk_.run([&]() -> Result<Changed> {
    MutexLock lock(mutation_mutex_);
    wire::NodeMap nodes = *maps_.node_map();
    wire::BucketMap buckets = *maps_.bucket_map();
    Changed c;
    RETURN_IF_ERROR(change(nodes, buckets, c));
    if (!c.node_map && !c.bucket_map) return c;
    bool starts_rebalance = false;
    if (c.node_map) {
      nodes.set_primary_id(self_.id());
      // A change of the object owners, or of a bucket's layout, starts a rebalance,
      // preempting one that runs.
      if (c.layout || owner_ids(nodes) != owner_ids(*maps_.node_map())) {
        nodes.set_rebalance_id(nodes.rebalance_id() + 1);
        nodes.set_rebalance_phase(wire::REBALANCE_PHASE_COPY);
        starts_rebalance = true;
      }
    }
    RETURN_IF_ERROR(meta_.commit(c.node_map ? &nodes : nullptr, c.bucket_map ? &buckets : nullptr));
    if (c.bucket_map) RETURN_IF_ERROR(maps_.install(buckets).status());  // first, as in install_maps
    if (c.node_map) {
      if (starts_rebalance) {
        SILO_LOG_INFO("object owners change with node map v{}: {} starts", nodes.version(),
                      rebalance_job_id(nodes.rebalance_id()));
      }
      RETURN_IF_ERROR(maps_.install(nodes).status());
      RETURN_IF_ERROR(note_rebalance(nodes));
    }
    return c;
  });
  if (!changed) co_return std::move(changed).error();
  if (changed->node_map || changed->bucket_map) co_await push_maps();
  co_return Status::ok();
}

http::Awaitable<void> Primary::push_maps() {
  wire::MetasyncRequest request;
  *request.mutable_node_map() = *maps_.node_map();
  *request.mutable_bucket_map() = *maps_.bucket_map();
  const std::string body = wire::encode(request);
  std::vector<std::function<http::Awaitable<Status>()>> pushes;
  for (const auto& n : request.node_map().nodes()) {
    if (n.id() == self_.id() || n.state() == wire::NODE_STATE_DOWN) continue;
    pushes.push_back([this, node = n, &body]() -> http::Awaitable<Status> {
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest req;
      req.method = http::Method::kPost;
      req.target = kMetasyncPath;
      req.headers.set("Content-Type", "application/x-protobuf");
      CO_ASSIGN_OR_RETURN(auto response, co_await client_->call(to, std::move(req), body, kMaxControlBody));
      if (response.status != 200) {
        co_return Status::unavailable("metasync to {} answered {}: {}", node.id(), response.status, response.body);
      }
      co_return Status::ok();
    });
  }
  const size_t count = pushes.size();
  const auto results = co_await async::gather<Status>(std::move(pushes));
  for (size_t i = 0; i < count; ++i) {
    // A node that missed a push catches up with its next keepalive.
    if (!results[i].is_ok()) SILO_LOG_WARN("metasync: {}", results[i]);
  }
}

Member::Member(ClusterMaps& maps, async::DiskExecutor& state_disk, std::shared_ptr<http::Client> client,
               wire::NodeInfo self, std::optional<http::Endpoint> seed, config::ClusterConfig cluster)
    : maps_(maps),
      state_disk_(state_disk),
      client_(std::move(client)),
      self_(std::move(self)),
      seed_(std::move(seed)),
      cluster_(std::move(cluster)) {}

void Member::set_seed(http::Endpoint seed) {
  MutexLock lock(seed_mutex_);
  seed_ = std::move(seed);
}

bool Member::has_seed() const {
  MutexLock lock(seed_mutex_);
  return seed_.has_value();
}

http::Awaitable<Status> Member::sync() {
  const auto map = maps_.node_map();
  std::optional<http::Endpoint> seed;
  {
    MutexLock lock(seed_mutex_);
    seed = seed_;
  }
  std::vector<http::Endpoint> candidates;
  const auto add = [&](const std::string& url) {
    if (auto to = http::Endpoint::parse(url)) {
      const bool is_new = std::none_of(candidates.begin(), candidates.end(),
                                       [&](const auto& c) { return c.to_string() == to->to_string(); });
      if (is_new) candidates.push_back(*to);
    }
  };
  for (const auto& n : map->nodes()) {
    if (n.id() == map->primary_id() && n.id() != self_.id()) add(n.url());
  }
  if (seed) add(seed->url());
  for (const auto& n : map->nodes()) {
    const bool is_proxy = n.role() == wire::NODE_ROLE_PROXY || n.role() == wire::NODE_ROLE_ALL;
    if (is_proxy && n.id() != self_.id() && n.state() != wire::NODE_STATE_DOWN) add(n.url());
  }
  Status last = Status::unavailable("no primary known yet (no node map, no node.primary_url)");
  for (const auto& to : candidates) {
    last = co_await sync_with(to);
    if (last.is_ok()) break;
  }
  co_return last;
}

http::Awaitable<Status> Member::sync_with(const http::Endpoint& primary, bool follows) {
  wire::KeepaliveRequest request;
  *request.mutable_node() = self_;
  request.set_node_map_version(maps_.node_map()->version());
  request.set_bucket_map_version(maps_.bucket_map()->version());
  http::ClientRequest req;
  req.method = http::Method::kPost;
  req.target = kKeepalivePath;
  req.headers.set("Content-Type", "application/x-protobuf");
  CO_ASSIGN_OR_RETURN(auto answer, co_await client_->call(primary, std::move(req), wire::encode(request),
                                                          kMaxControlBody));
  if (answer.status != 200) {
    const std::optional<std::string_view> named = answer.headers.get(kPrimaryUrlHeader);
    if (follows && answer.status == 409 && named) {
      auto next = http::Endpoint::parse(*named);
      if (next && next->to_string() != primary.to_string()) co_return co_await sync_with(*next, false);
    }
    co_return Status::unavailable("primary {} answered keepalive with {}: {}", primary.to_string(),
                                  answer.status, answer.body);
  }
  CO_ASSIGN_OR_RETURN(auto response, wire::decode<wire::KeepaliveResponse>(answer.body, wire::Source::kNetwork));
  co_return co_await install_maps(maps_, state_disk_,
                                  response.has_node_map() ? &response.node_map() : nullptr,
                                  response.has_bucket_map() ? &response.bucket_map() : nullptr);
}

http::Awaitable<void> Member::run(std::function<bool()> is_primary) {
  bool was_ok = true;
  while (!stopping_) {
    co_await async::pause(timer_, cluster_.keepalive_interval);
    if (stopping_) break;
    if (is_primary && is_primary()) continue;
    const Status s = co_await sync();
    if (!s.is_ok() && was_ok) SILO_LOG_WARN("keepalive to the primary failed (will retry): {}", s);
    if (s.is_ok() && !was_ok) SILO_LOG_INFO("keepalive to the primary works again");
    was_ok = s.is_ok();
  }
}

void Member::stop() {
  stopping_ = true;
  async::cancel(timer_);
}

}  // namespace silo::cluster
