#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "base/mutex.h"
#include "cluster/cluster_maps.h"
#include "cluster/etcd.h"
#include "config/config.h"

namespace silo::cluster {

// Where the primary's changes to the node map and bucket map become the cluster's
// (DESIGN.md "Control plane"; docs/membership-and-rebalance.md "HA").
class MetaStore {
 public:
  virtual ~MetaStore() = default;
  // Makes the changed maps (null: unchanged) the cluster's and sets their versions.
  // Called by the primary under its mutation lock on the state disk thread: blocking.
  // kFailedPrecondition when this node may no longer act as primary (deposed, cut off)
  // or the stored maps are not those the change started from; nothing changed then.
  virtual Status commit(wire::NodeMap* nodes, wire::BucketMap* buckets) = 0;
  // Whether this node may act as primary right now.
  virtual bool is_authoritative() const = 0;
  // Versions come from the store (etcd revisions), not from counting up here.
  virtual bool has_external_versions() const = 0;
  // The primary hears from none of the other nodes, so it is likely cut off itself: gives
  // the role up so that a proxy that reaches them takes over, and campaigns again only
  // after `hold_off`. false where no other proxy can take over (local) or not primary.
  virtual bool give_up(std::string_view why, std::chrono::milliseconds hold_off) = 0;
};

// `local`: the first proxy is the primary for good; versions count up by one.
class LocalMetaStore final : public MetaStore {
 public:
  Status commit(wire::NodeMap* nodes, wire::BucketMap* buckets) override;
  bool is_authoritative() const override { return true; }
  bool has_external_versions() const override { return false; }
  bool give_up(std::string_view, std::chrono::milliseconds) override { return false; }
};

// `etcd`: proxies campaign for primary with a lease on <prefix>/primary; the maps live in
// <prefix>/maps/node and <prefix>/maps/bucket, their versions are etcd mod revisions, and
// every write is a transaction that holds only while this node's lease holds the primary
// key and the maps are those it read. A primary that could not renew its lease for 2/3 of
// its TTL stops acting as one before the lease can expire at etcd: at no time do two
// proxies act as primary, and no deposed one can commit a map.
class EtcdMetaStore final : public MetaStore {
 public:
  struct Hooks {
    // Maps in etcd newer than this node's (each may be null); installs them.
    std::function<http::Awaitable<void>(std::optional<wire::NodeMap>, std::optional<wire::BucketMap>)> install;
    // This node won the election (the newest maps are installed): take the primary role.
    // An error resigns.
    std::function<http::Awaitable<Status>()> elected;
    // This node lost the role (or gave it up).
    std::function<void()> deposed;
  };

  EtcdMetaStore(std::shared_ptr<http::Client> http, const config::MetaStoreConfig& config, wire::NodeInfo self,
                ClusterMaps& maps, boost::asio::any_io_executor executor);

  // Campaigns, renews the lease, and follows the maps in etcd, until stop().
  http::Awaitable<void> run(Hooks hooks);
  // Stops run() and, when primary, gives the role up at once (revokes the lease) so that
  // another proxy takes over without waiting for the lease to end.
  http::Awaitable<void> resign();

  Status commit(wire::NodeMap* nodes, wire::BucketMap* buckets) override;
  bool is_authoritative() const override;
  bool has_external_versions() const override { return true; }
  bool give_up(std::string_view why, std::chrono::milliseconds hold_off) override;
  // The primary's id as etcd says (empty when none or not known yet).
  std::string primary_id() const;

 private:
  http::Awaitable<void> follow();
  http::Awaitable<void> campaign();
  http::Awaitable<void> renew();
  // hooks_.elected(); resigns when it fails. Runs beside run().
  http::Awaitable<void> take_role();
  void step_down(std::string_view why);
  http::Awaitable<void> revoke(int64_t lease);
  std::chrono::steady_clock::duration authority() const;
  http::Awaitable<std::optional<Result<EtcdTxnResult>>> txn_for_future(std::vector<EtcdCompare> compares,
                                                                       std::vector<EtcdPut> puts);  // how long a renewal keeps us primary

  EtcdClient etcd_;
  const config::MetaStoreConfig config_;
  const wire::NodeInfo self_;
  ClusterMaps& maps_;
  boost::asio::any_io_executor executor_;
  const std::string primary_key_;
  const std::string node_map_key_;
  const std::string bucket_map_key_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> is_leader_{false};
  std::atomic<bool> must_resign_{false};  // a commit failed: step down at the next renewal
  std::atomic<int64_t> lease_{0};
  std::atomic<int64_t> leadership_revision_{0};  // create revision of our primary key
  std::atomic<int64_t> renewed_at_{0};           // steady clock ticks when the last renewal was sent
  std::atomic<int64_t> no_campaign_before_{0};   // steady clock ticks; set by give_up()
  mutable Mutex mutex_;
  std::string primary_id_ GUARDED_BY(mutex_);
  std::unique_ptr<boost::asio::steady_timer> timer_;
  Hooks hooks_;  // set by run(); lives as long as this object, so late coroutines can use it
};

}  // namespace silo::cluster
