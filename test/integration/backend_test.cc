// The S3 backend client (src/backend) against a real S3-protocol server: moto, started on
// a free loopback port per test suite. Every byte read back is checked.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <mutex>
#include <thread>

#include "backend/s3_backend.h"
#include "moto.h"
#include "test_util.h"
#include "testing/random.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace silo::integration {
namespace {

namespace asio = boost::asio;
constexpr uint64_t kMiB = 1024 * 1024;

// moto_server for the life of the suite, with bucket "data".
class BackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto started = MotoServer::start();
    ASSERT_TRUE(started.has_value()) << started.status();
    moto_ = std::move(*started).release();
    ASSERT_OK(moto_->create_bucket("data"));
  }
  static void TearDownTestSuite() {
    delete moto_;
    moto_ = nullptr;
  }
  static std::string url() { return moto_->url(); }

  void SetUp() override {
    driver_ = std::make_unique<BackendDriver>();
    client_ = driver_->client();
  }
  void TearDown() override {
    backend_.reset();
    client_.reset();
    driver_.reset();
  }

  std::unique_ptr<backend::S3Backend> make(std::string bucket = "data", std::string endpoint = url(),
                                           std::string access_key = MotoServer::kAccessKey,
                                           std::string secret = MotoServer::kSecretKey) {
    auto made = driver_->make(std::move(bucket), std::move(endpoint), std::move(access_key), std::move(secret));
    EXPECT_TRUE(made.has_value()) << made.status();
    return made ? std::move(*made) : nullptr;
  }

  template <typename MakeAwaitable>
  auto run(MakeAwaitable make) {
    return driver_->run(make);
  }
  Result<backend::RemoteObject> put(backend::S3Backend& b, const std::string& name, const std::string& bytes) {
    return driver_->put(b, name, bytes);
  }
  Result<std::string> get(backend::S3Backend& b, const std::string& name,
                          std::optional<backend::RemoteRange> range = std::nullopt) {
    return driver_->get(b, name, range);
  }

  // PUT (single and multipart), HEAD, GET (whole and a range across parts), paged
  // listing, DELETE, and the errors of missing objects, through `b`.
  void round_trip(backend::S3Backend* b) {
    ASSERT_NE(b, nullptr);
    ASSERT_OK(run([&] { return b->check_bucket(); }));
    silo::testing::Random random;
    const std::string small = random.bytes(1000);
    const std::string large = random.bytes(12 * kMiB + 3);  // three parts of 5 MiB at most
    ASSERT_OK_AND_ASSIGN(const backend::RemoteObject put_small, put(*b, "dir/small one", small));
    EXPECT_EQ(put_small.size, small.size());
    EXPECT_FALSE(put_small.etag.empty());
    ASSERT_OK_AND_ASSIGN(const backend::RemoteObject put_large, put(*b, "dir/large", large));
    EXPECT_NE(put_large.etag.find('-'), std::string::npos)
        << "a multipart ETag: " << put_large.etag;

    ASSERT_OK_AND_ASSIGN(const backend::RemoteObject head,
                         run([&] { return b->head("dir/large"); }));
    EXPECT_EQ(head.size, large.size());
    EXPECT_EQ(head.etag, put_large.etag);
    EXPECT_GT(head.mtime_unix_seconds, 0);
    ASSERT_OK_AND_ASSIGN(const std::string whole, get(*b, "dir/large"));
    EXPECT_EQ(difference(large, whole), "");
    ASSERT_OK_AND_ASSIGN(const std::string again, get(*b, "dir/small one"));
    EXPECT_EQ(difference(small, again), "");
    ASSERT_OK_AND_ASSIGN(const std::string part,
                         get(*b, "dir/large", backend::RemoteRange{5 * kMiB - 7, 1000}));
    EXPECT_EQ(difference(large.substr(5 * kMiB - 7, 1000), part), "");

    for (int i = 0; i < 5; ++i)
      ASSERT_OK(put(*b, fmt::format("page/{}", i), std::to_string(i)).status());
    std::vector<std::string> listed;
    std::string token;
    int pages = 0;
    do {
      ASSERT_OK_AND_ASSIGN(const backend::RemotePage page,
                           run([&] { return b->list("page/", token, 2); }));
      for (const auto& o : page.objects) listed.push_back(o.name);
      token = page.next_token;
      ++pages;
    } while (!token.empty() && pages < 10);
    EXPECT_EQ(pages, 3);
    EXPECT_EQ(listed, (std::vector<std::string>{"page/0", "page/1", "page/2", "page/3", "page/4"}));

    ASSERT_OK(run([&] { return b->remove("dir/large"); }));
    const Status removed_again = run([&] { return b->remove("dir/large"); });
    EXPECT_TRUE(removed_again.is_ok()) << "removing what is gone succeeds: " << removed_again;
    auto gone = run([&] { return b->head("dir/large"); });
    ASSERT_FALSE(gone.has_value());
    EXPECT_EQ(gone.error().code(), Code::kNotFound);
    auto missing = get(*b, "never-written");
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().code(), Code::kNotFound) << missing.error();
  }

  static inline MotoServer* moto_ = nullptr;
  std::unique_ptr<BackendDriver> driver_;
  std::shared_ptr<http::Client> client_;
  std::unique_ptr<backend::S3Backend> backend_;
};

