#include "store/file_system.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

#include "store/detail/object_file.h"

namespace silo::store {
namespace {

// The calls as they were before the seam existed: each one is the syscall it names, with
// the same flags, modes and error messages.
class PosixFileSystem final : public FileSystem {
 public:
  Result<int> create_file(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return Status::from_errno(errno, fmt::format("create {}", path));
    return fd;
  }

  Result<size_t> write(int fd, const std::string& path, std::span<const char> data) override {
    for (;;) {
      const ssize_t n = ::write(fd, data.data(), data.size());
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return Status::from_errno(errno, fmt::format("write {}", path));
    }
  }

  Status append_file(int to, const std::string& to_path, int from, const std::string& from_path,
                     uint64_t size) override {
    off_t in_offset = 0;
    uint64_t left = size;
    while (left > 0) {
      // Bounded per call so one huge part does not pin the thread in the kernel for long.
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, uint64_t{1} << 30));
      const ssize_t n = ::copy_file_range(from, &in_offset, to, nullptr, chunk, 0);
      if (n > 0) {
        left -= static_cast<uint64_t>(n);
        continue;
      }
      if (n == 0) return Status::data_loss("{} is shorter than {} bytes", from_path, size);
      if (errno == EINTR) continue;
      if (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL) {
        return copy_by_reading(to, to_path, from, from_path, in_offset, left);
      }
      return Status::from_errno(errno, fmt::format("copy {} to {}", from_path, to_path));
    }
    return Status::ok();
  }

  Status sync_data(int fd, const std::string& path) override {
    if (::fdatasync(fd) != 0) return Status::from_errno(errno, fmt::format("fdatasync {}", path));
    return Status::ok();
  }

  Status sync_directory(const std::string& dir) override { return detail::sync_directory(dir); }

  Status make_directory(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0)
      return Status::from_errno(errno, fmt::format("mkdir {}", path));
    return Status::ok();
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::from_errno(errno, fmt::format("rename {} to {}", from, to));
    }
    return Status::ok();
  }

  Status remove_file(const std::string& path) override { return detail::remove_file(path); }

  Status remove_tree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return Status::from_errno(ec.value(), fmt::format("remove {}", path));
    return Status::ok();
  }

 private:
  Status copy_by_reading(int to, const std::string& to_path, int from, const std::string& from_path,
                         off_t offset, uint64_t size) {
    constexpr size_t kBufferBytes = 1u << 20;
    std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, kBufferBytes)));
    uint64_t left = size;
    while (left > 0) {
      const ssize_t n =
          ::pread(from, buffer.data(), std::min<uint64_t>(left, buffer.size()), offset);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::from_errno(errno, fmt::format("read {}", from_path));
      }
      if (n == 0) return Status::data_loss("{} is shorter than {} bytes", from_path, size);
      RETURN_IF_ERROR(detail::write_fully(
          *this, to, std::span<const char>(buffer.data(), static_cast<size_t>(n)), to_path));
      offset += n;
      left -= static_cast<uint64_t>(n);
    }
    return Status::ok();
  }
};

}  // namespace

std::shared_ptr<FileSystem> posix_file_system() {
  static const std::shared_ptr<FileSystem> instance = std::make_shared<PosixFileSystem>();
  return instance;
}

}  // namespace silo::store
