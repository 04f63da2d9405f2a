// The store's set of mountpaths (docs/adr/0013): placement over the ones in service,
// enable/disable, the failure probe, resilver, and attach/detach at run time.
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <span>

#include "base/log.h"
#include "store/detail/object_file.h"
#include "store/detail/object_lister.h"
#include "store/detail/store_impl.h"

namespace silo::store::detail {
namespace {

// Refuses a second attach, detach, enable or disable while one runs.
class LayoutChange {
 public:
  explicit LayoutChange(std::atomic<bool>& flag) : flag_(flag), is_owner_(!flag.exchange(true)) {}
  ~LayoutChange() {
    if (is_owner_) flag_ = false;
  }
  LayoutChange(const LayoutChange&) = delete;
  LayoutChange& operator=(const LayoutChange&) = delete;
  Status check() const {
    if (is_owner_) return Status::ok();
    return Status::unavailable("another mountpath attach, detach, enable or disable is running; retry when it ends");
  }

 private:
  std::atomic<bool>& flag_;
  const bool is_owner_;
};

}  // namespace

std::vector<MountpathInfo> StoreImpl::mountpaths() const {
  const OpGate::Ticket ticket = gate_.enter();
  std::vector<MountpathInfo> infos;
  for (const auto& mountpath : mountpaths_.all()) {
    if (!mountpath->is_detached()) infos.push_back(mountpath->info());
  }
  return infos;
}

size_t StoreImpl::owner_of(const ObjectRef& object) const {
  // HRW over the mountpaths in service (the same ranking as placement::HrwCandidates, with
  // the set read now: mountpaths come and go at run time).
  const uint64_t object_hash = placement::object_hash(object);
  std::optional<size_t> best;
  uint64_t best_weight = 0;
  std::optional<size_t> readable;  // with none in service, reads still find what is left
  const size_t count = mountpaths_.size();
  for (size_t index = 0; index < count; ++index) {
    const Mountpath& mountpath = *mountpaths_[index];
    if (!readable && mountpath.is_readable()) readable = index;
    if (!mountpath.is_in_service()) continue;
    const uint64_t w = placement::weight(mountpath.hrw_hash(), object_hash);
    if (!best || w > best_weight) {
      best = index;
      best_weight = w;
    }
  }
  return best.value_or(readable.value_or(0));  // none in service: create() says so
}

Mountpath& StoreImpl::executor_for(BucketId bucket) const {
  // Spread buckets over the mountpaths' disk threads; a detached one's threads still run,
  // but a live one is where the work belongs.
  const size_t count = mountpaths_.size();
  for (size_t k = 0; k < count; ++k) {
    Mountpath& mountpath = *mountpaths_[(bucket.value() + k) % count];
    if (mountpath.is_readable()) return mountpath;
  }
  return *mountpaths_[bucket.value() % count];
}

std::vector<MetaDb*> StoreImpl::readable_dbs() const {
  std::vector<MetaDb*> dbs;
  for (const auto& mountpath : mountpaths_.all()) {
    if (mountpath->is_readable()) dbs.push_back(&mountpath->meta());
  }
  return dbs;
}

std::optional<size_t> StoreImpl::find_attached(std::string_view id) const {
  for (size_t index = 0; index < mountpaths_.size(); ++index) {
    if (!mountpaths_[index]->is_detached() && mountpaths_[index]->id() == id) return index;
  }
  return std::nullopt;
}

Result<size_t> StoreImpl::removable(std::string_view id) const {
  const std::optional<size_t> index = find_attached(id);
  if (!index) return Status::not_found("no mountpath with id {} on this target", id);
  const Mountpath& mountpath = *mountpaths_[*index];
  const auto all = mountpaths_.all();
  const bool has_other = std::any_of(all.begin(), all.end(), [&](const auto& m) {
    return m.get() != &mountpath && m->is_in_service();
  });
  if (!has_other && mountpath.is_readable()) {
    return Status::failed_precondition("mountpath {} is the last one in service; attach another first",
                                       mountpath.path());
  }
  return *index;
}

void StoreImpl::settle_lost_records(size_t index) {
  Mountpath& mountpath = *mountpaths_[index];
  uint64_t kept = 0;
  for (const LostRecord& lost : mountpath.take_lost_records()) {
    bool is_elsewhere = false;
    for (size_t other = 0; other < mountpaths_.size() && !is_elsewhere; ++other) {
      if (other == index || !mountpaths_[other]->is_readable()) continue;
      Result<wire::ObjectRecord> record = mountpaths_[other]->meta().get(lost.bucket, lost.name);
      is_elsewhere = record || record.error().code() != Code::kNotFound;
    }
    if (is_elsewhere) {
      // Moves write the new record before removing the old one, so this is the old one.
      SILO_LOG_WARN("object {}/{} on {}: {}; another mountpath holds it, dropping this record", lost.bucket,
                    lost.name, mountpath.path(), lost.why);
      const Status removed = mountpath.meta().remove(lost.bucket, lost.name, Durability::kFsync);
      if (removed.is_ok()) continue;
      SILO_LOG_WARN("the record stays: {}", removed);
    }
    SILO_LOG_ERROR("object {}/{} on {} is lost: {}; it stays listed and reads of it answer DataLoss",
                   lost.bucket, lost.name, mountpath.path(), lost.why);
    ++kept;
  }
  mountpath.set_lost_objects(kept);
}

Status StoreImpl::check_detach(std::string_view id) const { return removable(id).status(); }

Result<MountpathInfo> StoreImpl::set_mountpath_enabled(std::string_view id, bool enabled) {
  const LayoutChange change(is_changing_layout_);
  RETURN_IF_ERROR(change.check());
  const OpGate::Ticket ticket = gate_.enter();
  const std::optional<size_t> index = find_attached(id);
  if (!index) return Status::not_found("no mountpath with id {} on this target", id);
  Mountpath& mountpath = *mountpaths_[*index];
  if (!enabled && mountpath.is_in_service()) RETURN_IF_ERROR(removable(id).status());
  RETURN_IF_ERROR(mountpath.set_disabled(!enabled));
  SILO_LOG_INFO("mountpath {} {}", mountpath.path(), enabled ? "back in service" : "disabled");
  return mountpath.info();
}

std::vector<MountpathInfo> StoreImpl::check_mountpaths() {
  const OpGate::Ticket ticket = gate_.enter();
  std::vector<MountpathInfo> failed;
  for (const auto& mountpath : mountpaths_.all()) {
    if (!mountpath->is_readable()) continue;
    const Status probe = mountpath->probe();
    if (probe.is_ok()) continue;
    const uint64_t objects = mountpath->meta().estimate_object_count();
    mountpath->mark_failed(probe.to_string());
    MountpathInfo info = mountpath->info();
    info.objects = objects;
    failed.push_back(std::move(info));
  }
  return failed;
}

Status StoreImpl::move_within(const ObjectRef& object, size_t from, size_t to, ResilverStats& stats) {
  const auto lock = locks_.lock(object);
  Mountpath& source = *mountpaths_[from];
  Mountpath& owner = *mountpaths_[to];
  if (!source.is_readable() || !owner.is_in_service()) return Status::ok();  // changed meanwhile
  Result<wire::ObjectRecord> record = source.meta().get(object.bucket_id, object.name);
  if (!record && record.error().code() == Code::kNotFound) return Status::ok();
  if (!record) return std::move(record).error();
  const std::string source_path = source.object_file_path(object.bucket_id, object.name, record->generation());
  Result<wire::ObjectRecord> current = owner.meta().get(object.bucket_id, object.name);
  if (!current && current.error().code() != Code::kNotFound && current.error().code() != Code::kDataLoss) {
    return std::move(current).error();  // cannot tell: keep the source
  }
  if (current) {
    // The owner has the object (written there since): this copy is stale. (A record there
    // that does not decode is overwritten by the move below.)
    RETURN_IF_ERROR(source.meta().remove(object.bucket_id, object.name, Durability::kFsync));
    std::ignore = source.file_system().remove_file(source_path);
    ++stats.stale_removed;
    return Status::ok();
  }
  // Copy the file under the owner's work/, then install it like a PUT (same record, same
  // generation), then forget the source: a crash in between leaves two copies, of which
  // lookups prefer the owner's, and the next resilver drops the other.
  FileSystem& file_system = owner.file_system();
  ASSIGN_OR_RETURN(WorkFile work, owner.create_work_file());
  const int source_fd = ::open(source_path.c_str(), O_RDONLY | O_CLOEXEC);
  Status copied = source_fd < 0 ? Status::from_errno(errno, "open " + source_path)
                                : file_system.append_file(work.fd, work.path, source_fd,
                                                          source_path, record->size());
  if (source_fd >= 0) ::close(source_fd);
  if (copied.is_ok()) copied = file_system.sync_data(work.fd, work.path);
  ::close(work.fd);
  if (!copied.is_ok()) {
    std::ignore = file_system.remove_file(work.path);
    return copied;
  }
  const std::string relative = object_file_relative_path(object.bucket_id, object.name, record->generation());
  Status installed = make_directories(file_system, owner.object_dir(),
                                      std::string_view(relative).substr(0, relative.rfind('/')),
                                      Durability::kFsync);
  const std::string final_path = owner.object_dir() + "/" + relative;
  bool is_renamed = false;
  if (installed.is_ok()) {
    installed = file_system.rename(work.path, final_path);
    is_renamed = installed.is_ok();
  }
  if (installed.is_ok())
    installed = file_system.sync_directory(final_path.substr(0, final_path.rfind('/')));
  // The archive index moves with the record (the same version).
  const Result<std::string> index = source.meta().get_index(object.bucket_id, object.name);
  const IndexUpdate carried = index ? IndexUpdate{IndexUpdate::kSet, *index} : IndexUpdate{};
  if (installed.is_ok()) installed = owner.meta().put(object.bucket_id, *record, Durability::kFsync, nullptr, carried);
  if (!installed.is_ok()) {
    // After the rename the copy is in obj/ with no record: remove it there, or it stays
    // until an unclean start reconciles (the source still holds the object).
    std::ignore = file_system.remove_file(is_renamed ? final_path : work.path);
    return installed;
  }
  RETURN_IF_ERROR(source.meta().remove(object.bucket_id, object.name, Durability::kFsync));
  std::ignore = source.file_system().remove_file(source_path);
  ++stats.objects_moved;
  stats.bytes_moved += record->size();
  return Status::ok();
}

Awaitable<Status> StoreImpl::move_off(size_t from, const std::function<bool()>& cancelled, ResilverStats& stats) {
  Mountpath& mountpath = *mountpaths_[from];
  std::vector<BucketId> buckets;
  {
    const OpGate::Ticket ticket = gate_.enter();
    if (!mountpath.is_readable()) co_return Status::ok();
    CO_RETURN_IF_ERROR(co_await mountpath.disk().run([&] { return mountpath.meta().append_bucket_ids(buckets); }));
  }
  for (const BucketId bucket : buckets) {
    ListOptions options;
    options.limit = 1000;
    for (;;) {
      if (cancelled()) co_return Status::aborted("cancelled");
      // A ticket per page, not for the whole walk: a detach waits for tickets.
      const OpGate::Ticket ticket = gate_.enter();
      if (!mountpath.is_readable()) co_return Status::ok();
      MetaDb* db = &mountpath.meta();
      CO_ASSIGN_OR_RETURN(const ListResult page, co_await mountpath.disk().run([&] {
        return list_objects(std::span<MetaDb* const>(&db, 1), bucket, options);
      }));
      for (const auto& entry : page.entries) {
        ++stats.objects_scanned;
        const ObjectRef object{bucket, entry.name()};
        const size_t to = owner_of(object);
        if (to == from) continue;
        CO_RETURN_IF_ERROR(co_await mountpaths_[to]->disk().run([&] { return move_within(object, from, to, stats); }));
      }
      if (!page.is_truncated || page.entries.empty()) break;
      options.start_after = page.entries.back().name();
    }
  }
  co_return Status::ok();
}

Awaitable<Result<ResilverStats>> StoreImpl::resilver(std::function<bool()> cancelled) {
  ResilverStats stats;
  for (size_t from = 0; from < mountpaths_.size(); ++from) {
    const Status moved = co_await move_off(from, cancelled, stats);
    if (moved.code() == Code::kAborted) co_return stats;  // cancelled: what it did so far
    CO_RETURN_IF_ERROR(moved);
  }
  co_return stats;
}

Awaitable<Result<MountpathInfo>> StoreImpl::attach_mountpath(std::string path) {
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const LayoutChange change(is_changing_layout_);
  CO_RETURN_IF_ERROR(change.check());
  if (path.empty() || path.front() != '/') {
    co_return Status::invalid_argument("mountpath '{}' must be an absolute path", path);
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  for (const auto& mountpath : mountpaths_.all()) {
    if (!mountpath->is_detached() && mountpath->path() == path) {
      co_return Status::already_exists("mountpath {} is attached already (id {})", path, mountpath->id());
    }
  }
  if (mountpaths_.size() == kMaxMountpaths) {
    co_return Status::resource_exhausted("{} mountpaths were attached since this target started; restart it to attach more",
                                         kMaxMountpaths);
  }
  // Opening may reconcile a drive that was not closed cleanly: a disk thread's work.
  Result<std::unique_ptr<Mountpath>> opened = co_await executor_for(BucketId(0)).disk().run(
      [this, &path]() -> Result<std::unique_ptr<Mountpath>> {
        Result<std::string> id = Mountpath::read_or_create_id(path);
        if (!id) {
          Status status = std::move(id).error();
          return status.annotate("mountpath {}", path);
        }
        if (const std::optional<size_t> same = find_attached(*id)) {
          return Status::already_exists("mountpath {} has the id {} of attached mountpath {} (is one a copy of the other?)",
                                        path, *id, mountpaths_[*same]->path());
        }
        return Mountpath::open(path, *id, resources_, threads_per_mountpath_, file_system_);
      });
  if (!opened) co_return std::move(opened).error();
  const size_t index = mountpaths_.append(std::move(*opened));
  CO_RETURN_IF_ERROR(co_await mountpaths_[index]->disk().run([this, index] {
    settle_lost_records(index);
    return Status::ok();
  }));
  SILO_LOG_INFO("mountpath {} attached (id {})", path, mountpaths_[index]->id());
  co_return mountpaths_[index]->info();
}

Awaitable<void> StoreImpl::wait_for_older_operations() {
  // Polled on a timer: blocking a disk thread instead could wait for a writer that needs
  // that very thread.
  const uint64_t token = gate_.begin_grace_period();
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  while (!gate_.is_drained(token)) {
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

Awaitable<Result<ResilverStats>> StoreImpl::detach_mountpath(std::string_view id, std::function<bool()> cancelled) {
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const LayoutChange change(is_changing_layout_);
  CO_RETURN_IF_ERROR(change.check());
  CO_ASSIGN_OR_RETURN(const size_t index, removable(id));
  Mountpath& mountpath = *mountpaths_[index];
  ResilverStats stats;
  if (mountpath.is_readable()) {
    // No new object goes there from now on; then wait for those already headed there
    // (writers created before, which commit to it).
    CO_RETURN_IF_ERROR(co_await mountpath.disk().run([&] { return mountpath.set_disabled(true); }));
    SILO_LOG_INFO("mountpath {} disabled for detach; waiting for writes in flight to it", mountpath.path());
    co_await wait_for_older_operations();
    // Uploads in progress keep their parts where they began, and complete there.
    const Result<size_t> uploads = co_await mountpath.disk().run([&]() -> Result<size_t> {
      rocksdb::ReadOptions options;
      options.fill_cache = false;
      std::unique_ptr<rocksdb::Iterator> it = mountpath.meta().new_upload_iterator(options);
      size_t count = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        const std::optional<UploadKey> key = parse_upload_key(it->key());
        if (key && !key->part_number) ++count;
      }
      RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate uploads"));
      return count;
    });
    if (!uploads) co_return uploads.error();
    if (*uploads > 0) {
      co_return Status::failed_precondition(
          "{} multipart uploads in progress keep their parts on mountpath {}: complete or abort them (abandoned "
          "ones are removed after s3.multipart_upload_ttl), then detach again; it stays disabled meanwhile",
          *uploads, mountpath.path());
    }
    CO_RETURN_IF_ERROR(co_await move_off(index, cancelled, stats));
  }
  // Readers that saw it readable may still look at its metadata: mark it gone, wait for
  // them, then check that nothing stayed (a move that failed leaves its object here).
  mountpath.set_detached(true);
  co_await wait_for_older_operations();
  if (mountpath.state() != MountpathState::kFailed) {
    const Result<bool> empty = co_await mountpath.disk().run([&]() -> Result<bool> {
      rocksdb::ReadOptions options;
      options.fill_cache = false;
      std::unique_ptr<rocksdb::Iterator> it = mountpath.meta().new_object_iterator(options);
      it->SeekToFirst();
      const bool is_empty = !it->Valid();
      RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate objects"));
      return is_empty;
    });
    if (!empty || !*empty) {
      mountpath.set_detached(false);
      if (!empty) co_return empty.error();
      co_return Status::failed_precondition("objects on mountpath {} did not all move (see the log); it stays "
                                            "attached and disabled: detach again",
                                            mountpath.path());
    }
  }
  const Status closed = co_await mountpath.disk().run([&] { return mountpath.close_detached(); });
  if (!closed.is_ok()) SILO_LOG_WARN("mountpath {} detached, but closing it: {}", mountpath.path(), closed);
  SILO_LOG_INFO("mountpath {} detached: {} objects moved ({} bytes)", mountpath.path(), stats.objects_moved,
                stats.bytes_moved);
  co_return stats;
}

}  // namespace silo::store::detail
