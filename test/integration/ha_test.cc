// The HA control plane against a real etcd (docs/membership-and-rebalance.md "HA"): a
// killed primary is replaced within seconds, data traffic goes on through the surviving
// proxies, the old primary rejoins as an ordinary proxy, and a proxy cut off from etcd
// (an nftables rule on its etcd address) stops acting as primary; never two at once.
// Partitions between nodes run each node in a network namespace of its own (cluster.sh
// --netns) and cut links with nftables inside them.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "objects_util.h"
#include "test_util.h"
#include "testing/random.h"
#include "testing/subprocess.h"

namespace silo::integration {
namespace {

ClusterOptions ha_options(int proxies, int targets) {
  return {.proxies = proxies, .targets = targets, .mountpaths = 1, .env = {{"SILO_DURABILITY", "page_cache"}}, .ha = true};
}

// Whether the proxy at `url` says (in /metrics, unsigned) that it acts as the primary.
bool acts_as_primary(const std::string& url) {
  auto conn = RawConnection::open(url);
  if (!conn) return false;
  if (!conn->send("GET /metrics HTTP/1.1\r\nHost: silo\r\nConnection: close\r\n\r\n")) return false;
  const std::string answer = conn->read(4 << 20, milliseconds(3000));
  return answer.find("\nsilo_primary 1") != std::string::npos;
}

// The primary as the proxy `id` sees it; "" when it cannot say.
std::string primary_seen_by(LocalCluster& cluster, std::string_view id) {
  auto c = cluster.client_of(id);
  if (!c) return "";
  auto map = (*c)->node_map();
  return map ? map->primary : "";
}

std::vector<std::string> urls_of(const LocalCluster& cluster, const std::vector<std::string>& ids) {
  std::vector<std::string> urls;
  for (const auto& id : ids) {
    if (auto node = cluster.node(id)) urls.push_back(node->url);
  }
  return urls;
}

void put_and_check(client::Client& writer, client::Client& reader, std::string_view bucket, int count,
                   std::string_view prefix) {
  silo::testing::Random random;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < count; ++i) {
    const std::string name = fmt::format("{}-{:03}", prefix, i);
    objects[name] = random.bytes(random.uniform(1, 64 * 1024));
    ASSERT_OK(writer.put(bucket, name, objects[name]).status());
  }
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string got, reader.get(bucket, name));
    EXPECT_EQ(difference(bytes, got), "") << name;
  }
}

// 3 proxies and 3 targets, each in a network namespace of its own, keepalives every 200 ms
// (a node is down after 2 s of silence).
ClusterOptions netns_options() {
  ClusterOptions options = ha_options(3, 3);
  options.netns = true;
  options.env.emplace_back("SILO_KEEPALIVE_INTERVAL_MS", "200");
  options.env.emplace_back("SILO_KEEPALIVE_TIMEOUT_MS", "2000");
  return options;
}

// The proxies that say they act as primary right now.
std::vector<std::string> acting_primaries(const LocalCluster& cluster) {
  std::vector<std::string> acting;
  for (const auto& id : cluster.proxy_ids()) {
    auto node = cluster.node(id);
    if (node && acts_as_primary(node->url)) acting.push_back(id);
  }
  return acting;
}

// Polls until a proxy other than `old` acts as primary, failing the test if two ever act
// at once; that proxy's id ("" after `timeout`). `each_poll` runs with every poll.
std::string wait_for_takeover(const LocalCluster& cluster, std::string_view old, std::chrono::seconds timeout,
                              const std::function<void()>& each_poll = [] {}) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    const std::vector<std::string> acting = acting_primaries(cluster);
    EXPECT_LE(acting.size(), 1u) << "two proxies act as primary at once: " << fmt::format("{}", fmt::join(acting, ", "));
    each_poll();
    if (acting.size() == 1 && acting[0] != old) return acting[0];
    std::this_thread::sleep_for(milliseconds(50));
  }
  return "";
}

// The state of node `id` in the node map `seen_by` holds ("" when it cannot say).
std::string state_seen_by(client::Client& seen_by, std::string_view id) {
  auto map = seen_by.node_map();
  if (!map || map->find(id) == nullptr) return "";
  return map->find(id)->state;
}

// Stops the writers, reads back every acknowledged PUT through `reader` and prints the
// ledger's counts.
void stop_and_check(LedgerWriters& writers, client::Client& reader, std::string_view bucket, std::string_view through) {
  writers.stop();
  const size_t failed = writers.check(reader, bucket);
  std::cout << "[ha] " << writers.attempts() << " PUTs through " << through << " across the partition, "
            << writers.acknowledged() << " acknowledged, " << failed << " failed\n";
}

