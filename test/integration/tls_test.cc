// A cluster over TLS (docs/security.md "TLS"): cluster.sh up --tls, every node serving
// HTTPS only. Objects travel client -> proxy -> owner -> replicas / slice holders over TLS
// and read back byte for byte (through the proxy and straight from the targets); a plain
// HTTP request gets nothing; the CLI trusts the CA it is given and names the problem when
// it is not; SIGHUP, or the files changing, reloads a renewed certificate without a restart.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "cli_util.h"
#include "objects_util.h"

namespace silo::integration {
namespace {

ClusterOptions tls_options() {
  return {.proxies = 1, .targets = 3, .mountpaths = 1, .env = {{"SILO_DURABILITY", "page_cache"}}, .tls = true};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `sh -c command`; its output (stdout and stderr), "" on failure (a test failure).
// Not std::system: silo::testing's reaper thread takes the exit status first.
std::string shell(const std::string& command) {
  // A file of this process's own: the suites run in parallel (a shared name mixed them up).
  static std::atomic<int> calls = 0;
  const std::string out = fmt::format("{}/silo-shell-{}-{}.out", ::testing::TempDir(), ::getpid(), calls++);
  silo::testing::CommandOptions options;
  options.output_path = out;
  const auto code = silo::testing::run_command({"sh", "-c", command}, options);
  EXPECT_TRUE(code.has_value() && *code == 0) << command << ": " << (code ? std::to_string(*code) : code.status().to_string())
                                              << "\n" << read_text(out);
  const std::string text = code.has_value() && *code == 0 ? read_text(out) : "";
  std::remove(out.c_str());
  return text;
}

TEST(TlsClusterTest, ObjectsCrossEveryHopOverHttpsIntact) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(tls_options()));
  ASSERT_TRUE(cluster->endpoint().starts_with("https://")) << cluster->endpoint();
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const auto map, c.node_map());
  for (const auto& node : map.nodes) EXPECT_TRUE(node.url.starts_with("https://")) << node.id << " " << node.url;

  // Copies and slices go from the owner to other targets: node-to-node calls over TLS.
  ASSERT_OK(c.create_bucket("plain"));
  ASSERT_OK(c.create_bucket("copies", R"({"copies": 2})"));
  ASSERT_OK(c.create_bucket("coded", R"({"ec": {"data": 2, "parity": 1, "min_size": 16384}})"));
  silo::testing::Random random;
  for (const std::string bucket : {"plain", "copies", "coded"}) {
    Objects objects;
    for (const uint64_t size : {uint64_t{1}, uint64_t{100'000}, uint64_t{(9 << 20) + 5}}) {
      objects[fmt::format("o-{}", size)] = random.bytes(size);
    }
    for (const auto& [name, bytes] : objects) {
      const auto put = c.put(bucket, name, bytes);
      ASSERT_TRUE(put.has_value()) << bucket << "/" << name << ": " << put.status();
    }
    expect_all_readable(c, objects, bucket);
    // Straight from the owner targets, as smart clients read.
    client::ClientOptions direct;
    direct.direct = true;
    ASSERT_OK_AND_ASSIGN(auto direct_client, cluster->new_client(direct));
    expect_all_readable(*direct_client, objects, bucket);
  }
  ASSERT_OK_AND_ASSIGN(const auto copies, c.bucket_props("copies"));
  EXPECT_EQ(bucket_files(*cluster, copies.id), 3u * 2) << "each object of the copies bucket has 2 copies";
  ASSERT_OK_AND_ASSIGN(const auto coded, c.bucket_props("coded"));
  EXPECT_EQ(bucket_files(*cluster, coded.id), 1u * 2 + 2 * 3) << "2 copies of the 1 B object, 3 slices of each other";

  // Plain HTTP on the HTTPS port: no answer, and the node goes on serving.
  const std::string plain = "http://" + cluster->endpoint().substr(std::string("https://").size());
  client::ClientOptions no_tls;
  no_tls.io_timeout = milliseconds(5000);
  ASSERT_OK_AND_ASSIGN(auto plain_client, client::Client::create(plain, cluster->client_options(no_tls)));
  EXPECT_FALSE(plain_client->get("plain", "o-1").has_value());
  ASSERT_OK(c.get("plain", "o-1").status());

  // aws:SecureTransport is true over TLS: a policy that allows a user only over TLS lets
  // it read.
  ASSERT_OK_AND_ASSIGN(auto added, c.request(http::Method::kPut, "/v1/users/reader",
                                             R"({"secret_key":"reader-secret-1"})"));
  ASSERT_EQ(added.status, 200) << added.body;
  ASSERT_OK_AND_ASSIGN(auto policy, c.request(http::Method::kPut, "/v1/buckets/plain/policy", R"({
      "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "reader"},
      "Action": "s3:GetObject", "Resource": "arn:aws:s3:::plain/*",
      "Condition": {"Bool": {"aws:SecureTransport": "true"}}}]})"));
  ASSERT_EQ(policy.status / 100, 2) << policy.body;
  client::ClientOptions reader;
  reader.access_key = "reader";
  reader.secret_key = "reader-secret-1";
  ASSERT_OK_AND_ASSIGN(auto as_reader, cluster->new_client(reader));
  ASSERT_OK_AND_ASSIGN(const std::string got, as_reader->get("plain", "o-1"));
  EXPECT_EQ(got.size(), 1u);
}

