#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "base/strong_id.h"
#include "store/detail/meta_db.h"
#include "store/detail/reconcile.h"
#include "async/disk_executor.h"
#include "store/file_system.h"
#include "store/store.h"

namespace silo::store::detail {

// A freshly created work file of a PUT in flight (<mountpath>/work/<random>).
struct WorkFile {
  int fd = -1;
  std::string path;
};

// One drive a target fully owns (docs/on-disk-format.md):
//   <path>/.silo-mountpath   format version and the stable mountpath id
//   <path>/meta/             the MetaDb
//   <path>/obj/              object files
//   <path>/work/             work files of PUTs, parts and completions in flight
//   <path>/parts/            part files of multipart uploads in flight
//   <path>/.clean            present only while cleanly closed
// Owned by the Store for the target's lifetime (a detached one keeps its slot, its
// MetaDb closed). Its DiskExecutor is joined before its MetaDb closes (member order), so
// queued work never sees a closed DB.
class Mountpath {
 public:
  // Creates the directory tree and the id file when new, and returns the id. Blocking.
  static Result<std::string> read_or_create_id(const std::string& path);
  // Opens the MetaDb, empties work/, removes part files of uploads that no longer exist,
  // and after an unclean shutdown reconciles object and part files against the metadata.
  // Object, part and work files are changed through `file_system`, here and for the
  // mountpath's life. Blocking. Requires: read_or_create_id(path) returned `id`.
  static Result<std::unique_ptr<Mountpath>> open(const std::string& path, const std::string& id,
                                                 const MetaDbResources& resources, size_t threads,
                                                 std::shared_ptr<FileSystem> file_system);

  const std::string& path() const { return path_; }
  const std::string& id() const { return id_; }
  async::DiskExecutor& disk() { return disk_; }
  // Every change to object, part and work files goes through this (store/file_system.h).
  FileSystem& file_system() { return *file_system_; }
  MetaDb& meta() { return *meta_; }
  const std::string& object_dir() const { return object_dir_; }
  std::string object_file_path(BucketId bucket, std::string_view name, uint64_t generation) const;
  const std::string& parts_dir() const { return parts_dir_; }
  // <path>/parts/<bucket id>/<upload id>: the part files of one upload.
  std::string upload_dir(BucketId bucket, std::string_view upload_id) const;
  // upload_dir()/<part number as 5 digits>.<generation as 16 hex>.
  std::string part_file_path(BucketId bucket, std::string_view upload_id, uint32_t part_number,
                             uint64_t generation) const;
  // Errors: kResourceExhausted, kUnavailable and others from errno.
  Result<WorkFile> create_work_file();
  // Syncs the metadata and all file data, then writes .clean. Blocking.
  Status mark_clean();
  MountpathInfo info() const;

  MountpathState state() const { return state_.load(); }
  bool is_in_service() const { return !is_detached() && state() == MountpathState::kInService; }
  bool is_readable() const { return !is_detached() && state() != MountpathState::kFailed; }
  // Detached (Store::detach_mountpath): its slot stays, nothing touches it any more.
  bool is_detached() const { return detached_.load(); }
  // The HRW hash of the id, computed once (placement::candidate_hash).
  uint64_t hrw_hash() const { return hrw_hash_; }
  // Writes or removes <path>/.silo-disabled, then changes the state. Blocking.
  Status set_disabled(bool disabled);
  // Takes it out for good: nothing is read from or written to it any more.
  void mark_failed(std::string why);
  // Detaching: store operations that start from now on skip it (a failed detach undoes it).
  void set_detached(bool detached) { detached_ = detached; }
  // Closes a detached mountpath: removes .silo-disabled (attached again, it is in
  // service), marks it clean and closes its MetaDb, so nothing of it stays open.
  // Blocking. Requires: is_detached(), and no store operation uses it any more (OpGate).
  Status close_detached();
  // Whether the id file still reads and a file can be made in work/. Blocking.
  Status probe() const;
  // The records that reconciliation at open found without their bytes (once; the store
  // settles them: StoreImpl::settle_lost_records).
  std::vector<LostRecord> take_lost_records() { return std::exchange(lost_at_open_, {}); }
  // How many objects were kept as lost at open (MountpathInfo::lost_objects).
  void set_lost_objects(uint64_t count) { lost_objects_ = count; }

 private:
  Mountpath(std::string path, std::string id, size_t threads,
            std::shared_ptr<FileSystem> file_system);
  Status recover(const MetaDbResources& resources);

  std::string path_;
  std::string id_;
  std::string object_dir_;
  std::string work_dir_;
  std::string parts_dir_;
  // Before disk_: work still queued when the executor joins may use it.
  std::shared_ptr<FileSystem> file_system_;
  std::unique_ptr<MetaDb> meta_;
  uint64_t hrw_hash_;
  std::atomic<MountpathState> state_{MountpathState::kInService};
  std::atomic<bool> detached_{false};
  std::vector<LostRecord> lost_at_open_;  // written by recover(), taken once after open
  std::atomic<uint64_t> lost_objects_{0};
  mutable Mutex failure_mutex_;
  std::string failure_ GUARDED_BY(failure_mutex_);
  async::DiskExecutor disk_;
};

}  // namespace silo::store::detail
