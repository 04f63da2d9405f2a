#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "store/detail/meta_db.h"
#include "store/detail/mountpath.h"
#include "placement/hrw.h"
#include "store/detail/object_locks.h"
#include "store/detail/op_gate.h"
#include "store/detail/work_file_writer.h"
#include "store/store.h"

namespace silo::store::detail {

// kInvalidArgument for a name that must never be stored (empty, or not UTF-8: the
// records' name is a proto3 string).
Status check_object_name(const ObjectRef& object);
// Copies the fields a client describes an object with (content_type, content_encoding,
// content_disposition, content_language, cache_control, expires, user_metadata, tags,
// checksums) from `from` into `to`, replacing what `to` had in them.
void copy_descriptive_fields(const wire::ObjectRecord& from, wire::ObjectRecord& to);
UploadInfo upload_info_of(const wire::UploadRecord& record);

// The store's mountpaths by slot: slots fill in order (at open, then attach) and are never
// emptied while the store lives, so an index names one mountpath for good and readers need
// no lock; a detached mountpath keeps its slot, closed. Appends are serialized by the
// store.
class MountpathSlots {
 public:
  size_t size() const { return size_.load(std::memory_order_acquire); }
  const std::unique_ptr<Mountpath>& operator[](size_t index) const { return slots_[index]; }
  std::span<const std::unique_ptr<Mountpath>> all() const { return {slots_.data(), size()}; }
  // Requires: size() < kMaxMountpaths; one caller at a time.
  size_t append(std::unique_ptr<Mountpath> mountpath) {
    const size_t index = size();
    slots_[index] = std::move(mountpath);
    size_.store(index + 1, std::memory_order_release);
    return index;
  }

 private:
  std::array<std::unique_ptr<Mountpath>, kMaxMountpaths> slots_;
  std::atomic<size_t> size_{0};
};

// The encoded archive index (wire::ArchiveIndex) of the file at `path`, which holds the
// bytes of `record`'s version of `object`, when its name says it is an archive
// (archive::format_of_name); "" otherwise, or when the bytes are not one (logged: a
// member read reports it). Blocking (indexes.cc).
std::string index_of_archive(const std::string& path, const ObjectRef& object, const wire::ObjectRecord& record);

// The Store: mountpaths, placement of objects on them, and the per-object locks.
// Awaitable methods hop to the owner mountpath's DiskExecutor; the *_blocking helpers run
// there. Must outlive every ObjectWriter and request it served (its destructor joins the
// disk threads).
class StoreImpl final : public Store {
 public:
  StoreImpl(std::vector<std::unique_ptr<Mountpath>> mountpaths, MetaDbResources resources,
            size_t threads_per_mountpath, uint64_t min_part_size,
            std::shared_ptr<FileSystem> file_system);

  Awaitable<Result<std::unique_ptr<ObjectWriter>>> create(const ObjectRef& object,
                                                          PutOptions options) override;
  Awaitable<Result<OpenObject>> open(const ObjectRef& object) override;
  Result<OpenObject> open_now(const ObjectRef& object) override;
  Awaitable<Result<wire::ObjectRecord>> stat(const ObjectRef& object) override;
  Awaitable<Status> remove(const ObjectRef& object) override;
  Awaitable<Status> remove_generation(const ObjectRef& object, uint64_t generation) override;
  uint64_t object_count_estimate() const override;
  Awaitable<Result<ListResult>> list(BucketId bucket, ListOptions options) override;
  Awaitable<Status> remove_bucket(BucketId bucket) override;
  void close_bucket(BucketId bucket) override;
  void open_bucket(BucketId bucket) override;
  Awaitable<Status> drain_bucket(BucketId bucket, std::chrono::milliseconds timeout) override;
  Awaitable<Result<wire::ObjectRecord>> update(const ObjectRef& object,
                                               std::function<Status(wire::ObjectRecord&)> mutate,
                                               Durability durability) override;
  Awaitable<Status> set_block_sums(const ObjectRef& object, uint64_t generation, uint64_t block_size,
                                   std::vector<uint64_t> sums) override;
  Awaitable<Result<UploadInfo>> create_upload(const ObjectRef& object, wire::ObjectRecord attributes,
                                              UploadChecksum checksum) override;
  Awaitable<Result<std::unique_ptr<ObjectWriter>>> create_part(const ObjectRef& object,
                                                               std::string upload_id,
                                                               int part_number,
                                                               PutOptions options) override;
  Awaitable<Result<UploadInfo>> get_upload(const ObjectRef& object,
                                           const std::string& upload_id) override;
  Awaitable<Result<std::vector<PartInfo>>> list_parts(const ObjectRef& object,
                                                      const std::string& upload_id) override;
  Awaitable<Result<std::unique_ptr<ObjectWriter>>> assemble_upload(const ObjectRef& object,
                                                                   const std::string& upload_id,
                                                                   std::vector<CompletePart> parts,
                                                                   PutOptions options) override;
  Awaitable<Status> abort_upload(const ObjectRef& object, const std::string& upload_id) override;
  Awaitable<Result<std::string>> get_index(const ObjectRef& object) override;
  Result<std::string> get_index_now(const ObjectRef& object) override;
  Awaitable<Status> put_index(const ObjectRef& object, uint64_t generation, std::string bytes) override;
  Awaitable<Result<UploadList>> list_uploads(BucketId bucket, UploadListOptions options) override;
  Awaitable<Result<size_t>> remove_uploads_initiated_before(int64_t unix_nanos) override;
  Awaitable<Result<std::vector<BucketId>>> bucket_ids() override;
  std::vector<MountpathInfo> mountpaths() const override;
  Result<MountpathInfo> set_mountpath_enabled(std::string_view id, bool enabled) override;
  std::vector<MountpathInfo> check_mountpaths() override;
  Awaitable<Result<MountpathInfo>> attach_mountpath(std::string path) override;
  Awaitable<Result<ResilverStats>> detach_mountpath(std::string_view id,
                                                    std::function<bool()> cancelled) override;
  Status check_detach(std::string_view id) const override;
  Awaitable<Result<ResilverStats>> resilver(std::function<bool()> cancelled) override;
  void close() override;

