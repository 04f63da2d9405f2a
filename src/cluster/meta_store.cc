#include "cluster/meta_store.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_future.hpp>

#include "base/log.h"
#include "async/sleep.h"

namespace silo::cluster {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ticks_now() { return Clock::now().time_since_epoch().count(); }

// A map as etcd holds it: without a version (its mod revision is the version).
template <typename Map>
std::string stored(Map map) {
  map.set_version(0);
  return wire::encode(std::move(map));
}

// The map a key holds when it is newer than `current`; its version is the mod revision.
template <typename Map>
std::optional<Map> newer_map(const EtcdKv& kv, uint64_t current) {
  if (static_cast<uint64_t>(kv.mod_revision) <= current) return std::nullopt;
  auto map = wire::decode<Map>(kv.value, wire::Source::kNetwork);
  if (!map) {
    SILO_LOG_ERROR("etcd {}: {}", kv.key, map.error());
    return std::nullopt;
  }
  map->set_version(kv.mod_revision);
  return std::move(*map);
}

}  // namespace

Status LocalMetaStore::commit(wire::NodeMap* nodes, wire::BucketMap* buckets) {
  if (nodes != nullptr) nodes->set_version(nodes->version() + 1);
  if (buckets != nullptr) buckets->set_version(buckets->version() + 1);
  return Status::ok();
}

EtcdMetaStore::EtcdMetaStore(std::shared_ptr<http::Client> http, const config::MetaStoreConfig& config,
                             wire::NodeInfo self, ClusterMaps& maps, boost::asio::any_io_executor executor)
    : etcd_(std::move(http),
            [&config] {
              std::vector<http::Endpoint> endpoints;
              for (const auto& url : config.etcd_endpoints) {
                if (auto e = http::Endpoint::parse(url)) endpoints.push_back(*e);
              }
              return endpoints;
            }()),
      config_(config),
      self_(std::move(self)),
      maps_(maps),
      executor_(std::move(executor)),
      primary_key_(config.etcd_prefix + "/primary"),
      node_map_key_(config.etcd_prefix + "/maps/node"),
      bucket_map_key_(config.etcd_prefix + "/maps/bucket") {}

Clock::duration EtcdMetaStore::authority() const {
  return std::chrono::duration_cast<Clock::duration>(config_.primary_lease) * 2 / 3;
}

bool EtcdMetaStore::is_authoritative() const {
  if (!is_leader_ || must_resign_) return false;
  return Clock::now().time_since_epoch().count() - renewed_at_.load() < authority().count();
}

std::string EtcdMetaStore::primary_id() const {
  MutexLock lock(mutex_);
  return primary_id_;
}

http::Awaitable<void> EtcdMetaStore::resign() {
  stopping_ = true;
  async::cancel(timer_);
  if (!is_leader_.exchange(false)) co_return;
  SILO_LOG_INFO("resigning as primary");
  std::ignore = co_await etcd_.revoke(lease_);
}

http::Awaitable<void> EtcdMetaStore::run(Hooks hooks) {
  hooks_ = std::move(hooks);
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(config_.primary_lease) / 6;
  while (!stopping_) {
    if (is_leader_) {
      co_await renew();
    } else {
      co_await follow();
      if (!stopping_ && primary_id().empty() && ticks_now() >= no_campaign_before_.load()) co_await campaign();
    }
    co_await async::pause(timer_, period);
  }
}

http::Awaitable<void> EtcdMetaStore::follow() {
  auto kvs = co_await etcd_.get_prefix(config_.etcd_prefix + "/");
  if (!kvs) {
    SILO_LOG_DEBUG("etcd: {}", kvs.error());
    co_return;
  }
  std::string primary;
  std::optional<wire::NodeMap> nodes;
  std::optional<wire::BucketMap> buckets;
  for (const auto& kv : *kvs) {
    if (kv.key == primary_key_) {
      primary = kv.value;
    } else if (kv.key == node_map_key_) {
      nodes = newer_map<wire::NodeMap>(kv, maps_.node_map()->version());
    } else if (kv.key == bucket_map_key_) {
      buckets = newer_map<wire::BucketMap>(kv, maps_.bucket_map()->version());
    }
  }
  {
    MutexLock lock(mutex_);
    primary_id_ = primary;
  }
  if (nodes || buckets) co_await hooks_.install(std::move(nodes), std::move(buckets));
}

http::Awaitable<void> EtcdMetaStore::campaign() {
  const int64_t sent = ticks_now();  // the lease's time starts at the grant
  auto lease = co_await etcd_.grant_lease(config_.primary_lease.count());
  if (!lease) {
    SILO_LOG_WARN("etcd: cannot campaign for primary: {}", lease.error());
    co_return;
  }
  std::vector<EtcdCompare> compares;
  compares.push_back({primary_key_, EtcdCompare::Target::kCreateRevision, 0, ""});
  std::vector<EtcdPut> puts;
  puts.push_back({primary_key_, self_.id(), *lease});
  auto won = co_await etcd_.txn(std::move(compares), std::move(puts));
  if (!won || !won->succeeded) {
    std::ignore = co_await etcd_.revoke(*lease);
    co_return;
  }
  lease_ = *lease;
  leadership_revision_ = won->revision;
  renewed_at_ = sent;
  must_resign_ = false;
  {
    MutexLock lock(mutex_);
    primary_id_ = self_.id();
  }
  // The newest maps first: only then may this node change them.
  co_await follow();
  is_leader_ = true;
  SILO_LOG_INFO("elected primary through etcd (lease {:x}, revision {})", *lease, won->revision);
  // Taking the role pushes the maps to every node, which can take a while; the lease must
  // be renewed meanwhile, so it runs beside this loop.
  boost::asio::co_spawn(executor_, take_role(), boost::asio::detached);
}

