#pragma once

// A real S3-protocol server for the tests of remote buckets and the S3 backend client:
// moto_server on a free loopback port, and a driver that reads and writes its buckets
// through src/backend's S3 client.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <optional>
#include <thread>

#include "backend/s3_backend.h"
#include "base/mutex.h"
#include "test_util.h"
#include "testing/subprocess.h"

extern char** environ;

namespace silo::integration {

inline uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// moto_server (installed with the machine image's python3) on 127.0.0.1; stopped when
// destroyed. Its buckets live in its memory: a stopped server loses them.
class MotoServer {
 public:
  static constexpr const char* kAccessKey = "test-key";
  static constexpr const char* kSecretKey = "test-secret";

  static Result<std::unique_ptr<MotoServer>> start() {
    auto server = std::unique_ptr<MotoServer>(new MotoServer(free_port()));
    RETURN_IF_ERROR(server->spawn());
    return server;
  }
  ~MotoServer() { stop(); }

  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  // Kills the server (SIGKILL: no goodbye to clients mid-transfer).
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  // Starts it again on the same port, empty.
  Status restart() {
    stop();
    return spawn();
  }
  Status create_bucket(const std::string& name) const {
    silo::testing::CommandOptions quiet;
    ASSIGN_OR_RETURN(const int created,
                     silo::testing::run_command({"curl", "-sf", "-X", "PUT", "--aws-sigv4", "aws:amz:us-east-1:s3",
                                                 "--user", std::string(kAccessKey) + ":" + kSecretKey,
                                                 url() + "/" + name},
                                                quiet));
    if (created != 0) return Status::unavailable("could not create bucket {} at moto", name);
    return Status::ok();
  }

 private:
  explicit MotoServer(uint16_t port) : port_(port) {}
  Status spawn() {
    const std::string port = std::to_string(port_);
    std::vector<std::string> args = {"moto_server", "-H", "127.0.0.1", "-p", port};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t quiet_output;  // its request log would bury the test's
    posix_spawn_file_actions_init(&quiet_output);
    posix_spawn_file_actions_addopen(&quiet_output, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet_output, 2, "/dev/null", O_WRONLY, 0);
    const int spawned = ::posix_spawnp(&pid_, "moto_server", &quiet_output, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&quiet_output);
    if (spawned != 0) return Status::unavailable("moto_server could not be started (error {})", spawned);
    const std::string at = url();
    return silo::testing::wait_until([&at] { return RawConnection::open(at).has_value(); }, seconds(30),
                                     "moto_server to listen");
  }

  uint16_t port_;
  pid_t pid_ = 0;
};

// A scripted fake S3 for faults a real server does not produce on demand: it answers each
// connection's request with the next of `answers` (raw HTTP, possibly cut short) and
// keeps the request heads it saw.
class FakeS3 {
 public:
  explicit FakeS3(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeS3() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }
  std::vector<std::string> requests() {
    MutexLock lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    for (const std::string& answer : answers_) {
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) return;
      std::string head;
      char c = 0;
      while (head.find("\r\n\r\n") == std::string::npos && ::recv(conn, &c, 1, 0) == 1) head += c;
      {
        MutexLock lock(mutex_);
        requests_.push_back(head);
      }
      size_t sent = 0;
      while (sent < answer.size()) {
        const ssize_t n = ::send(conn, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(conn);  // every answer ends its connection (cut ones included)
    }
  }

  std::vector<std::string> answers_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  Mutex mutex_;
  std::vector<std::string> requests_ GUARDED_BY(mutex_);
};

// A raw answer; `content_length` when it announces more than `body` (a cut transfer).
inline std::string answer(int status, std::string_view reason, std::vector<std::string> headers,
                   std::string_view body, std::optional<size_t> content_length = std::nullopt) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                                status, reason, content_length.value_or(body.size()));
  for (const auto& h : headers) out += h + "\r\n";
  return out + "\r\n" + std::string(body);
}

// Runs src/backend clients on an io_context thread of its own, for the test's thread.
class BackendDriver {
 public:
  BackendDriver() : work_(io_.get_executor()), thread_([this] { io_.run(); }) {
    client_ = http::Client::create(io_.get_executor(), {});
  }
  ~BackendDriver() {
    client_.reset();
    work_.reset();
    io_.stop();
    thread_.join();
  }

  std::shared_ptr<http::Client> client() const { return client_; }
  // Backends made from now on use a client with these options (a test CA).
  void use_client_options(http::ClientOptions options) { client_ = http::Client::create(io_.get_executor(), options); }

  // An S3 backend for `bucket` at `endpoint` (moto's keys by default).
  Result<std::unique_ptr<backend::S3Backend>> make(std::string bucket, std::string endpoint,
                                                   std::string access_key = MotoServer::kAccessKey,
                                                   std::string secret = MotoServer::kSecretKey) {
    backend::S3Options options;
    options.endpoint_url = std::move(endpoint);
    options.bucket = std::move(bucket);
    options.access_key = std::move(access_key);
    options.secret_key = std::move(secret);
    options.part_size = 5ull << 20;
    options.first_backoff = milliseconds(10);
    return backend::S3Backend::create(client_, options);
  }

  // Runs a coroutine on the io_context and waits for its value.
  template <typename MakeAwaitable>
  auto run(MakeAwaitable make) {
    using T = typename decltype(make())::value_type;
    auto promise = std::make_shared<std::promise<T>>();
    std::future<T> future = promise->get_future();
    boost::asio::co_spawn(
        io_, [make, promise]() -> http::Awaitable<void> { promise->set_value(co_await make()); },
        boost::asio::detached);
    if (future.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      ADD_FAILURE() << "coroutine did not finish in time";
      std::abort();
    }
    return future.get();
  }

  Result<backend::RemoteObject> put(backend::ObjectBackend& b, const std::string& name, const std::string& bytes) {
    backend::Source source = [&bytes](uint64_t offset, std::span<char> out) -> http::Awaitable<Result<size_t>> {
      const size_t n = std::min<size_t>(out.size(), bytes.size() - std::min<size_t>(offset, bytes.size()));
      std::copy_n(bytes.data() + offset, n, out.data());
      co_return n;
    };
    return run([&] { return b.put(name, bytes.size(), source); });
  }

  Result<std::string> get(backend::ObjectBackend& b, const std::string& name,
                          std::optional<backend::RemoteRange> range = std::nullopt) {
    std::string got;
    backend::Sink sink = [&got](std::span<const char> bytes) -> http::Awaitable<Status> {
      got.append(bytes.data(), bytes.size());
      co_return Status::ok();
    };
    auto object = run([&] { return b.get(name, backend::GetOptions{.range = range, .if_match = "", .on_object = {}}, sink); });
    if (!object) return object.error();
    return got;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
  std::shared_ptr<http::Client> client_;
};

}  // namespace silo::integration