TEST_F(BackendTest, RoundTripsEveryByteThroughMoto) { round_trip(make().get()); }

// Silo checks SigV4 signatures (moto does not): the same round trip against a Silo cluster
// as the backend proves the signing, and a wrong secret is refused.
TEST_F(BackendTest, RoundTripsEveryByteThroughASiloClusterThatChecksSignatures) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 1}));
  ASSERT_OK(cluster->client().create_bucket("remote"));
  round_trip(make("remote", cluster->endpoint(), "silo-admin", "silo-secret-key").get());
  auto forged = make("remote", cluster->endpoint(), "silo-admin", "not-the-secret");
  ASSERT_NE(forged, nullptr);
  const Status refused = run([&] { return forged->check_bucket(); });
  EXPECT_EQ(refused.code(), Code::kPermissionDenied) << refused;
  auto read = get(*forged, "dir/small one");
  ASSERT_FALSE(read.has_value());
  EXPECT_EQ(read.error().code(), Code::kPermissionDenied) << read.error();
  EXPECT_EQ(read.error().to_string().find("not-the-secret"), std::string::npos)
      << "the secret leaked";
}

TEST_F(BackendTest, MissingBucketsAndBadInputAreNamed) {
  auto nowhere = make("no-such-bucket");
  ASSERT_NE(nowhere, nullptr);
  const Status missing = run([&] { return nowhere->check_bucket(); });
  EXPECT_EQ(missing.code(), Code::kNotFound) << missing;
  EXPECT_NE(missing.to_string().find("no-such-bucket"), std::string::npos) << missing;

  backend::S3Options bad;
  bad.endpoint_url = url();
  bad.bucket = "data";
  EXPECT_EQ(backend::S3Backend::create(client_, bad).status().code(), Code::kInvalidArgument)
      << "no keys";
  bad.access_key = "k";
  bad.secret_key = "s";
  bad.part_size = 1024;
  EXPECT_EQ(backend::S3Backend::create(client_, bad).status().code(), Code::kInvalidArgument)
      << "tiny parts";
  bad.part_size = 8 * kMiB;
  bad.endpoint_url = "ftp://x";
  EXPECT_FALSE(backend::S3Backend::create(client_, bad).has_value());

  // A backend that is not there: the retries end in kUnavailable, never a hang.
  backend::S3Options down;
  down.endpoint_url = fmt::format("http://127.0.0.1:{}", free_port());
  down.bucket = "data";
  down.access_key = "k";
  down.secret_key = "s";
  down.attempts = 3;
  down.first_backoff = milliseconds(5);
  ASSERT_OK_AND_ASSIGN(auto unreachable, backend::S3Backend::create(client_, down));
  const Status refused = run([&] { return unreachable->check_bucket(); });
  EXPECT_EQ(refused.code(), Code::kUnavailable) << refused;
  EXPECT_EQ(refused.to_string().find(down.secret_key + "x"), std::string::npos);
}


TEST_F(BackendTest, ACutTransferResumesFromTheSameVersionAndThrottlingIsRetried) {
  silo::testing::Random random;
  const std::string bytes = random.bytes(1000000);
  const std::string etag = "ETag: \"v1\"";
  FakeS3 fake({
      answer(503, "Slow Down", {},
             "<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"),
      // 400 KB of 1 MB, then the connection drops.
      answer(200, "OK", {etag}, std::string_view(bytes).substr(0, 400000), bytes.size()),
      answer(206, "Partial Content", {etag, "Content-Range: bytes 400000-999999/1000000"},
             std::string_view(bytes).substr(400000)),
      // The next object changes between the cut and the resume: never mixed.
      answer(200, "OK", {etag}, std::string_view(bytes).substr(0, 1000), bytes.size()),
      answer(412, "Precondition Failed", {}, "<Error><Code>PreconditionFailed</Code></Error>"),
      // A server that ignores Range on the resume: what the sink has is dropped.
      answer(200, "OK", {etag}, std::string_view(bytes).substr(0, 300000), bytes.size()),
      answer(200, "OK", {etag}, bytes),
  });
  auto b = make("data", fake.url());
  ASSERT_NE(b, nullptr);
  ASSERT_OK_AND_ASSIGN(const std::string got, get(*b, "obj"));
  EXPECT_EQ(difference(bytes, got), "") << "each byte once, in order";
  const auto seen = fake.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_NE(seen[2].find("bytes=400000-"), std::string::npos) << seen[2];
  EXPECT_NE(seen[2].find("\"v1\""), std::string::npos) << "resumed with If-Match: " << seen[2];

  auto changed = get(*b, "obj2");
  ASSERT_FALSE(changed.has_value());
  EXPECT_EQ(changed.error().code(), Code::kFailedPrecondition) << changed.error();

  ASSERT_OK_AND_ASSIGN(const std::string whole_again, get(*b, "obj3"));
  EXPECT_EQ(difference(bytes, whole_again), "") << "each byte once, in order";
}