// An nftables table that drops what this host sends to one address and port; removed
// when destroyed.
class Partition {
 public:
  static Result<Partition> cut(std::string address, uint16_t port) {
    Partition p(fmt::format("silo_test_{}", ::getpid()));
    RETURN_IF_ERROR(p.nft({"nft", "add", "table", "inet", p.table_}));
    p.active_ = true;  // from here the destructor removes the table
    RETURN_IF_ERROR(p.nft({"nft", "add", "chain", "inet", p.table_, "out",
                           "{ type filter hook output priority 0; }"}));
    RETURN_IF_ERROR(p.nft({"nft", "add", "rule", "inet", p.table_, "out", "ip", "daddr", address, "tcp", "dport",
                           std::to_string(port), "drop"}));
    return p;
  }
  Partition(Partition&& other) noexcept : table_(other.table_), active_(std::exchange(other.active_, false)) {}
  ~Partition() { std::ignore = heal(); }
  Status heal() {
    if (!active_) return Status::ok();
    active_ = false;
    return nft({"nft", "delete table inet " + table_});
  }

 private:
  explicit Partition(std::string table) : table_(std::move(table)) {}
  static Status nft(std::vector<std::string> argv) {
    silo::testing::CommandOptions options;
    options.timeout = milliseconds(10000);
    ASSIGN_OR_RETURN(const int code, silo::testing::run_command(argv, options));
    if (code != 0) return Status::unavailable("{} exited with {}", fmt::join(argv, " "), code);
    return Status::ok();
  }
  std::string table_;
  bool active_ = false;
};

TEST(HaTest, KilledPrimaryIsReplacedAndRejoinsAsAProxy) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(ha_options(3, 3)));
  ASSERT_EQ(primary_seen_by(*cluster, "p2"), "p1");
  ASSERT_OK_AND_ASSIGN(auto p2, cluster->client_of("p2"));
  ASSERT_OK_AND_ASSIGN(auto p3, cluster->client_of("p3"));
  ASSERT_OK(p2->create_bucket("before"));  // relayed to the primary
  put_and_check(*p2, *p3, "before", 40, "a");

  ASSERT_OK(cluster->kill("p1"));
  const auto killed_at = std::chrono::steady_clock::now();
  std::string next;
  ASSERT_OK(silo::testing::wait_until(
      [&] {
        next = primary_seen_by(*cluster, "p2");
        return !next.empty() && next != "p1" && acts_as_primary(cluster->node(next)->url);
      },
      seconds(10), "a new primary after the old one was killed"));
  const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - killed_at);
  EXPECT_LT(took, seconds(10));
  std::cout << "[ha] " << next << " took over " << took.count() << " ms after p1 was killed\n";

  // Bucket changes (the primary's) and data through both surviving proxies.
  ASSERT_OK(silo::testing::wait_until([&] { return p3->create_bucket("after").is_ok(); }, seconds(10),
                                      "a bucket create through p3"));
  put_and_check(*p3, *p2, "after", 40, "b");
  put_and_check(*p2, *p3, "before", 20, "c");

  // The old primary comes back as an ordinary proxy.
  ASSERT_OK(cluster->restart("p1"));
  ASSERT_OK(silo::testing::wait_until([&] { return primary_seen_by(*cluster, "p1") == next; }, seconds(10),
                                      "p1 to see the new primary"));
  ASSERT_OK_AND_ASSIGN(const NodeInfo p1_node, cluster->node("p1"));
  EXPECT_FALSE(acts_as_primary(p1_node.url));
  ASSERT_OK_AND_ASSIGN(auto p1, cluster->client_of("p1"));
  ASSERT_OK(p1->create_bucket("rejoined"));
  put_and_check(*p1, *p2, "rejoined", 10, "d");
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, p1->node_map());
  ASSERT_NE(map.find("p1"), nullptr);
  EXPECT_EQ(map.find("p1")->state, "online");
}

