#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"

namespace silo::store {

// The calls through which the store changes object files, part files and work files on a
// mountpath: create, write, copy, fdatasync, directory fsync, mkdir, rename, unlink
// (LevelDB's Env, RocksDB's FileSystem; docs/adr/0015). Store::open takes one in
// StoreOptions; production uses posix_file_system(), whose calls are the plain syscalls,
// and tests pass one that injects faults (store/testing/faulty_file_system.h).
//
// Not through it: reads (a GET reads the fd the store hands out, with sendfile: no
// virtual call per read), RocksDB (its own Env), and the mountpath's own small files
// (id file, .clean, .silo-disabled, the probe), which are not object data.
//
// Every call blocks: call on a mountpath's DiskExecutor (or in Store::open). An
// implementation is shared by every mountpath and disk thread, so it must be thread-safe.
// Errors are Status::from_errno's (kResourceExhausted for ENOSPC/EDQUOT, kUnavailable for
// EIO...), each naming its path.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // A new empty file opened for writing: open(O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
  // 0644). kAlreadyExists when the name is taken. The caller closes the fd.
  [[nodiscard]] virtual Result<int> create_file(const std::string& path) = 0;
  // One write(2) of `data` at the fd's offset, retried on EINTR: how many bytes went, which
  // may be fewer than data.size() (a short write; the caller writes the rest). `path`
  // names the file in errors.
  [[nodiscard]] virtual Result<size_t> write(int fd, const std::string& path,
                                             std::span<const char> data) = 0;
  // Appends the first `size` bytes of `from` at the fd offset of `to`: copy_file_range
  // (in-kernel, a reflink where the file system can), else a bounded read/write loop.
  // kDataLoss when `from` is shorter.
  [[nodiscard]] virtual Status append_file(int to, const std::string& to_path, int from,
                                           const std::string& from_path, uint64_t size) = 0;
  // fdatasync(2): the file's bytes (and size) are on the disk when it returns ok.
  [[nodiscard]] virtual Status sync_data(int fd, const std::string& path) = 0;
  // fsync(2) of a directory, so entries created, renamed or removed in it survive a crash.
  [[nodiscard]] virtual Status sync_directory(const std::string& dir) = 0;
  // mkdir(2) with mode 0755. kAlreadyExists when `path` exists.
  [[nodiscard]] virtual Status make_directory(const std::string& path) = 0;
  // rename(2): atomically replaces `to`. Both are on one file system.
  [[nodiscard]] virtual Status rename(const std::string& from, const std::string& to) = 0;
  // unlink(2); a file that is already gone is ok.
  [[nodiscard]] virtual Status remove_file(const std::string& path) = 0;
  // Removes `path` and everything below it; already gone is ok.
  [[nodiscard]] virtual Status remove_tree(const std::string& path) = 0;
};

// The plain syscalls; one instance for the whole process.
std::shared_ptr<FileSystem> posix_file_system();

}  // namespace silo::store
