#pragma once

// Test-only (header only; not part of silo_store): a FileSystem that injects faults, for
// the store's unit tests. It lives beside the store, not in src/testing/, because
// testing/ must not depend on server-side modules (src/testing/README.md).
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "store/file_system.h"

namespace silo::store::testing {

// The kinds of FileSystem call, one per method.
enum class FileOp {
  kCreate,
  kWrite,
  kAppend,
  kSyncData,
  kSyncDirectory,
  kMakeDirectory,
  kRename,
  kRemoveFile,
  kRemoveTree,
};

// Which calls of a kind a fault hits, counted from when it is set.
enum class Times { kOnce, kFromThenOn };

// Fails calls of one kind with an errno: the nth one, or (from_then_on) every one from the
// nth on. Fault(FileOp::kWrite, ENOSPC).on_call(3) fails the third write.
struct Fault {
  Fault(FileOp kind, int errno_value) : op(kind), error(errno_value) {}
  // The first matching call that fails is the nth (1-based) since the fault was set.
  Fault on_call(uint64_t n) const {
    Fault fault = *this;
    fault.nth = n;
    return fault;
  }
  Fault from_then_on() const {
    Fault fault = *this;
    fault.times = Times::kFromThenOn;
    return fault;
  }
  // Only calls on paths that contain `part` match.
  Fault on_paths_containing(std::string part) const {
    Fault fault = *this;
    fault.path_contains = std::move(part);
    return fault;
  }

  FileOp op;
  int error;  // the errno the call fails with (EIO, ENOSPC...)
  uint64_t nth = 1;
  Times times = Times::kOnce;
  std::string path_contains;  // "" matches every path
};

// How gtest prints a Fault parameter.
inline void PrintTo(const Fault& fault, std::ostream* out) {
  *out << "Fault(op " << static_cast<int>(fault.op) << ", errno " << fault.error << ", call "
       << fault.nth << (fault.times == Times::kFromThenOn ? " and after" : "") << ", paths '"
       << fault.path_contains << "')";
}

// Where a crash happens relative to the call it is named after: kBefore, the call has no
// effect; kAfter, it takes effect and the process dies before it learns so.
enum class CrashTiming { kBefore, kAfter };

// A point on a write's way where the process may die (WorkFileWriter::commit, then
// StoreImpl::install). `path_contains` picks the call among others of its kind; with
// `is_after_rename` only a call after a rename counts (a directory sync after the rename,
// not one of those that make the object's directories).
struct CrashPoint {
  std::string_view name;
  FileOp op;
  CrashTiming timing;
  std::string_view path_contains;
  bool is_after_rename = false;
};

// The named points of a PUT with Durability::kFsync, in the order it passes them.
inline constexpr CrashPoint kBeforeWorkFileSync{"BeforeWorkFileSync", FileOp::kSyncData,
                                                CrashTiming::kBefore, "/work/", false};
inline constexpr CrashPoint kBeforeRename{"BeforeRename", FileOp::kRename, CrashTiming::kBefore,
                                          "/work/", false};
inline constexpr CrashPoint kAfterRename{"AfterRename", FileOp::kRename, CrashTiming::kAfter,
                                         "/work/", false};
inline constexpr CrashPoint kAfterDirectorySync{"AfterDirectorySync", FileOp::kSyncDirectory,
                                                CrashTiming::kAfter, "/obj/", true};
// After the metadata commit: the old generation's unlink (only an overwrite has one).
inline constexpr CrashPoint kAfterCommit{"AfterCommit", FileOp::kRemoveFile, CrashTiming::kBefore,
                                         "/obj/", false};
inline constexpr CrashPoint kCrashPoints[] = {kBeforeWorkFileSync, kBeforeRename, kAfterRename,
                                              kAfterDirectorySync, kAfterCommit};

// Wraps another FileSystem (the POSIX one by default) and, as told: fails chosen calls
// with an errno, makes writes short, or "crashes" at a CrashPoint: from then on every call
// fails with EIO and has no effect, as if the process were gone. A test then destroys the
// store without close() and opens a new one on the same directories after restart(): the
// next process. What it models is a process crash (kill -9), not a power loss: bytes the
// kernel accepted stay, synced or not; and RocksDB's writes do not go through it, so
// crash points sit where the store writes no metadata after them. Thread-safe.
class FaultyFileSystem final : public FileSystem {
 public:
  explicit FaultyFileSystem(std::shared_ptr<FileSystem> base = posix_file_system())
      : base_(std::move(base)) {}

  void inject(Fault fault) {
    MutexLock lock(mutex_);
    faults_.push_back(Armed{std::move(fault), 0});
  }
  // From now on each write(2) writes at most `bytes` (0: none, as a write that makes no
  // progress); nullopt: whole writes again.
  void set_max_write_bytes(std::optional<size_t> bytes) {
    MutexLock lock(mutex_);
    max_write_bytes_ = bytes;
  }
  void crash_at(const CrashPoint& point) {
    MutexLock lock(mutex_);
    crash_point_ = point;
    has_renamed_ = false;
  }
  bool has_crashed() const {
    MutexLock lock(mutex_);
    return has_crashed_;
  }
  // The next process: no faults, no crash, whole writes.
  void restart() {
    MutexLock lock(mutex_);
    faults_.clear();
    crash_point_.reset();
    has_crashed_ = false;
    has_renamed_ = false;
    max_write_bytes_.reset();
  }
  // Calls of `op` since construction that reached the base file system.
  uint64_t calls(FileOp op) const {
    MutexLock lock(mutex_);
    return calls_[static_cast<size_t>(op)];
  }