TEST(TlsClusterTest, TheCliTrustsTheCaItIsGivenAndSaysWhatIsWrongOtherwise) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 1, .mountpaths = 1, .tls = true}));
  Cli cli(cluster->endpoint());
  const EnvVars keys = {{"SILO_ACCESS_KEY", cluster->access_key()}, {"SILO_SECRET_KEY", cluster->secret_key()}};
  EnvVars with_ca = keys;
  with_ca.emplace_back("SILO_CA_BUNDLE", cluster->ca_file());
  CliResult r = cli.run({"bucket", "create", "photos"}, with_ca);
  EXPECT_EQ(r.code, 0) << r;
  r = cli.run({"--ca-bundle", cluster->ca_file(), "bucket", "ls"}, keys);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "photos")) << r;
  r = cli.run({"bucket", "ls"}, keys);  // the system's CAs do not know the cluster's
  EXPECT_NE(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, "not trusted")) << r;
  EXPECT_TRUE(contains(r.err, "--ca-bundle")) << r;
}

// Sends SIGHUP to every node and waits until each logs that it reloaded its TLS files.
void sighup_and_wait_for_reload(LocalCluster& cluster) {
  for (const auto& id : cluster.node_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo node, cluster.node(id));
    ASSERT_EQ(::kill(node.pid, SIGHUP), 0);
    ASSERT_OK(silo::testing::wait_until(
        [&] { return read_text(node.log_path).find("SIGHUP: TLS certificate, key and CA reloaded") != std::string::npos; },
        milliseconds(10000), "the reload in " + node.log_path));
  }
}

// Mutual TLS: a client without a certificate gets the health answer (Kubernetes' probes
// show none) and 403 for anything else; one with a certificate of the cluster's CA is served.
TEST(TlsClusterTest, MutualTlsServesHealthWithoutACertificateAndNothingElse) {
  ClusterOptions options = tls_options();
  options.targets = 1;
  options.env.emplace_back("SILO_TLS_REQUIRE_CLIENT_CERT", "true");
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(options));
  const std::string curl =
      fmt::format("curl -s -o /dev/null -w '%{{http_code}}' --cacert {} {}", cluster->ca_file(), cluster->endpoint());
  EXPECT_EQ(shell(curl + "/v1/health"), "200");
  EXPECT_EQ(shell(curl + "/v1/buckets"), "403");
  client::ClientOptions with_cert;
  with_cert.client_cert = cluster->dir() + "/tls/node.pem";
  with_cert.client_key = cluster->dir() + "/tls/node-key.pem";
  ASSERT_OK_AND_ASSIGN(auto member, cluster->new_client(with_cert));
  ASSERT_OK(member->create_bucket("mtls"));
  ASSERT_OK(member->put("mtls", "o", "x").status());
}

