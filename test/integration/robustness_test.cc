// Clients that go away mid-transfer and requests that are malformed: the node answers
// 4xx where it can, never crashes or hangs, and serves the next request.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "test_util.h"
#include "testing/random.h"
#include "testing/subprocess.h"

namespace silo::integration {
namespace {

// Every node process is alive and answers its health check.
void expect_all_nodes_serving(LocalCluster& cluster, std::string_view after) {
  for (const auto& id : cluster.node_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo n, cluster.node(id));
    EXPECT_TRUE(silo::testing::is_running(n.pid)) << "node " << id << " died after " << after;
    ASSERT_OK_AND_ASSIGN(auto direct, cluster.client_of(id));
    EXPECT_OK(direct->health());
  }
}

TEST(RobustnessTest, ClientDisconnectsMidPutAndMidGet) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("drop"));
  silo::testing::Random random;

  // PUT announcing 8 MiB, 1 MiB sent, then the connection closed: to the proxy and to
  // each target directly (which either stores it or forwards it).
  std::vector<std::string> urls = {cluster->endpoint()};
  for (const auto& id : cluster->target_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo n, cluster->node(id));
    urls.push_back(n.url);
  }
  const std::string mebibyte = random.bytes(1024 * 1024);
  for (size_t i = 0; i < urls.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(RawConnection conn, RawConnection::open(urls[i]));
    const std::string head = signed_request("PUT", fmt::format("/v1/objects/drop/half-{}", i), "test",
                                            {{"Content-Length", std::to_string(8 * 1024 * 1024)}});
    ASSERT_TRUE(conn.send(head));
    conn.send(mebibyte);
    conn.close();
  }
  expect_all_nodes_serving(*cluster, "a half-sent PUT");
  const std::string whole = random.bytes(3 * 1024 * 1024);
  ASSERT_OK(c.put("drop", "whole", whole));
  ASSERT_OK_AND_ASSIGN(const std::string whole_back, c.get("drop", "whole"));
  EXPECT_EQ(difference(whole, whole_back), "");
  for (size_t i = 0; i < urls.size(); ++i) {
    EXPECT_CODE(c.head("drop", fmt::format("half-{}", i)), Code::kNotFound);
  }
  // The aborted PUTs' work files go away once the nodes notice the closed connections.
  std::vector<std::string> leftovers;
  EXPECT_OK(silo::testing::wait_until(
      [&] {
        leftovers = work_files(*cluster);
        return leftovers.empty();
      },
      seconds(15), "removal of the aborted PUTs' work files"));
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("drop"));
  ASSERT_EQ(listed.size(), 1u) << "a half-sent object became visible: " << listed.front().name;

  // GET of a 32 MiB object, 1 MiB read, then the connection closed.
  const std::string big = random.bytes(32 * 1024 * 1024);
  ASSERT_OK(c.put("drop", "big", big));
  for (int round = 0; round < 3; ++round) {
    ASSERT_OK_AND_ASSIGN(RawConnection conn, RawConnection::open(cluster->endpoint()));
    ASSERT_TRUE(conn.send(signed_request("GET", "/v1/objects/drop/big", "test")));
    const std::string head = conn.read_head();
    ASSERT_EQ(status_code(head), 200) << head;
    const std::string part = conn.read(1024 * 1024);
    EXPECT_GT(part.size(), 0u);
    conn.close();
  }
  expect_all_nodes_serving(*cluster, "an abandoned GET");
  ASSERT_OK_AND_ASSIGN(const std::string big_back, c.get("drop", "big"));
  EXPECT_EQ(difference(big, big_back), "");
  ASSERT_OK(c.put("drop", "after", "still serving"));
  ASSERT_OK_AND_ASSIGN(const std::string after, c.get("drop", "after"));
  EXPECT_EQ(after, "still serving");
}