  // Moves a finished work file into place as the object's new generation and commits
  // `record`, then removes the previous generation and any stale copy on a non-owner
  // mountpath. `precondition` (when set) sees the current record under the object lock
  // before the rename; `finished` is deleted in the record's metadata batch. On error
  // nothing changed (the work file may be gone). Blocking; runs on a disk thread.
  Result<wire::ObjectRecord> install(size_t owner, const ObjectRef& object,
                                     const std::string& work_path, wire::ObjectRecord record,
                                     Durability durability, const Precondition& precondition,
                                     const FinishedUpload* finished = nullptr);
  // The same for one part of an upload on mountpath `index`: renames the work file to the
  // part's file, commits the part record and removes the file of the part it replaces.
  // kNotFound "NoSuchUpload" when the upload is gone or being completed. Blocking.
  Result<wire::ObjectRecord> install_part(size_t index, const ObjectRef& object,
                                          const PartTarget& part, const std::string& work_path,
                                          wire::ObjectRecord record, Durability durability);
  // Evaluates `precondition` against what a GET of `object` sees now, under the object
  // lock, as install() does (ObjectWriter::seal). Blocking.
  Status check_precondition(size_t owner, const ObjectRef& object, const Precondition& precondition);
  // Never 0 and never repeated in this process; random across processes.
  uint64_t next_generation();

 private:
  friend class AssembledUpload;  // uploads.cc
  struct Found {
    size_t index;  // mountpath holding the record
    wire::ObjectRecord record;
  };

  struct FoundUpload {
    size_t index;  // mountpath holding the upload
    wire::UploadRecord record;
  };
  // Releases a claim on an upload when it goes out of scope.
  class UploadClaim {
   public:
    UploadClaim(StoreImpl& store, std::string upload_id)
        : store_(store), upload_id_(std::move(upload_id)) {}
    ~UploadClaim();
    UploadClaim(const UploadClaim&) = delete;
    UploadClaim& operator=(const UploadClaim&) = delete;

   private:
    StoreImpl& store_;
    std::string upload_id_;
  };