http::Awaitable<void> EtcdMetaStore::take_role() {
  const Status s = co_await hooks_.elected();
  if (s.is_ok() || !is_leader_) co_return;
  SILO_LOG_ERROR("could not take the primary role: {}", s);
  step_down("taking the role failed");
  std::ignore = co_await etcd_.revoke(lease_);
}

http::Awaitable<void> EtcdMetaStore::renew() {
  if (must_resign_) {
    // A commit whose outcome is unknown (or that etcd refused): our maps may be behind
    // etcd's. Give the role up; whoever wins next (maybe us) reads etcd first.
    step_down("a change could not be committed to etcd; re-electing to read the maps again");
    std::ignore = co_await etcd_.revoke(lease_);
    co_return;
  }
  const int64_t sent = ticks_now();
  const Status s = co_await etcd_.keep_alive(lease_);
  if (s.is_ok()) {
    if (is_leader_) renewed_at_ = sent;
  } else if (s.code() == Code::kNotFound) {
    step_down("the lease expired");
    co_return;
  }
  if (!is_authoritative() && is_leader_) {
    step_down(fmt::format("the lease could not be renewed for {} ms ({})",
                                 std::chrono::duration_cast<std::chrono::milliseconds>(authority()).count(),
                                 s.is_ok() ? "late" : s.message()));
  }
}

bool EtcdMetaStore::give_up(std::string_view why, std::chrono::milliseconds hold_off) {
  if (!is_leader_) return false;
  no_campaign_before_ = ticks_now() + std::chrono::duration_cast<Clock::duration>(hold_off).count();
  step_down(why);
  // Revoked now, not when the lease ends: the others take over within one poll.
  boost::asio::co_spawn(executor_, revoke(lease_.load()), boost::asio::detached);
  return true;
}

http::Awaitable<void> EtcdMetaStore::revoke(int64_t lease) { std::ignore = co_await etcd_.revoke(lease); }

void EtcdMetaStore::step_down(std::string_view why) {
  if (!is_leader_.exchange(false)) return;
  SILO_LOG_WARN("no longer the primary: {}", why);
  {
    MutexLock lock(mutex_);
    primary_id_.clear();
  }
  hooks_.deposed();
}

http::Awaitable<std::optional<Result<EtcdTxnResult>>> EtcdMetaStore::txn_for_future(std::vector<EtcdCompare> compares,
                                                                                   std::vector<EtcdPut> puts) {
  co_return co_await etcd_.txn(std::move(compares), std::move(puts));
}

Status EtcdMetaStore::commit(wire::NodeMap* nodes, wire::BucketMap* buckets) {
  if (!is_authoritative()) return Status::failed_precondition("this proxy is not the primary (etcd lease)");
  std::vector<EtcdCompare> compares;
  std::vector<EtcdPut> puts;
  compares.push_back({primary_key_, EtcdCompare::Target::kCreateRevision, leadership_revision_.load(), ""});
  if (nodes != nullptr) {
    compares.push_back({node_map_key_, EtcdCompare::Target::kModRevision, static_cast<int64_t>(nodes->version()), ""});
    puts.push_back({node_map_key_, stored(*nodes), 0});
  }
  if (buckets != nullptr) {
    compares.push_back(
        {bucket_map_key_, EtcdCompare::Target::kModRevision, static_cast<int64_t>(buckets->version()), ""});
    puts.push_back({bucket_map_key_, stored(*buckets), 0});
  }
  // use_future needs a default-constructible result: an optional around it.
  std::future<std::optional<Result<EtcdTxnResult>>> pending = boost::asio::co_spawn(
      executor_, txn_for_future(std::move(compares), std::move(puts)), boost::asio::use_future);
  // etcd calls time out on their own; this only bounds a stop of the io threads meanwhile.
  if (pending.wait_for(std::chrono::seconds(15)) != std::future_status::ready) {
    must_resign_ = true;
    return Status::unavailable("etcd's answer did not come within 15 s; retry");
  }
  Result<EtcdTxnResult> result = *pending.get();
  if (!result) {
    must_resign_ = true;  // it may have been applied: our maps may be behind etcd's now
    return Status::unavailable("committing to etcd: {}; the primary role is being re-elected, retry",
                               result.error().message());
  }
  if (!result->succeeded) {
    must_resign_ = true;
    return Status::unavailable(
        "etcd refused the change: this proxy lost the primary role or its maps are behind; retry");
  }
  if (nodes != nullptr) nodes->set_version(result->revision);
  if (buckets != nullptr) buckets->set_version(result->revision);
  return Status::ok();
}

}  // namespace silo::cluster