// An https endpoint: nginx terminating TLS in front of moto, with a certificate for
// "localhost" signed by a CA made for the test.
class TlsFront {
 public:
  static Result<std::unique_ptr<TlsFront>> start(const std::string& upstream_url) {
    auto front = std::unique_ptr<TlsFront>(new TlsFront());
    ASSIGN_OR_RETURN(silo::testing::TempDir dir, silo::testing::TempDir::create("silo-tls"));
    front->dir_.emplace(std::move(dir));
    const std::string d = front->dir_->path();
    const std::string script = fmt::format(
        "set -e; cd {0};"
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=silo-test-ca -keyout ca.key "
        "-out ca.pem;"
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out "
        "server.csr;"
        "printf 'subjectAltName=DNS:localhost\n' > san.ext;"
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext "
        "-out server.pem",
        d);
    silo::testing::CommandOptions quiet;
    quiet.output_path = d + "/openssl.log";
    ASSIGN_OR_RETURN(const int made, silo::testing::run_command({"bash", "-c", script}, quiet));
    if (made != 0) return Status::unavailable("openssl failed (see {}/openssl.log)", d);
    front->port_ = free_port();
    const std::string conf = fmt::format(
        "user root; pid {0}/nginx.pid; error_log {0}/error.log; daemon off; worker_processes 1;\n"
        "events {{}}\n"
        "http {{ access_log off; client_body_temp_path {0}; proxy_temp_path {0};\n"
        "  server {{ listen 127.0.0.1:{1} ssl; ssl_certificate {0}/server.pem; ssl_certificate_key "
        "{0}/server.key;\n"
        "    client_max_body_size 0; proxy_request_buffering off; proxy_buffering off;\n"
        "    location / {{ proxy_pass {2}; proxy_http_version 1.1; }} }} }}\n",
        d, front->port_, upstream_url);
    if (FILE* f = std::fopen((d + "/nginx.conf").c_str(), "w")) {
      std::fputs(conf.c_str(), f);
      std::fclose(f);
    }
    std::vector<std::string> args = {"/usr/sbin/nginx", "-c", d + "/nginx.conf", "-p", d};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&front->nginx_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
      return Status::unavailable("nginx (installed by tools/setup.sh) could not be started");
    }
    const std::string listening = fmt::format("http://127.0.0.1:{}", front->port_);
    RETURN_IF_ERROR(
        silo::testing::wait_until([&] { return RawConnection::open(listening).has_value(); },
                                  seconds(20), "nginx to listen"));
    return front;
  }
  ~TlsFront() {
    if (nginx_ > 0) {
      ::kill(nginx_, SIGTERM);
      ::waitpid(nginx_, nullptr, 0);
    }
  }
  uint16_t port() const { return port_; }
  std::string ca_file() const { return dir_->path() + "/ca.pem"; }

 private:
  TlsFront() = default;
  std::optional<silo::testing::TempDir> dir_;
  uint16_t port_ = 0;
  pid_t nginx_ = 0;
};

TEST_F(BackendTest, HttpsEndpointsVerifyTheCertificateChainAndHostName) {
  ASSERT_OK_AND_ASSIGN(auto front, TlsFront::start(url()));
  http::ClientOptions trusting;
  trusting.tls_ca_file = front->ca_file();
  driver_->use_client_options(trusting);
  round_trip(make("data", fmt::format("https://localhost:{}", front->port())).get());

  // The host name must be on the certificate (it names localhost, not the address).
  auto by_address = make("data", fmt::format("https://127.0.0.1:{}", front->port()));
  const Status wrong_name = run([&] { return by_address->check_bucket(); });
  EXPECT_EQ(wrong_name.code(), Code::kFailedPrecondition) << wrong_name;
  EXPECT_NE(wrong_name.to_string().find("not trusted"), std::string::npos) << wrong_name;

  // The system's authorities do not know the test's CA.
  driver_->use_client_options({});
  auto untrusted = make("data", fmt::format("https://localhost:{}", front->port()));
  const Status unknown_ca = run([&] { return untrusted->check_bucket(); });
  EXPECT_EQ(unknown_ca.code(), Code::kFailedPrecondition) << unknown_ca;

  // A CA file that is not there is named.
  http::ClientOptions missing;
  missing.tls_ca_file = "/nonexistent/ca.pem";
  driver_->use_client_options(missing);
  auto no_ca = make("data", fmt::format("https://localhost:{}", front->port()));
  const Status no_ca_file = run([&] { return no_ca->check_bucket(); });
  EXPECT_EQ(no_ca_file.code(), Code::kFailedPrecondition) << no_ca_file;
  EXPECT_NE(no_ca_file.to_string().find("/nonexistent/ca.pem"), std::string::npos) << no_ca_file;
}

}  // namespace
}  // namespace silo::integration