TEST(TlsClusterTest, SighupReloadsARenewedCertificate) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 1, .mountpaths = 1, .tls = true}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("renewal"));
  ASSERT_OK(c.put("renewal", "before", "x").status());
  // Renew every node's certificate (same CA) and tell the nodes.
  const std::string command = fmt::format("{} {}/tls", SILO_SOURCE_DIR "/deploy/local/tls-certs.sh", cluster->dir());
  shell(command);
  ASSERT_NO_FATAL_FAILURE(sighup_and_wait_for_reload(*cluster));
  // New connections get the renewed certificate; nodes still talk to each other.
  const auto serial = [](const std::string& from) { return shell(from + " | openssl x509 -noout -serial"); };
  ASSERT_OK_AND_ASSIGN(const NodeInfo proxy, cluster->node(cluster->proxy_ids().front()));
  const std::string issued = serial(fmt::format("cat {}/tls/node.pem", cluster->dir()));
  EXPECT_EQ(serial(fmt::format("openssl s_client -connect 127.0.0.1:{} </dev/null 2>/dev/null", proxy.port)), issued);
  ASSERT_OK_AND_ASSIGN(auto fresh, cluster->new_client());
  ASSERT_OK(fresh->put("renewal", "after", "y").status());
  ASSERT_OK_AND_ASSIGN(const std::string before, fresh->get("renewal", "before"));
  EXPECT_EQ(before, "x");

  // Without a signal too: files renewed in place (a Kubernetes Secret) are noticed.
  shell(command);
  const std::string renewed = serial(fmt::format("cat {}/tls/node.pem", cluster->dir()));
  ASSERT_NE(renewed, issued);
  ASSERT_OK(silo::testing::wait_until(
      [&] { return read_text(proxy.log_path).find("TLS files changed: TLS certificate") != std::string::npos; },
      milliseconds(30000), "the reload of changed files in " + proxy.log_path));
  EXPECT_EQ(serial(fmt::format("openssl s_client -connect 127.0.0.1:{} </dev/null 2>/dev/null", proxy.port)), renewed);
}

// A new CA and node certificates it signs, then SIGHUP: the nodes' calls to each other
// (the proxy relaying to the target, keepalives) trust the new CA and show the new
// certificate, with no restart.
TEST(TlsClusterTest, SighupMovesCallsBetweenNodesToANewCa) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 1, .mountpaths = 1, .tls = true}));
  ASSERT_OK(cluster->client().create_bucket("rotated"));
  ASSERT_OK(cluster->client().put("rotated", "before", "x").status());
  const std::string tls = cluster->dir() + "/tls";
  const std::string old_ca = shell(fmt::format("openssl x509 -noout -fingerprint -in {}/ca.pem", tls));
  shell(fmt::format("rm {0}/ca.pem {0}/ca-key.pem && {1} {0}", tls, SILO_SOURCE_DIR "/deploy/local/tls-certs.sh"));
  ASSERT_NE(shell(fmt::format("openssl x509 -noout -fingerprint -in {}/ca.pem", tls)), old_ca);
  ASSERT_NO_FATAL_FAILURE(sighup_and_wait_for_reload(*cluster));
  // The proxy's pooled connections to the target were made under the old CA: restart the
  // target so that the proxy must connect anew, trusting what it reloaded.
  ASSERT_OK(cluster->restart("t1"));
  ASSERT_OK(cluster->wait_for_node_state("t1", "online", seconds(10)));
  // A client that trusts only the new CA reaches the proxy, and the proxy the target.
  ASSERT_OK_AND_ASSIGN(auto fresh, cluster->new_client());
  ASSERT_OK(fresh->put("rotated", "after", "y").status());
  ASSERT_OK_AND_ASSIGN(const std::string before, fresh->get("rotated", "before"));
  EXPECT_EQ(before, "x");
}

}  // namespace
}  // namespace silo::integration
