#pragma once

#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/object_ref.h"
#include "base/result.h"
#include "wire/codec.h"

namespace silo::store {

template <typename T>
using Awaitable = boost::asio::awaitable<T>;

enum class Durability { kFsync, kPageCache };

struct PutOptions {
  Durability durability = Durability::kFsync;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
  // When set, commit() fails with kInvalidArgument if the bytes' MD5 (hex) differs.
  std::optional<std::string> expected_md5_hex;
  // When set, commit() fails with kInvalidArgument unless exactly this many bytes came.
  std::optional<uint64_t> expected_size;
};

// One PUT in flight: bytes go to a work file on the object's mountpath while XXH3 and
// MD5 are computed (on the disk executor). commit() makes it visible atomically; an
// uncommitted writer removes its work file when destroyed. Owned by the request handler.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  virtual Awaitable<Status> write(std::span<const char> data) = 0;
  // fsync per durability, rename into place, commit the metadata record, then remove the
  // previous generation's file. Only after this returns ok may the PUT be acknowledged.
  virtual Awaitable<Result<wire::ObjectRecord>> commit() = 0;
};

// An object opened for reading: the fd stays valid (and its bytes unchanged) even if the
// object is overwritten or deleted meanwhile. Closes the fd when destroyed.
class OpenObject {
 public:
  OpenObject(int fd, wire::ObjectRecord record) : fd_(fd), record_(std::move(record)) {}
  ~OpenObject();
  OpenObject(OpenObject&& other) noexcept;
  OpenObject& operator=(OpenObject&&) = delete;
  OpenObject(const OpenObject&) = delete;
  int fd() const { return fd_; }
  const wire::ObjectRecord& record() const { return record_; }

 private:
  int fd_;
  wire::ObjectRecord record_;
};

struct ListOptions {
  std::string prefix;
  std::string start_after;  // exclusive
  size_t limit = 1000;
};

struct ListResult {
  std::vector<wire::ListEntry> entries;  // sorted by name, at most `limit`
  bool is_truncated = false;             // more entries follow the last one
};

struct MountpathInfo {
  std::string path;
  std::string id;  // stable id kept in <path>/.silo-mountpath, used by placement
  uint64_t capacity_bytes = 0;
  uint64_t available_bytes = 0;
};

struct StoreOptions {
  std::vector<std::string> mountpaths;  // directories, created if missing
  size_t threads_per_mountpath = 4;
};

// One target's objects on its mountpaths (DESIGN.md "Storage on a target"). Thread-safe;
// every method that touches a disk runs on that mountpath's DiskExecutor and resumes on
// the caller's executor. Lives as long as the target.
class Store {
 public:
  // Opens (creating when new) every mountpath and its RocksDB, removes leftover work
  // files, and after an unclean shutdown reconciles object files against metadata.
  // Blocking; call at startup. Errors name the mountpath.
  static Result<std::unique_ptr<Store>> open(StoreOptions options);
  virtual ~Store() = default;

  // Errors: kResourceExhausted (disk full), kUnavailable (I/O error).
  virtual Awaitable<Result<std::unique_ptr<ObjectWriter>>> create(const ObjectRef& object,
                                                                  PutOptions options) = 0;
  // kNotFound when the object does not exist.
  virtual Awaitable<Result<OpenObject>> open(const ObjectRef& object) = 0;
  virtual Awaitable<Result<wire::ObjectRecord>> stat(const ObjectRef& object) = 0;
  // kNotFound when the object does not exist.
  virtual Awaitable<Status> remove(const ObjectRef& object) = 0;
  // One page of a bucket's objects, merged across mountpaths, from the metadata only.
  virtual Awaitable<Result<ListResult>> list(BucketId bucket, ListOptions options) = 0;
  // Removes every object of `bucket` (after the bucket was deleted). Idempotent.
  virtual Awaitable<Status> remove_bucket(BucketId bucket) = 0;
  // Bucket ids that have at least one object here (to collect deleted buckets).
  virtual Awaitable<Result<std::vector<BucketId>>> bucket_ids() = 0;

  virtual std::vector<MountpathInfo> mountpaths() const = 0;
  // Flushes metadata and marks every mountpath cleanly closed, so the next open skips the
  // full reconciliation. Call after the last request finished.
  virtual void close() = 0;
};

}  // namespace silo::store
