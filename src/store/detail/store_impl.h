#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "placement/hrw.h"
#include "store/detail/meta_db.h"
#include "store/detail/mountpath.h"
#include "store/detail/object_locks.h"
#include "store/store.h"

namespace silo::store::detail {

// The Store: mountpaths, placement of objects on them, and the per-object locks.
// Awaitable methods hop to the owner mountpath's DiskExecutor; the *_blocking helpers run
// there. Must outlive every ObjectWriter and request it served (its destructor joins the
// disk threads).
class StoreImpl final : public Store {
 public:
  explicit StoreImpl(std::vector<std::unique_ptr<Mountpath>> mountpaths);

  Awaitable<Result<std::unique_ptr<ObjectWriter>>> create(const ObjectRef& object,
                                                          PutOptions options) override;
  Awaitable<Result<OpenObject>> open(const ObjectRef& object) override;
  Awaitable<Result<wire::ObjectRecord>> stat(const ObjectRef& object) override;
  Awaitable<Status> remove(const ObjectRef& object) override;
  Awaitable<Result<ListResult>> list(BucketId bucket, ListOptions options) override;
  Awaitable<Status> remove_bucket(BucketId bucket) override;
  Awaitable<Result<std::vector<BucketId>>> bucket_ids() override;
  std::vector<MountpathInfo> mountpaths() const override;
  void close() override;

  // Moves a finished work file into place as the object's new generation and commits
  // `record`, then removes the previous generation and any stale copy on a non-owner
  // mountpath. On error nothing changed (the work file may be gone). Blocking; runs on the
  // owner's disk thread.
  Result<wire::ObjectRecord> install(size_t owner, const ObjectRef& object,
                                     const std::string& work_path, wire::ObjectRecord record,
                                     Durability durability);
  // Never 0 and never repeated in this process; random across processes.
  uint64_t next_generation();

 private:
  struct Found {
    size_t index;  // mountpath holding the record
    wire::ObjectRecord record;
  };

  size_t owner_of(const ObjectRef& object) const { return candidates_.owner(object); }
  // The record on the owner, else on the first other mountpath that has one.
  Result<Found> find_record(const ObjectRef& object, size_t owner);
  Result<OpenObject> open_blocking(const ObjectRef& object, size_t owner);
  Status remove_blocking(const ObjectRef& object, size_t owner);
  void remove_stale_copies(const ObjectRef& object, size_t owner, Durability durability);

  std::vector<std::unique_ptr<Mountpath>> mountpaths_;
  std::vector<MetaDb*> dbs_;
  placement::HrwCandidates candidates_;
  ObjectLocks locks_;
  std::atomic<uint64_t> next_generation_;
  std::atomic<bool> is_closed_{false};
};

}  // namespace silo::store::detail
