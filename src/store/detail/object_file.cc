#include "store/detail/object_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "base/hash.h"

namespace silo::store::detail {

std::string object_file_relative_stem(BucketId bucket, std::string_view name) {
  const std::string h = hash::xxh128_hex(name);
  return fmt::format("{}/{}/{}/{}", bucket.value(), std::string_view(h).substr(0, 2),
                     std::string_view(h).substr(2, 2), h);
}

std::string object_file_relative_path(BucketId bucket, std::string_view name, uint64_t generation) {
  return fmt::format("{}.{:016x}", object_file_relative_stem(bucket, name), generation);
}

std::string part_file_name(uint32_t part_number, uint64_t generation) {
  return fmt::format("{:05}.{:016x}", part_number, generation);
}

Status write_fully(FileSystem& file_system, int fd, std::span<const char> data,
                   const std::string& path) {
  while (!data.empty()) {
    ASSIGN_OR_RETURN(const size_t n, file_system.write(fd, path, data));
    // write(2) to a regular file returns 0 only when nothing can go: looping would spin.
    if (n == 0)
      return Status::unavailable("write {}: no progress with {} bytes left", path, data.size());
    data = data.subspan(n);
  }
  return Status::ok();
}

Status sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, fmt::format("open directory {}", dir));
  Status status;
  if (::fsync(fd) != 0) status = Status::from_errno(errno, fmt::format("fsync {}", dir));
  ::close(fd);
  return status;
}

Status make_directories(FileSystem& file_system, const std::string& base,
                        std::string_view relative_dir, Durability durability) {
  std::string path = base;
  std::string parent;
  size_t begin = 0;
  while (begin < relative_dir.size()) {
    size_t end = relative_dir.find('/', begin);
    if (end == std::string_view::npos) end = relative_dir.size();
    parent = path;
    path.push_back('/');
    path.append(relative_dir.substr(begin, end - begin));
    begin = end + 1;
    const Status made = file_system.make_directory(path);
    if (made.is_ok()) {
      if (durability == Durability::kFsync) RETURN_IF_ERROR(file_system.sync_directory(parent));
    } else if (made.code() != Code::kAlreadyExists) {
      return made;
    }
  }
  return Status::ok();
}

Status remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::from_errno(errno, fmt::format("unlink {}", path));
  }
  return Status::ok();
}

Status write_file_durably(const std::string& dir, const std::string& name,
                          std::string_view content) {
  const std::string final_path = dir + "/" + name;
  const std::string tmp_path = final_path + ".tmp";
  const int fd = ::open(tmp_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return Status::from_errno(errno, fmt::format("create {}", tmp_path));
  // The mountpath's own small files go to the disk itself, whatever the store's FileSystem.
  Status status = write_fully(*posix_file_system(), fd, content, tmp_path);
  if (status.is_ok() && ::fsync(fd) != 0) {
    status = Status::from_errno(errno, fmt::format("fsync {}", tmp_path));
  }
  ::close(fd);
  if (status.is_ok() && ::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    status = Status::from_errno(errno, fmt::format("rename {}", tmp_path));
  }
  if (!status.is_ok()) {
    std::ignore = remove_file(tmp_path);  // best effort; the error above is what matters
    return status;
  }
  return sync_directory(dir);
}

Result<std::string> read_small_file(const std::string& path, size_t max_size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, fmt::format("open {}", path));
  std::string content;
  char buffer[4096];
  Status status;
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Status::from_errno(errno, fmt::format("read {}", path));
      break;
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > max_size) {
      status = Status::data_loss("{} is larger than {} bytes", path, max_size);
      break;
    }
  }
  ::close(fd);
  if (!status.is_ok()) return status;
  return content;
}

uint64_t random_u64() {
  uint64_t value = 0;
  auto* bytes = reinterpret_cast<char*>(&value);
  size_t have = 0;
  while (have < sizeof(value)) {
    const ssize_t n = ::getrandom(bytes + have, sizeof(value) - have, 0);
    // getrandom() on a running Linux only fails on EINTR; anything else is a broken host.
    SILO_CHECK(n >= 0 || errno == EINTR) << "getrandom failed: errno " << errno;
    if (n > 0) have += static_cast<size_t>(n);
  }
  return value;
}

Md5Stream::Md5Stream() : context_(EVP_MD_CTX_new()) {
  SILO_CHECK(context_ != nullptr) << "EVP_MD_CTX_new failed";
  SILO_CHECK(EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_), EVP_md5(), nullptr) == 1)
      << "MD5 is not available from OpenSSL";
}

Md5Stream::~Md5Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }

void Md5Stream::update(std::span<const char> data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), data.data(), data.size());
}

std::string Md5Stream::finish_raw() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string Md5Stream::finish_hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), digest, &length);
  return hash::to_hex(std::span<const unsigned char>(digest, length));
}

}  // namespace silo::store::detail