TEST(HaTest, ProxyCutOffFromEtcdStopsActingAsPrimary) {
  if (::geteuid() != 0) GTEST_SKIP() << "nftables rules need root";
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(ha_options(3, 2)));
  ASSERT_OK_AND_ASSIGN(const uint16_t etcd_port, cluster->etcd_port());
  const std::vector<std::string> proxies = urls_of(*cluster, cluster->proxy_ids());
  ASSERT_TRUE(acts_as_primary(proxies[0]));
  ASSERT_OK_AND_ASSIGN(auto p2, cluster->client_of("p2"));
  ASSERT_OK(p2->create_bucket("steady"));
  // Writers through p1 and p3 all along, with a ledger: no acknowledged write may be lost.
  LedgerWriters writers(*cluster, "steady", 2, 1, 256 * 1024, {proxies[0], proxies[2]});
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));

  // p1 reaches etcd at 127.0.0.2 (cluster.sh): drop everything it sends there.
  ASSERT_OK_AND_ASSIGN(Partition partition, Partition::cut("127.0.0.2", etcd_port));
  const auto cut_at = std::chrono::steady_clock::now();
  bool p1_gave_up = false;
  std::string next;
  // Poll every proxy until another one is primary: never two at once.
  while (std::chrono::steady_clock::now() - cut_at < seconds(15)) {
    int acting = 0;
    std::string who;
    for (size_t i = 0; i < proxies.size(); ++i) {
      if (acts_as_primary(proxies[i])) {
        ++acting;
        who = cluster->proxy_ids()[i];
      }
    }
    ASSERT_LE(acting, 1) << "two proxies act as primary at once";
    if (who != "p1") p1_gave_up = true;
    if (!who.empty() && who != "p1") {
      next = who;
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(p1_gave_up) << "p1 still acts as primary while cut off from etcd";
  ASSERT_FALSE(next.empty()) << "no proxy took over within 15 s";
  std::cout << "[ha] " << next << " took over "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - cut_at).count()
            << " ms after p1 was cut off\n";
  // The cluster works through the proxies that reach etcd; p1 relays to the new primary.
  ASSERT_OK(silo::testing::wait_until([&] { return p2->create_bucket("during").is_ok(); }, seconds(10),
                                      "a bucket create through p2"));
  ASSERT_OK_AND_ASSIGN(auto p3, cluster->client_of("p3"));
  put_and_check(*p2, *p3, "during", 20, "x");

  // Healed: p1 follows etcd again and stays an ordinary proxy; every node agrees.
  ASSERT_OK(partition.heal());
  ASSERT_OK(silo::testing::wait_until([&] { return primary_seen_by(*cluster, "p1") == next; }, seconds(15),
                                      "p1 to follow the new primary"));
  EXPECT_FALSE(acts_as_primary(proxies[0]));
  ASSERT_OK_AND_ASSIGN(auto p1, cluster->client_of("p1"));
  put_and_check(*p1, *p3, "steady", 20, "y");
  ASSERT_OK(silo::testing::wait_until(
      [&] {
        std::set<uint64_t> versions;
        for (const auto& id : cluster->node_ids()) {
          auto c = cluster->client_of(id);
          if (!c) return false;
          auto map = (*c)->node_map();
          if (!map) return false;
          versions.insert(map->version);
        }
        return versions.size() == 1;
      },
      seconds(15), "every node on the same node map version"));
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));
  stop_and_check(writers, *p2, "steady", "p1 and p3");
}

// The primary cut off from every other node but not from etcd keeps its lease and hears
// no keepalives. Marking every node down would stop the data path everywhere (the other
// proxies install its maps from etcd): it marks none down and hands the role to a proxy
// that reaches them. Writers through the other proxies lose nothing.
TEST(HaTest, APrimaryCutOffFromEveryNodeButEtcdMarksNoneDownAndHandsOver) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(netns_options()));
  ASSERT_EQ(acting_primaries(*cluster), std::vector<std::string>{"p1"});
  ASSERT_OK_AND_ASSIGN(auto p2, cluster->client_of("p2"));
  ASSERT_OK(p2->create_bucket("steady"));
  LedgerWriters writers(*cluster, "steady", 2, 1, 256 * 1024, urls_of(*cluster, {"p2", "p3"}));
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));

  ASSERT_OK(cluster->cut("p1", {"p2", "p3", "t1", "t2", "t3"}));
  const auto cut_at = std::chrono::steady_clock::now();
  const std::string next = wait_for_takeover(*cluster, "p1", seconds(20));
  ASSERT_FALSE(next.empty()) << "p1 kept the role while hearing from no node";
  std::cout << "[ha] " << next << " took over "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - cut_at).count()
            << " ms after p1 was cut off from every node\n";
  // p1 marked none down (it said so in its log); the new primary cannot reach p1 and marks
  // it down; data goes on.
  ASSERT_OK_AND_ASSIGN(const NodeInfo p1_node, cluster->node("p1"));
  ASSERT_OK_AND_ASSIGN(const std::string p1_log, silo::testing::read_file(p1_node.log_path));
  EXPECT_NE(p1_log.find("marking none down"), std::string::npos);
  EXPECT_EQ(p1_log.find("marking it down"), std::string::npos) << "the cut-off primary marked nodes down";
  ASSERT_OK(silo::testing::wait_until([&] { return state_seen_by(*p2, "p1") == "down"; }, seconds(20),
                                      "p1 marked down by the new primary"));
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));
  ASSERT_OK(silo::testing::wait_until([&] { return p2->create_bucket("during").is_ok(); }, seconds(10),
                                      "a bucket create through p2"));

  // Healed: p1 follows the new primary as an ordinary proxy.
  ASSERT_OK(cluster->heal("p1"));
  ASSERT_OK(silo::testing::wait_until(
      [&] {
        for (const auto& id : cluster->node_ids()) {
          if (state_seen_by(*p2, id) != "online") return false;
        }
        return true;
      },
      seconds(15), "every node online again"));
  EXPECT_EQ(acting_primaries(*cluster), std::vector<std::string>{next});
  stop_and_check(writers, *p2, "steady", "p2 and p3");
}

