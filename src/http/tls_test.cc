// The server over TLS: HTTPS round trips (sized, chunked, file and relayed bodies),
// certificates refused, mutual TLS and certificate reload.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "base/hash.h"
#include "http/server_test_support.h"

namespace silo::http {
namespace {

using namespace std::chrono_literals;
using namespace testing;

// A CA and a node certificate for 127.0.0.1 in a fresh directory, made by the script
// deploy/local/cluster.sh uses (SILO_TLS_CERTS_SCRIPT).
class TlsFiles {
 public:
  TlsFiles() {
    char name[] = "/tmp/silo-tls-test-XXXXXX";
    dir_ = ::mkdtemp(name);
    issue();
  }
  ~TlsFiles() { std::filesystem::remove_all(dir_); }
  // Issues a new node certificate (same CA, unless the CA files were removed first).
  void issue() const {
    const std::string command = fmt::format("{} {} >&2", SILO_TLS_CERTS_SCRIPT, dir_);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  // A new CA and a node certificate from it, in the same files.
  void replace_ca() const {
    std::filesystem::remove(ca());
    std::filesystem::remove(dir_ + "/ca-key.pem");
    issue();
  }
  std::string ca() const { return dir_ + "/ca.pem"; }
  std::string cert() const { return dir_ + "/node.pem"; }
  std::string key() const { return dir_ + "/node-key.pem"; }
  ServerTls server(bool require_client_cert = false) const {
    return ServerTls{.cert_file = cert(),
                     .key_file = key(),
                     .ca_file = ca(),
                     .require_client_cert = require_client_cert,
                     .paths_without_cert = {}};
  }

 private:
  std::string dir_;
};

class TlsTest : public ServerTest {
 protected:
  // A new client that trusts `ca_file` (and shows `cert` when asked for one).
  void trust(const std::string& ca_file, const std::string& cert = "", const std::string& key = "") {
    ClientOptions options = client_options(5000ms);
    options.tls_ca_file = ca_file;
    options.tls_cert_file = cert;
    options.tls_key_file = key;
    client_ = Client::create(io_.get_executor(), options);
  }

