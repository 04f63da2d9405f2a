#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/strong_id.h"
#include "store/file_system.h"
#include "store/store.h"

// Blocking file helpers of the store: object file layout, full writes, fsync of files and
// directories, and the MD5 stream. Everything here runs on a DiskExecutor thread (or in
// Store::open), never on a network thread.
namespace silo::store::detail {

// Where an object's file lives, relative to <mountpath>/obj:
// "<bucket id>/<h[0:2]>/<h[2:4]>/<h>.<generation as 16 hex>", h = xxh128_hex(name).
// Object names never become paths (docs/on-disk-format.md).
std::string object_file_relative_path(BucketId bucket, std::string_view name, uint64_t generation);
// The same without the ".<generation>" suffix: every generation of one object shares it.
std::string object_file_relative_stem(BucketId bucket, std::string_view name);

// The name of a part file inside its upload's directory:
// "<part number as 5 decimal digits>.<generation as 16 hex>".
std::string part_file_name(uint32_t part_number, uint64_t generation);

// Writes all of `data` at the fd's offset through `file_system`, writing the rest after a
// short write. Errors: kResourceExhausted (ENOSPC, EDQUOT), kUnavailable (EIO, or a write
// that made no progress), others from errno.
Status write_fully(FileSystem& file_system, int fd, std::span<const char> data,
                   const std::string& path);
// fsync of a directory, so that entries created or renamed in it survive a crash. For the
// mountpath's own files; object directories are synced through the FileSystem.
Status sync_directory(const std::string& dir);
// mkdir -p of `relative_dir` below the existing directory `base`, through `file_system`.
// With kFsync every new directory's parent is synced, so the new entry survives a crash.
Status make_directories(FileSystem& file_system, const std::string& base,
                        std::string_view relative_dir, Durability durability);
// unlink(); a file that is already gone is ok. For the mountpath's own files; object,
// part and work files are removed through the FileSystem.
Status remove_file(const std::string& path);
// Writes `content` to dir/name through a temporary file, fsync and rename, then syncs dir:
// readers see the old file or the whole new one.
Status write_file_durably(const std::string& dir, const std::string& name,
                          std::string_view content);
// Reads a small file whole; kNotFound when it does not exist, kDataLoss past max_size.
Result<std::string> read_small_file(const std::string& path, size_t max_size);
// 64 random bits from the kernel (ids, generations, work file names).
uint64_t random_u64();

// Streaming MD5 through OpenSSL's EVP interface (the MD5_* calls are deprecated in 3.0).
class Md5Stream {
 public:
  Md5Stream();
  ~Md5Stream();
  Md5Stream(const Md5Stream&) = delete;
  Md5Stream& operator=(const Md5Stream&) = delete;
  void update(std::span<const char> data);
  // 32 lowercase hex digits. Requires: called once, after the last update().
  std::string finish_hex();
  // The 16 raw bytes. Requires: called once (instead of finish_hex), after the last update().
  std::string finish_raw();

 private:
  void* context_;  // EVP_MD_CTX, kept opaque so OpenSSL headers stay out of this header
};

}  // namespace silo::store::detail