  Result<int> create_file(const std::string& path) override {
    RETURN_IF_ERROR(before(FileOp::kCreate, path));
    return after(FileOp::kCreate, path, base_->create_file(path));
  }
  Result<size_t> write(int fd, const std::string& path, std::span<const char> data) override {
    RETURN_IF_ERROR(before(FileOp::kWrite, path));
    {
      MutexLock lock(mutex_);
      if (max_write_bytes_ && data.size() > *max_write_bytes_) data = data.first(*max_write_bytes_);
    }
    return after(FileOp::kWrite, path, base_->write(fd, path, data));
  }
  Status append_file(int to, const std::string& to_path, int from, const std::string& from_path,
                     uint64_t size) override {
    RETURN_IF_ERROR(before(FileOp::kAppend, to_path));
    return after(FileOp::kAppend, to_path, base_->append_file(to, to_path, from, from_path, size));
  }
  Status sync_data(int fd, const std::string& path) override {
    RETURN_IF_ERROR(before(FileOp::kSyncData, path));
    return after(FileOp::kSyncData, path, base_->sync_data(fd, path));
  }
  Status sync_directory(const std::string& dir) override {
    RETURN_IF_ERROR(before(FileOp::kSyncDirectory, dir));
    return after(FileOp::kSyncDirectory, dir, base_->sync_directory(dir));
  }
  Status make_directory(const std::string& path) override {
    RETURN_IF_ERROR(before(FileOp::kMakeDirectory, path));
    return after(FileOp::kMakeDirectory, path, base_->make_directory(path));
  }
  Status rename(const std::string& from, const std::string& to) override {
    RETURN_IF_ERROR(before(FileOp::kRename, from));
    return after(FileOp::kRename, from, base_->rename(from, to));
  }
  Status remove_file(const std::string& path) override {
    RETURN_IF_ERROR(before(FileOp::kRemoveFile, path));
    return after(FileOp::kRemoveFile, path, base_->remove_file(path));
  }
  Status remove_tree(const std::string& path) override {
    RETURN_IF_ERROR(before(FileOp::kRemoveTree, path));
    return after(FileOp::kRemoveTree, path, base_->remove_tree(path));
  }

 private:
  struct Armed {
    Fault fault;
    uint64_t matched = 0;  // matching calls seen since it was set
  };

  static bool matches(FileOp op, std::string_view path, FileOp wanted, std::string_view part) {
    return op == wanted && (part.empty() || path.find(part) != std::string_view::npos);
  }
  bool is_crash_point(FileOp op, std::string_view path, CrashTiming timing) const REQUIRES(mutex_) {
    return crash_point_ && crash_point_->timing == timing &&
           (!crash_point_->is_after_rename || has_renamed_) &&
           matches(op, path, crash_point_->op, crash_point_->path_contains);
  }
  static Status crashed(std::string_view path) {
    return Status::from_errno(EIO, "crashed before " + std::string(path));
  }

  // Decides, before the base call, whether the call fails without effect.
  Status before(FileOp op, std::string_view path) {
    MutexLock lock(mutex_);
    if (has_crashed_) return crashed(path);
    if (is_crash_point(op, path, CrashTiming::kBefore)) {
      has_crashed_ = true;
      return crashed(path);
    }
    for (Armed& armed : faults_) {
      if (!matches(op, path, armed.fault.op, armed.fault.path_contains)) continue;
      ++armed.matched;
      const bool hits = armed.fault.times == Times::kOnce ? armed.matched == armed.fault.nth
                                                          : armed.matched >= armed.fault.nth;
      if (hits)
        return Status::from_errno(armed.fault.error, "injected fault on " + std::string(path));
    }
    ++calls_[static_cast<size_t>(op)];
    return Status::ok();
  }

  // After the base call: a kAfter crash point turns its result into the crash.
  template <typename R>
  R after(FileOp op, std::string_view path, R result) {
    MutexLock lock(mutex_);
    if (is_crash_point(op, path, CrashTiming::kAfter)) {
      has_crashed_ = true;
      return crashed(path);
    }
    if (op == FileOp::kRename && result_is_ok(result)) has_renamed_ = true;
    return result;
  }

  static bool result_is_ok(const Status& status) { return status.is_ok(); }
  template <typename T>
  static bool result_is_ok(const Result<T>& result) {
    return result.has_value();
  }

  const std::shared_ptr<FileSystem> base_;
  mutable Mutex mutex_;
  std::vector<Armed> faults_ GUARDED_BY(mutex_);
  std::optional<size_t> max_write_bytes_ GUARDED_BY(mutex_);
  std::optional<CrashPoint> crash_point_ GUARDED_BY(mutex_);
  bool has_crashed_ GUARDED_BY(mutex_) = false;
  bool has_renamed_ GUARDED_BY(mutex_) = false;  // since crash_at()
  uint64_t calls_[static_cast<size_t>(FileOp::kRemoveTree) + 1] GUARDED_BY(mutex_) = {};
};

}  // namespace silo::store::testing