  // The mountpath that takes the object: the best-ranked one in service (the HRW owner
  // unless it is disabled or failed). With none in service, the best readable one.
  size_t owner_of(const ObjectRef& object) const;
  // A readable mountpath whose disk threads run work that spans mountpaths (listing).
  Mountpath& executor_for(BucketId bucket) const;
  // Moves every object off mountpath `from` (the resilver of one mountpath).
  Awaitable<Status> move_off(size_t from, const std::function<bool()>& cancelled, ResilverStats& stats);
  // Returns once every operation that began before the call has ended (an OpGate grace
  // period). Requires: one caller at a time (is_changing_layout_).
  Awaitable<void> wait_for_older_operations();
  // The slot of the attached mountpath `id` when it may leave service (disabled or
  // detached): kNotFound, or kFailedPrecondition when no other mountpath is in service and
  // this one still holds objects that would have nowhere to go.
  Result<size_t> removable(std::string_view id) const;
  // The slot holding the attached (not detached) mountpath with this id, else nullopt.
  std::optional<size_t> find_attached(std::string_view id) const;
  // The MetaDbs of mountpaths that have not failed.
  std::vector<MetaDb*> readable_dbs() const;
  // Resilver of one object found on mountpath `from` whose owner is `to`: copies it there
  // (or drops it when `to` already has the object) under the object lock. Blocking.
  Status move_within(const ObjectRef& object, size_t from, size_t to, ResilverStats& stats);
  // The upload on the owner, else on another mountpath. kNotFound "NoSuchUpload".
  Result<FoundUpload> find_upload(const ObjectRef& object, const std::string& upload_id,
                                  size_t owner);
  // An upload being completed is claimed: parts, aborts and other completions of it see
  // NoSuchUpload. Requires: the object lock is held (so the record cannot change).
  bool try_claim(const std::string& upload_id) EXCLUDES(claims_mutex_);
  bool is_claimed(const std::string& upload_id) EXCLUDES(claims_mutex_);
  Result<std::vector<PartInfo>> list_parts_blocking(const ObjectRef& object,
                                                    const std::string& upload_id, size_t owner);
  // assemble_upload()'s work: claims the upload, then copies the parts into a work file
  // on the upload's mountpath. Blocking.
  Result<std::unique_ptr<ObjectWriter>> assemble_blocking(OpGate::Ticket ticket, const ObjectRef& object,
                                                          const std::string& upload_id,
                                                          const std::vector<CompletePart>& parts, PutOptions options,
                                                          size_t owner);
  Status abort_blocking(const ObjectRef& object, const std::string& upload_id, size_t owner);
  Result<wire::ObjectRecord> update_blocking(
      const ObjectRef& object, const std::function<Status(wire::ObjectRecord&)>& mutate,
      Durability durability, size_t owner);
  // The record on the owner, else on the first other mountpath that has one.
  Result<Found> find_record(const ObjectRef& object, size_t owner);
  // `precondition` against find_record(). Requires: the object lock is held.
  Status evaluate_locked(const ObjectRef& object, size_t owner, const Precondition& precondition);
  // find_record(), or with `from_memory` the same from RocksDB's memory only: nullopt
  // when the answer needs the disk.
  std::optional<Result<Found>> find_record_in(const ObjectRef& object, size_t owner, bool from_memory);
  // How to keep the file a lookup opens (OpenFiles::insert).
  struct KeptLookup {
    std::string key;     // empty: not to be kept
    uint64_t epoch = 0;
  };
  // The owner mountpath's kept open file of `object` (OpenFiles) while it is still what
  // the record names; else nullopt, with `lookup` filled for keep().
  std::optional<OpenObject> find_kept(const ObjectRef& object, size_t owner, KeptLookup& lookup);
  // Keeps `opened`, found on mountpath `found`, when that is the owner.
  void keep(size_t owner, size_t found, const KeptLookup& lookup, const OpenObject& opened);
  // Looked up and opened (waiting for the disk), then kept as `lookup` (try_open_cached's,
  // which found nothing kept) says.
  Result<OpenObject> open_blocking(const ObjectRef& object, size_t owner, const KeptLookup& lookup);
  Result<std::string> index_blocking(const ObjectRef& object, size_t owner);
  // open() without touching the disk: a kept file, else the object lock if free, its
  // record from RocksDB's memory, its file by openat2(RESOLVE_CACHED), then kept. nullopt
  // when any step would block; the caller then goes through the disk executor, passing
  // on `lookup`.
  std::optional<Result<OpenObject>> try_open_cached(const ObjectRef& object, size_t owner, KeptLookup& lookup);
  // With `if_generation`, only when the visible record has that generation.
  Status remove_blocking(const ObjectRef& object, size_t owner, std::optional<uint64_t> if_generation);
  void remove_stale_copies(const ObjectRef& object, size_t owner, Durability durability);
  // The records mountpath `index` found without their bytes when it opened: one that
  // another mountpath also has a record of is a copy left by a move (dropped); the others
  // stay, counted as lost (docs/adr/0021). Blocking; once per open of the mountpath.
  void settle_lost_records(size_t index);

  MountpathSlots mountpaths_;
  const MetaDbResources resources_;
  const size_t threads_per_mountpath_;
  // Given to every mountpath, those attached later too.
  const std::shared_ptr<FileSystem> file_system_;
  // Every operation holds a ticket while it may touch a mountpath (writers for their
  // lifetime), so detach knows when nothing uses the detached one any more.
  mutable OpGate gate_;
  // Set while an attach, detach, enable or disable runs: one at a time (the others are
  // refused, not queued: a detach may take long).
  std::atomic<bool> is_changing_layout_{false};
  ObjectLocks locks_;
  std::atomic<uint64_t> next_generation_;
  std::atomic<bool> is_closed_{false};
  const uint64_t min_part_size_;
  Mutex claims_mutex_;
  std::unordered_set<std::string> claimed_uploads_ GUARDED_BY(claims_mutex_);
  // Bucket fences (close_bucket): the closed bucket ids, and the commits into each bucket
  // that passed the check and are not installed yet. Checked and counted in one step.
  Mutex fences_mutex_;
  std::unordered_set<uint64_t> closed_buckets_ GUARDED_BY(fences_mutex_);
  std::unordered_map<uint64_t, int> commits_in_flight_ GUARDED_BY(fences_mutex_);
  // Counts a commit into `bucket` in flight (kNotFound NoSuchBucket when closed); the
  // returned guard ends it.
  Result<std::shared_ptr<void>> enter_bucket(BucketId bucket);
  static Status closed_bucket_error(BucketId bucket);
};

}  // namespace silo::store::detail