// {p1 (the primary), t1} | {p2, p3, t2, t3, etcd}: the minority side loses etcd and p1
// stops acting; the majority elects another primary, which marks p1 and t1 down. Never two
// primaries; every write acknowledged through p2 and p3 reads back after the heal.
TEST(HaTest, AMinorityPartitionWithThePrimaryLosesNoAcknowledgedWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(netns_options()));
  ASSERT_OK_AND_ASSIGN(auto p2, cluster->client_of("p2"));
  ASSERT_OK(p2->create_bucket("split"));
  LedgerWriters writers(*cluster, "split", 2, 1, 256 * 1024, urls_of(*cluster, {"p2", "p3"}));
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));

  ASSERT_OK(cluster->cut("p1", {"p2", "p3", "t2", "t3", "etcd"}));
  ASSERT_OK(cluster->cut("t1", {"p2", "p3", "t2", "t3"}));
  const std::string next = wait_for_takeover(*cluster, "p1", seconds(20));
  ASSERT_FALSE(next.empty()) << "no proxy of the majority took over";
  ASSERT_OK(silo::testing::wait_until(
      [&] { return state_seen_by(*p2, "p1") == "down" && state_seen_by(*p2, "t1") == "down"; }, seconds(20),
      "p1 and t1 marked down by the majority's primary"));
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));

  ASSERT_OK(cluster->heal("p1"));
  ASSERT_OK(cluster->heal("t1"));
  ASSERT_OK(silo::testing::wait_until(
      [&] { return state_seen_by(*p2, "p1") == "online" && state_seen_by(*p2, "t1") == "online"; }, seconds(15),
      "p1 and t1 online again"));
  EXPECT_EQ(acting_primaries(*cluster), std::vector<std::string>{next});
  ASSERT_OK(writers.wait_for_more(10, seconds(20)));
  stop_and_check(writers, *p2, "split", "the majority");
}

}  // namespace
}  // namespace silo::integration

namespace silo::integration {
namespace {

TEST(HaTest, EtcdDownFreezesChangesButNotData) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(ha_options(3, 2)));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("frozen"));
  ASSERT_OK(c.put("frozen", "a", "bytes before the outage").status());
  const std::vector<std::string> proxies = urls_of(*cluster, cluster->proxy_ids());

  ASSERT_OK(cluster->stop("etcd"));
  ASSERT_OK(silo::testing::wait_until(
      [&] { return std::none_of(proxies.begin(), proxies.end(), acts_as_primary); }, seconds(10),
      "every proxy to stop acting as primary without etcd"));
  // Data goes on; changes of the maps wait for etcd (503, which clients retry).
  ASSERT_OK_AND_ASSIGN(const std::string got, c.get("frozen", "a"));
  EXPECT_EQ(got, "bytes before the outage");
  ASSERT_OK(c.put("frozen", "b", "written during the outage").status());
  EXPECT_EQ(c.create_bucket("later").code(), Code::kUnavailable);

  ASSERT_OK(cluster->restart("etcd"));
  ASSERT_OK(silo::testing::wait_until(
      [&] { return std::count_if(proxies.begin(), proxies.end(), acts_as_primary) == 1; }, seconds(15),
      "a primary again once etcd is back"));
  ASSERT_OK(silo::testing::wait_until([&] { return c.create_bucket("later").is_ok(); }, seconds(10),
                                      "a bucket create after the outage"));
  ASSERT_OK_AND_ASSIGN(const std::string b, c.get("frozen", "b"));
  EXPECT_EQ(b, "written during the outage");
}

}  // namespace
}  // namespace silo::integration