TEST(RobustnessTest, MalformedRequestsGet4xxAndNeverHurtTheNode) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  ASSERT_OK(cluster->client().create_bucket("junk"));
  ASSERT_OK(cluster->client().put("junk", "fine", "ok"));
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));

  struct Case {
    std::string what;
    std::string request;
    int expected;  // exact status, or 400 for "any 4xx" when is_any_4xx
    bool is_any_4xx = false;
  };
  const std::string big_header(64 * 1024, 'h');
  const std::vector<Case> cases = {
      {"garbage request line", "GARBAGE\r\n\r\n", 400, true},
      {"binary junk", std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 16), 400, true},
      {"64 KiB header", "GET /v1/health HTTP/1.1\r\nHost: t\r\nX-Big: " + big_header + "\r\n\r\n", 431},
      {"bad percent escape", "GET /v1/objects/junk/bad%zzname HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"truncated percent escape", "GET /v1/objects/junk/bad% HTTP/1.1\r\nHost: t\r\n\r\n", 400},
      {"unknown endpoint, unsigned (refused before routing)", "GET /v1/nothing-here HTTP/1.1\r\nHost: t\r\n\r\n", 403},
      {"unknown endpoint", signed_request("GET", "/v1/nothing-here", "t"), 404},
      {"bad content length", "PUT /v1/objects/junk/x HTTP/1.1\r\nHost: t\r\nContent-Length: ten\r\n\r\n", 400, true},
      {"unknown method", "BREW /v1/objects/junk/fine HTTP/1.1\r\nHost: t\r\n\r\n", 400, true},
      {"empty object name", "GET /v1/objects/junk/ HTTP/1.1\r\nHost: t\r\n\r\n", 400, true},
      // A coding other than chunked would leave the body unread: refused, never stored empty.
      {"gzip transfer coding",
       signed_request("PUT", "/v1/objects/junk/gz", "t", {{"Transfer-Encoding", "gzip"}}) + "5\r\nhello\r\n0\r\n\r\n", 501},
      // Past the largest object (5 TiB): refused at once by every node, the body never read.
      {"content length past the largest object",
       signed_request("PUT", "/v1/objects/junk/huge", "t", {{"Content-Length", "6597069766656"}}), 400},
  };
  for (const std::string& url : {cluster->endpoint(), t1.url}) {
    for (const Case& k : cases) {
      ASSERT_OK_AND_ASSIGN(RawConnection conn, RawConnection::open(url));
      conn.send(k.request);
      const std::string head = conn.read_head(milliseconds(10000));
      const int status = status_code(head);
      if (k.is_any_4xx) {
        EXPECT_TRUE(status >= 400 && status < 500) << k.what << " at " << url << ": got '" << head.substr(0, 80) << "'";
      } else {
        EXPECT_EQ(status, k.expected) << k.what << " at " << url << ": got '" << head.substr(0, 80) << "'";
      }
      conn.close();
      expect_all_nodes_serving(*cluster, k.what);
    }
  }
  EXPECT_CODE(cluster->client().head("junk", "gz"), Code::kNotFound);
  EXPECT_CODE(cluster->client().head("junk", "huge"), Code::kNotFound);
  // A head that never ends must not pin the node either: others are served meanwhile.
  ASSERT_OK_AND_ASSIGN(RawConnection slow, RawConnection::open(cluster->endpoint()));
  ASSERT_TRUE(slow.send("GET /v1/health HTTP/1.1\r\nHost: t\r\nX-Slow: "));
  ASSERT_OK_AND_ASSIGN(const std::string fine, cluster->client().get("junk", "fine"));
  EXPECT_EQ(fine, "ok");
}

// A GET that misses on a holder of a bucket with copies pulls the copy back in the
// background while the request answers 404 and ends: that pull must own what it reads
// (it once kept a reference to the finished request's object name and crashed a target
// now and then, a 503 for every GET that asked it).
TEST(RobustnessTest, ManyReadsOfMissingObjectsWithCopiesNeverHurtTheNodes) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("copied", R"({"copies": 3})"));
  ASSERT_OK(c.put("copied", "here", "ok"));
  // Each reader its own clients (a client is not shared between threads): the proxy's and
  // one of each target's, which answer for objects they do not own too.
  constexpr int kReaders = 8;
  std::vector<std::vector<std::unique_ptr<client::Client>>> clients(kReaders);
  for (auto& mine : clients) {
    ASSERT_OK_AND_ASSIGN(auto via_proxy, cluster->new_client());
    mine.push_back(std::move(via_proxy));
    for (const auto& id : cluster->target_ids()) {
      ASSERT_OK_AND_ASSIGN(auto direct, cluster->client_of(id));
      mine.push_back(std::move(direct));
    }
  }
  std::vector<std::thread> readers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&clients, &wrong, t] {
      auto& mine = clients[static_cast<size_t>(t)];
      for (int i = 0; i < 100; ++i) {
        // Names of many lengths, so freed memory is soon reused by other names' bytes.
        const std::string name = fmt::format("missing-{}-{}-{}", t, i, std::string(static_cast<size_t>(i % 40), 'x'));
        client::Client& via = *mine[static_cast<size_t>(i) % mine.size()];
        if (via.get("copied", name).status().code() != Code::kNotFound) ++wrong;
      }
    });
  }
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(wrong.load(), 0) << "GETs of missing objects that did not answer NoSuchKey";
  expect_all_nodes_serving(*cluster, "reads of missing objects");
  ASSERT_OK_AND_ASSIGN(const std::string here, c.get("copied", "here"));
  EXPECT_EQ(here, "ok");
}

}  // namespace
}  // namespace silo::integration