  TlsFiles files_;
};

TEST_F(TlsTest, RequestsAndResponsesOfEveryKindGoOverHttps) {
  trust(files_.ca());
  std::atomic<int> calls = 0;
  start(echo_path_handler(&calls), {}, {}, files_.server());
  EXPECT_TRUE(server_->is_tls());
  for (int i = 0; i < 3; ++i) {
    Result<ClientResponse> response = call(request(Method::kPut, "/a%20b"), std::string(700 << 10, 'x'));
    ASSERT_TRUE(response) << response.status();
    EXPECT_EQ(response->body, "/a b");
    EXPECT_EQ(response->headers.get("X-Body-Size"), std::to_string(700 << 10));
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(server_->connection_count(), 1u);  // keep-alive over TLS
}

TEST_F(TlsTest, FilesAreSentWhole) {
  trust(files_.ca());
  const std::string path = fmt::format("/tmp/silo-tls-file-{}", ::getpid());
  constexpr uint64_t kSize = (9 << 20) + 13;
  {
    std::string bytes(kSize, '\0');
    fill(bytes, 0);
    std::ofstream(path, std::ios::binary) << bytes;
  }
  start(
      [&path](Exchange& exchange) -> Awaitable<void> {
        const int fd = ::open(path.c_str(), O_RDONLY);
        // A range of the file after a first write: the held head goes out once, first.
        if (!(co_await exchange.response().begin({}, kSize - 5)).is_ok()) co_return;
        if ((co_await exchange.response().write(std::string_view(pattern().data() + 5, 3))).is_ok()) {
          std::ignore = co_await exchange.response().send_file(fd, 8, kSize - 8);
        }
        ::close(fd);
      },
      {}, {}, files_.server());
  Result<ClientResponse> response = call(request(Method::kGet, "/file"));
  std::filesystem::remove(path);
  ASSERT_TRUE(response) << response.status();
  ASSERT_EQ(response->body.size(), kSize - 5);
  EXPECT_EQ(digest_of(response->body), digest_of_range(5, kSize - 5));
}

TEST_F(TlsTest, RelayedBodiesAreCopiedIntoTheTlsResponse) {
  trust(files_.ca());
  start(relaying_handler(&client_, &endpoint_), {}, {}, files_.server());
  // Upstream over TLS too (the same server): no splice on either side, bytes intact.
  for (const uint64_t size : {uint64_t{100}, uint64_t{(5 << 20) + 7}}) {
    Result<ClientResponse> response = call(request(Method::kGet, fmt::format("/relay/data/{}", size)));
    ASSERT_TRUE(response) << response.status();
    ASSERT_EQ(response->body.size(), size);
    EXPECT_EQ(digest_of(response->body), digest_of_range(0, size));
  }
}

TEST_F(TlsTest, AnUntrustedCertificateIsRefusedAndNotRetried) {
  TlsFiles other;  // another CA
  trust(other.ca());
  start(echo_path_handler(), {}, {}, files_.server());
  Result<ClientResponse> response = call(request(Method::kGet, "/x"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.status().code(), Code::kFailedPrecondition) << response.status();
  EXPECT_NE(response.status().message().find("not trusted"), std::string::npos) << response.status();
}

TEST_F(TlsTest, PlainHttpToATlsPortGetsNoAnswerAndHarmsNoOne) {
  trust(files_.ca());
  start(echo_path_handler(), {}, {}, files_.server());
  RawClient plain(server_->port());
  plain.send("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(plain.read_to_end().find("/plain"), std::string::npos);
  EXPECT_TRUE(wait_for([&] { return server_->connection_count() == 0; }));
  Result<ClientResponse> response = call(request(Method::kGet, "/after"));
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->body, "/after");
}

TEST_F(TlsTest, MutualTlsWantsACertificateTheCaSigned) {
  std::atomic<int> calls = 0;
  ServerTls tls = files_.server(/*require_client_cert=*/true);
  tls.paths_without_cert = {"/health"};
  start(echo_path_handler(&calls), {}, {}, tls);
  // Without a certificate: the open path only; anything else is 403 and never handled.
  trust(files_.ca());
  Result<ClientResponse> anonymous = call(request(Method::kGet, "/anonymous"));
  ASSERT_TRUE(anonymous) << anonymous.status();
  EXPECT_EQ(anonymous->status, 403);
  EXPECT_NE(anonymous->body.find("client certificate"), std::string::npos) << anonymous->body;
  EXPECT_EQ(calls, 0);
  Result<ClientResponse> probe = call(request(Method::kGet, "/health"));
  ASSERT_TRUE(probe) << probe.status();
  EXPECT_EQ(probe->body, "/health");
  EXPECT_EQ(calls, 1);
  TlsFiles stranger;  // a certificate from another CA
  trust(files_.ca(), stranger.cert(), stranger.key());
  EXPECT_FALSE(call(request(Method::kGet, "/stranger")));
  trust(files_.ca(), files_.cert(), files_.key());
  Result<ClientResponse> response = call(request(Method::kGet, "/member"));
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->body, "/member");
}

TEST_F(TlsTest, ReloadTakesRenewedFilesAndKeepsTheOldOnesWhenTheNewAreBad) {
  start(echo_path_handler(), {}, {}, files_.server());
  const std::string old_ca = files_.ca() + ".old";
  std::filesystem::copy_file(files_.ca(), old_ca);
  files_.replace_ca();
  // Until the reload the server shows the certificate of the old CA.
  trust(files_.ca());
  EXPECT_FALSE(call(request(Method::kGet, "/before")));
  ASSERT_TRUE(server_->reload_tls().is_ok());
  Result<ClientResponse> response = call(request(Method::kGet, "/after"));
  ASSERT_TRUE(response) << response.status();
  // A key that is not the certificate's: refused, the server keeps serving the last good pair.
  std::filesystem::copy_file(old_ca, files_.key(), std::filesystem::copy_options::overwrite_existing);
  const Status bad = server_->reload_tls();
  EXPECT_EQ(bad.code(), Code::kFailedPrecondition) << bad;
  EXPECT_NE(bad.message().find(files_.key()), std::string::npos) << bad;
  trust(files_.ca());  // a fresh client: new connections still get the good certificate
  response = call(request(Method::kGet, "/still"));
  ASSERT_TRUE(response) << response.status();
  EXPECT_EQ(response->body, "/still");
}

TEST_F(TlsTest, CreateNamesTheFileThatIsMissing) {
  ServerTls tls = files_.server();
  tls.key_file = "/nonexistent/key.pem";
  Result<std::unique_ptr<Server>> server =
      Server::create(io_, ServerOptions{.host = "127.0.0.1", .port = 0, .limits = {}, .stamp = {}, .tls = tls}, echo_path_handler());
  ASSERT_FALSE(server);
  EXPECT_EQ(server.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(server.status().message().find("/nonexistent/key.pem"), std::string::npos) << server.status();
}

}  // namespace
}  // namespace silo::http
