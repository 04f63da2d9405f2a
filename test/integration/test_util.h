#pragma once

// Helpers shared by the integration tests: byte comparison with a readable verdict,
// on-disk object counts, and a raw TCP connection for requests no well-behaved client
// would send.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "s3/sigv4.h"
#include "http/client.h"
#include "testing/local_cluster.h"
#include "testing/status_matchers.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace silo::integration {

using client::ByteRange;
using silo::testing::ClusterOptions;
using silo::testing::LocalCluster;
using silo::testing::NodeInfo;
using std::chrono::milliseconds;
using std::chrono::seconds;

// "" when equal, otherwise where and how `got` differs from `want`.
inline std::string difference(std::string_view want, std::string_view got) {
  if (want == got) return "";
  const size_t common = std::min(want.size(), got.size());
  size_t at = 0;
  while (at < common && want[at] == got[at]) ++at;
  return fmt::format("expected {} bytes, got {}; first difference at offset {}", want.size(), got.size(), at);
}

// Object files of a mountpath: <mp>/obj/<bucket id>/<2 hex>/<2 hex>/<hash>.<generation>.
inline std::vector<std::string> object_files(const std::string& mountpath) {
  std::vector<std::string> out;
  const std::string root = mountpath + "/obj/";
  for (auto& path : silo::testing::list_files(root)) {
    const std::string_view rel = std::string_view(path).substr(root.size());
    if (std::count(rel.begin(), rel.end(), '/') == 3) out.push_back(std::move(path));
  }
  return out;
}

inline size_t object_file_count(const NodeInfo& node) {
  size_t n = 0;
  for (const auto& mp : node.mountpaths) n += object_files(mp).size();
  return n;
}

// Every work file of a write in flight under any target's <mp>/work/ (not the failure
// probe's work/.probe, which each target makes and removes every second).
inline std::vector<std::string> work_files(const LocalCluster& cluster) {
  std::vector<std::string> out;
  for (const auto& id : cluster.target_ids()) {
    auto node = cluster.node(id);
    if (!node) continue;
    for (const auto& mp : node->mountpaths) {
      for (auto& f : silo::testing::list_files(mp + "/work")) {
        if (f == ".probe" || f.ends_with("/.probe")) continue;
        out.push_back(std::move(f));
      }
    }
  }
  return out;
}

// Waits until no target has a work file: writes in flight (a copy coming back to a
// restarted target, a repair) end, a leaked work file stays.
inline Status wait_for_no_work_files(const LocalCluster& cluster, std::chrono::seconds timeout) {
  std::vector<std::string> left;
  const Status quiet =
      silo::testing::wait_until([&] { return (left = work_files(cluster)).empty(); }, timeout, "no work files");
  if (quiet.is_ok()) return quiet;
  return Status::failed_precondition("{} work files left, e.g. {}", left.size(), left.empty() ? "" : left.front());
}

// Small real filesystems (tmpfs) in place of a target's mountpaths, unmounted at the end.
// Mounting needs root; without it the test that uses them is skipped, saying why.
class SmallMountpaths {
 public:
  ~SmallMountpaths() {
    silo::testing::CommandOptions quiet;
    for (const auto& path : mounted_) std::ignore = silo::testing::run_command({"umount", "-l", path}, quiet);
  }
  // Stops `id`, moves each of its mountpaths onto a tmpfs of `megabytes`, starts it again.
  Status replace(LocalCluster& cluster, std::string_view id, int megabytes) {
    ASSIGN_OR_RETURN(const NodeInfo node, cluster.node(id));
    RETURN_IF_ERROR(cluster.stop(id));
    silo::testing::CommandOptions quiet;
    for (const auto& mp : node.mountpaths) {
      const std::string script = fmt::format(
          "set -e; mv '{0}' '{0}.orig'; mkdir '{0}'; mount -t tmpfs -o size={1}m tmpfs '{0}'; cp -a '{0}.orig/.' '{0}/'",
          mp, megabytes);
      ASSIGN_OR_RETURN(const int rc, silo::testing::run_command({"sh", "-c", script}, quiet));
      if (rc != 0) return Status::failed_precondition("could not mount a tmpfs on {} (needs root)", mp);
      mounted_.push_back(mp);
    }
    return cluster.restart(id);
  }
  static double used_percent(const std::string& path) {
    struct statvfs vfs {};
    if (::statvfs(path.c_str(), &vfs) != 0) return 100;
    return 100.0 * static_cast<double>(vfs.f_blocks - vfs.f_bavail) / static_cast<double>(vfs.f_blocks);
  }

 private:
  std::vector<std::string> mounted_;
};

// The head of a request signed with the cluster's admin keys (SigV4, UNSIGNED-PAYLOAD),
// for hand-written requests on a RawConnection.
inline std::string signed_request(std::string_view method, std::string_view target, std::string_view host,
                                  std::vector<std::pair<std::string, std::string>> headers = {}) {
  headers.emplace_back("host", std::string(host));
  const size_t q = target.find('?');
  s3::SigningInput input{method, target.substr(0, q), q == std::string_view::npos ? "" : target.substr(q + 1),
                         &headers};
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto added = s3::sign(input, s3::SigningKey{"silo-admin", "silo-secret-key", "us-east-1", "s3"}, now,
                              "UNSIGNED-PAYLOAD");
  std::string out = fmt::format("{} {} HTTP/1.1\r\n", method, target);
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  for (const auto& [name, value] : added) out += name + ": " + value + "\r\n";
  return out + "\r\n";
}

// A plain blocking TCP connection to a node, for hand-written (and broken) requests.
class RawConnection {
 public:
  static Result<RawConnection> open(std::string_view url) {
    ASSIGN_OR_RETURN(const http::Endpoint endpoint, http::Endpoint::parse(url));
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::from_errno(errno, "socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(endpoint.port);
    ::inet_pton(AF_INET, endpoint.host.c_str(), &addr.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int err = errno;
      ::close(fd);
      return Status::from_errno(err, fmt::format("connect {}", url));
    }
    return RawConnection(fd);
  }
  RawConnection(RawConnection&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  RawConnection& operator=(RawConnection&&) = delete;
  ~RawConnection() { close(); }

  // Sends everything it can; false once the peer stopped taking bytes (closed, reset).
  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until `bytes` arrived, the peer closed, or `timeout` passed with no byte.
  std::string read(size_t bytes, milliseconds timeout = milliseconds(10000)) {
    std::string out;
    char buffer[64 * 1024];
    while (out.size() < bytes) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) break;
      const ssize_t n = ::recv(fd_, buffer, std::min(sizeof(buffer), bytes - out.size()), 0);
      if (n <= 0) break;
      out.append(buffer, static_cast<size_t>(n));
    }
    return out;
  }

  // Reads one response head ("HTTP/1.1 400 ...\r\n...\r\n\r\n"), or what came before the
  // peer closed or went silent.
  std::string read_head(milliseconds timeout = milliseconds(10000)) {
    std::string out;
    while (out.find("\r\n\r\n") == std::string::npos) {
      std::string more = read(1, timeout);
      if (more.empty()) break;
      out += more;
    }
    return out;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  int fd_;
};

// The status code of a raw response ("HTTP/1.1 431 ..." -> 431), 0 if none.
inline int status_code(std::string_view response) {
  if (response.substr(0, 9) != "HTTP/1.1 " || response.size() < 12) return 0;
  return std::atoi(std::string(response.substr(9, 3)).c_str());
}

}  // namespace silo::integration
