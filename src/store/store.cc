#include "store/store.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <map>
#include <system_error>
#include <tuple>

#include "base/hash.h"
#include "base/log.h"
#include "base/text.h"
#include "store/block_sums.h"
#include "store/detail/object_file.h"
#include "store/detail/object_lister.h"
#include "store/detail/store_impl.h"
#include "store/detail/work_file_writer.h"

namespace silo::store {

OpenFile::~OpenFile() {
  if (fd >= 0) ::close(fd);
}

Result<bool> OpenFile::is_current(std::string_view path_for_errors) const {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::from_errno(errno, fmt::format("fstat {}", path_for_errors));
  if (static_cast<uint64_t>(st.st_size) != record.size()) {
    return Status::data_loss("object {}: its file {} has {} bytes, its record says {}; the object is lost here",
                             record.name(), path_for_errors, st.st_size, record.size());
  }
  return st.st_nlink > 0;
}

Result<std::unique_ptr<Store>> Store::open(StoreOptions options) {
  if (options.mountpaths.empty()) return Status::invalid_argument("store has no mountpaths");
  if (options.threads_per_mountpath == 0) {
    return Status::invalid_argument("threads_per_mountpath must be at least 1");
  }
  if (!options.file_system) return Status::invalid_argument("store has no file system");
  // Ids first: a copied mountpath directory must be refused before anything is modified.
  std::vector<std::string> ids;
  std::map<std::string, std::string> path_of_id;
  for (const std::string& path : options.mountpaths) {
    Result<std::string> id = detail::Mountpath::read_or_create_id(path);
    if (!id) {
      Status status = id.error();
      return status.annotate("mountpath {}", path);
    }
    const auto [it, is_new] = path_of_id.emplace(*id, path);
    if (!is_new) {
      return Status::failed_precondition(
          "mountpaths {} and {} have the same id {} (is one a copy of the other?)", it->second,
          path, *id);
    }
    ids.push_back(*id);
  }
  const detail::MetaDbResources resources = detail::MetaDbResources::create(options.open_files, options.mountpaths.size());
  std::vector<std::unique_ptr<detail::Mountpath>> mountpaths;
  for (size_t i = 0; i < options.mountpaths.size(); ++i) {
    ASSIGN_OR_RETURN(auto mountpath,
                     detail::Mountpath::open(options.mountpaths[i], ids[i], resources,
                                             options.threads_per_mountpath, options.file_system));
    mountpaths.push_back(std::move(mountpath));
  }
  return std::unique_ptr<Store>(
      new detail::StoreImpl(std::move(mountpaths), resources, options.threads_per_mountpath,
                            options.min_part_size, std::move(options.file_system)));
}

Awaitable<Result<wire::ObjectRecord>> Store::complete_upload(const ObjectRef& object, const std::string& upload_id,
                                                             std::vector<CompletePart> parts, PutOptions options) {
  CO_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer,
                      co_await assemble_upload(object, upload_id, std::move(parts), std::move(options)));
  co_return co_await writer->commit();
}

std::string_view mountpath_state_name(MountpathState state) {
  switch (state) {
    case MountpathState::kInService: return "in_service";
    case MountpathState::kDisabled: return "disabled";
    case MountpathState::kFailed: return "failed";
  }
  return "unknown";
}

namespace detail {

// ObjectRecord.name is a proto3 string: protobuf refuses to parse one that is not UTF-8,
// so such a name must never be stored.
Status check_object_name(const ObjectRef& object) {
  if (object.name.empty()) return Status::invalid_argument("object name is empty");
  if (!text::is_utf8(object.name)) {
    return Status::invalid_argument("object name in bucket {} is not valid UTF-8",
                                    object.bucket_id);
  }
  return Status::ok();
}

void copy_descriptive_fields(const wire::ObjectRecord& from, wire::ObjectRecord& to) {
  to.set_content_type(from.content_type());
  to.set_content_encoding(from.content_encoding());
  to.set_content_disposition(from.content_disposition());
  to.set_content_language(from.content_language());
  to.set_cache_control(from.cache_control());
  to.set_expires(from.expires());
  *to.mutable_user_metadata() = from.user_metadata();
  *to.mutable_tags() = from.tags();
  *to.mutable_checksums() = from.checksums();
  if (from.has_remote()) *to.mutable_remote() = from.remote();
}

StoreImpl::StoreImpl(std::vector<std::unique_ptr<Mountpath>> mountpaths, MetaDbResources resources,
                     size_t threads_per_mountpath, uint64_t min_part_size,
                     std::shared_ptr<FileSystem> file_system)
    : resources_(std::move(resources)),
      threads_per_mountpath_(threads_per_mountpath),
      file_system_(std::move(file_system)),
      next_generation_(random_u64()),
      min_part_size_(min_part_size) {
  for (auto& mountpath : mountpaths) mountpaths_.append(std::move(mountpath));
  for (size_t index = 0; index < mountpaths_.size(); ++index) settle_lost_records(index);
}

uint64_t StoreImpl::next_generation() {
  uint64_t generation = 0;
  // 0 is what an unset proto field reads as; never hand it out.
  while (generation == 0) generation = next_generation_.fetch_add(1, std::memory_order_relaxed);
  return generation;
}

Awaitable<Result<std::unique_ptr<ObjectWriter>>> StoreImpl::create(const ObjectRef& object,
                                                                   PutOptions options) {
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  CO_RETURN_IF_ERROR(check_object_name(object));
  OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  Mountpath& mountpath = *mountpaths_[owner];
  if (!mountpath.is_in_service()) co_return Status::unavailable("no mountpath of this target is in service");
  Result<WorkFile> work =
      co_await mountpath.disk().run([&] { return mountpath.create_work_file(); });
  if (!work) {
    Status status = std::move(work).error();
    co_return status.annotate("put {}/{}", object.bucket_id, object.name);
  }
  co_return std::unique_ptr<ObjectWriter>(std::make_unique<WorkFileWriter>(
      *this, std::move(ticket), owner, mountpath, object, std::move(options), std::move(*work)));
}

Result<StoreImpl::Found> StoreImpl::find_record(const ObjectRef& object, size_t owner) {
  return *find_record_in(object, owner, /*from_memory=*/false);
}

std::optional<Result<StoreImpl::Found>> StoreImpl::find_record_in(const ObjectRef& object, size_t owner,
                                                                  bool from_memory) {
  // The owner first: after a mountpath change an object may still sit on another one
  // until resilver moves it.
  for (size_t k = 0; k < mountpaths_.size(); ++k) {
    const size_t index = (owner + k) % mountpaths_.size();
    if (!mountpaths_[index]->is_readable()) continue;
    const detail::MetaDb& meta = mountpaths_[index]->meta();
    std::optional<Result<wire::ObjectRecord>> record =
        from_memory ? meta.get_cached(object.bucket_id, object.name)
                    : std::optional<Result<wire::ObjectRecord>>(meta.get(object.bucket_id, object.name));
    if (!record) return std::nullopt;  // from_memory: the answer is on disk
    if (*record) return Result<Found>(Found{index, std::move(**record)});
    if (record->error().code() != Code::kNotFound) return Result<Found>(std::move(*record).error());
  }
  return Result<Found>(Status::not_found("object {}/{} not found", object.bucket_id, object.name)
                           .with_reason("NoSuchKey"));
}

Status StoreImpl::evaluate_locked(const ObjectRef& object, size_t owner, const Precondition& precondition) {
  // What a GET sees now: the owner's record, else a copy on another mountpath.
  Result<Found> current = find_record(object, owner);
  if (!current && current.error().code() != Code::kNotFound &&
      current.error().code() != Code::kDataLoss) {
    return std::move(current).error();
  }
  return precondition(current ? &current->record : nullptr);
}

Status StoreImpl::check_precondition(size_t owner, const ObjectRef& object,
                                     const Precondition& precondition) {
  {
    // A sealed object commits later (and is fenced then): refuse it early when it would be.
    MutexLock lock(fences_mutex_);
    if (closed_buckets_.contains(object.bucket_id.value())) return closed_bucket_error(object.bucket_id);
  }
  if (!precondition) return Status::ok();
  const auto lock = locks_.lock(object);
  return evaluate_locked(object, owner, precondition);
}

Result<wire::ObjectRecord> StoreImpl::install(size_t owner, const ObjectRef& object,
                                              const std::string& work_path,
                                              wire::ObjectRecord record, Durability durability,
                                              const Precondition& precondition,
                                              const FinishedUpload* finished) {
  Mountpath& mountpath = *mountpaths_[owner];
  const std::string relative =
      object_file_relative_path(object.bucket_id, object.name, record.generation());
  // An archive's members, indexed from the bytes before they are visible, so the index
  // and the version it describes are committed together (headers only: cheap).
  const std::string index = record.has_ec() ? std::string() : index_of_archive(work_path, object, record);
  const std::string final_path = mountpath.object_dir() + "/" + relative;
  const std::string parent = final_path.substr(0, final_path.rfind('/'));

  const auto lock = locks_.lock(object);
  ASSIGN_OR_RETURN(const std::shared_ptr<void> in_flight, enter_bucket(object.bucket_id));
  std::optional<uint64_t> previous_generation;
  Result<wire::ObjectRecord> previous = mountpath.meta().get(object.bucket_id, object.name);
  if (previous) {
    previous_generation = previous->generation();
  } else if (previous.error().code() == Code::kDataLoss) {
    SILO_LOG_WARN("{}; overwriting it (its file stays until the next reconciliation)",
                  previous.error().message());
  } else if (previous.error().code() != Code::kNotFound) {
    return std::move(previous).error();
  }
  if (precondition) RETURN_IF_ERROR(evaluate_locked(object, owner, precondition));

  FileSystem& file_system = mountpath.file_system();
  RETURN_IF_ERROR(make_directories(file_system, mountpath.object_dir(),
                                   std::string_view(relative).substr(0, relative.rfind('/')),
                                   durability));
  RETURN_IF_ERROR(file_system.rename(work_path, final_path));
  // From here a failure must take the new file away again: the old generation and its
  // record are untouched, so the object stays what it was.
  Status status;
  if (durability == Durability::kFsync) status = file_system.sync_directory(parent);
  if (status.is_ok()) {
    IndexUpdate update;  // the previous version's index goes unless this one brings one
    if (!index.empty()) {
      update = {IndexUpdate::kSet, index};
    } else if (previous_generation) {
      update.op = IndexUpdate::kDrop;
    }
    status = mountpath.meta().put(object.bucket_id, record, durability, finished, update);
  }
  if (!status.is_ok()) {
    // If this fails, reconciliation removes it.
    std::ignore = file_system.remove_file(final_path);
    return status;
  }
  if (previous_generation && *previous_generation != record.generation()) {
    Status removed = file_system.remove_file(
        mountpath.object_file_path(object.bucket_id, object.name, *previous_generation));
    if (!removed.is_ok()) SILO_LOG_WARN("old generation stays until reconciliation: {}", removed);
  }
  remove_stale_copies(object, owner, durability);
  return record;
}

Status StoreImpl::closed_bucket_error(BucketId bucket) {
  return Status::not_found("The specified bucket does not exist (bucket id {} is being deleted)", bucket.value())
      .with_reason("NoSuchBucket");
}

Result<std::shared_ptr<void>> StoreImpl::enter_bucket(BucketId bucket) {
  MutexLock lock(fences_mutex_);
  if (closed_buckets_.contains(bucket.value())) return closed_bucket_error(bucket);
  ++commits_in_flight_[bucket.value()];
  return std::shared_ptr<void>(nullptr, [this, id = bucket.value()](void*) {
    MutexLock end_lock(fences_mutex_);
    if (--commits_in_flight_[id] == 0) commits_in_flight_.erase(id);
  });
}

void StoreImpl::close_bucket(BucketId bucket) {
  MutexLock lock(fences_mutex_);
  closed_buckets_.insert(bucket.value());
}

void StoreImpl::open_bucket(BucketId bucket) {
  MutexLock lock(fences_mutex_);
  closed_buckets_.erase(bucket.value());
}

Awaitable<Status> StoreImpl::drain_bucket(BucketId bucket, std::chrono::milliseconds timeout) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      MutexLock lock(fences_mutex_);
      if (!commits_in_flight_.contains(bucket.value())) co_return Status::ok();
    }
    if (std::chrono::steady_clock::now() >= give_up) break;
    timer.expires_after(std::chrono::milliseconds(5));
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  co_return Status::unavailable("commits into bucket id {} did not finish within {} ms", bucket.value(),
                                timeout.count());
}

void StoreImpl::remove_stale_copies(const ObjectRef& object, size_t owner, Durability durability) {
  // Best effort: the owner's new record already wins every lookup; a copy left here only
  // costs space until resilver or the next overwrite.
  for (size_t index = 0; index < mountpaths_.size(); ++index) {
    if (index == owner || !mountpaths_[index]->is_readable()) continue;
    Mountpath& mountpath = *mountpaths_[index];
    Result<wire::ObjectRecord> stale = mountpath.meta().get(object.bucket_id, object.name);
    if (!stale && stale.error().code() == Code::kNotFound) continue;
    Status status = mountpath.meta().remove(object.bucket_id, object.name, durability);
    if (status.is_ok() && stale) {
      status = mountpath.file_system().remove_file(
          mountpath.object_file_path(object.bucket_id, object.name, stale->generation()));
    }
    if (!status.is_ok())
      SILO_LOG_WARN("stale copy of {}/{} stays: {}", object.bucket_id, object.name, status);
  }
}

namespace {

// The file of a record that reconciliation kept as lost, or one torn since, has another
// size than its record: DataLoss before a byte is sent (one fstat of an open file).
Result<OpenObject> checked_open_object(int fd, const std::string& path, wire::ObjectRecord record) {
  OpenObject opened(fd, std::move(record));
  // Opened under the object's lock: what the record named when it was read, even if a
  // file system operation outside the store unlinked it since.
  RETURN_IF_ERROR(opened.file()->is_current(path).status());
  return opened;
}

}  // namespace

std::optional<OpenObject> StoreImpl::find_kept(const ObjectRef& object, size_t owner, KeptLookup& lookup) {
  Mountpath& mountpath = *mountpaths_[owner];
  if (!mountpath.is_readable()) return std::nullopt;
  detail::OpenFiles& files = mountpath.meta().open_files();
  lookup.key = detail::object_key(object.bucket_id, object.name);
  if (std::shared_ptr<const OpenFile> file = files.find(lookup.key)) {
    const Result<bool> is_current = file->is_current();
    if (is_current && *is_current) return OpenObject(std::move(file));
    files.invalidate(lookup.key);  // replaced, unlinked or torn under its record: look again
  }
  lookup.epoch = files.epoch(lookup.key);
  return std::nullopt;
}

void StoreImpl::keep(size_t owner, size_t found, const KeptLookup& lookup, const OpenObject& opened) {
  // Only the owner's: a record there hides any copy another mountpath still has.
  if (found != owner || lookup.key.empty()) return;
  mountpaths_[owner]->meta().open_files().insert(lookup.key, lookup.epoch, opened.file());
}

Result<OpenObject> StoreImpl::open_blocking(const ObjectRef& object, size_t owner, const KeptLookup& lookup) {
  const auto lock = locks_.lock(object);
  ASSIGN_OR_RETURN(Found found, find_record(object, owner));
  const std::string path = mountpaths_[found.index]->object_file_path(object.bucket_id, object.name,
                                                                      found.record.generation());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return Status::data_loss("object {}/{}: its metadata names file {}, which is missing",
                               object.bucket_id, object.name, path);
    }
    return Status::from_errno(errno, fmt::format("open {}", path));
  }
  Result<OpenObject> opened = checked_open_object(fd, path, std::move(found.record));
  if (opened) keep(owner, found.index, lookup, *opened);
  return opened;
}

std::optional<Result<OpenObject>> StoreImpl::try_open_cached(const ObjectRef& object, size_t owner,
                                                             KeptLookup& lookup) {
  if (std::optional<OpenObject> kept = find_kept(object, owner, lookup)) return Result<OpenObject>(std::move(*kept));
  // openat2(2) with RESOLVE_CACHED (Linux 5.12) fails with EAGAIN instead of reading
  // directories from disk; ENOSYS on older kernels turns the fast path off.
  static std::atomic<bool> is_unsupported{false};
  if (is_unsupported.load(std::memory_order_relaxed)) return std::nullopt;
  const auto lock = locks_.try_lock(object);
  if (!lock.owns_lock()) return std::nullopt;  // a commit or delete is running
  std::optional<Result<Found>> found = find_record_in(object, owner, /*from_memory=*/true);
  if (!found) return std::nullopt;
  if (!*found) return Result<OpenObject>(std::move(*found).error());
  const std::string path = mountpaths_[(*found)->index]->object_file_path(object.bucket_id, object.name,
                                                                       (*found)->record.generation());
  struct open_how how {};
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_CACHED;
  const int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
  if (fd < 0) {
    if (errno == ENOSYS || errno == EINVAL) is_unsupported.store(true, std::memory_order_relaxed);
    return std::nullopt;  // EAGAIN (not cached), or let the blocking path report the error
  }
  Result<OpenObject> opened = checked_open_object(fd, path, std::move((*found)->record));
  if (opened) keep(owner, (*found)->index, lookup, *opened);
  return opened;
}

Awaitable<Result<OpenObject>> StoreImpl::open(const ObjectRef& object) {
  const OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  // Most GETs of a warm object need no disk I/O: answer them on this thread, sparing two
  // thread hand-offs per request (docs/adr/0006).
  KeptLookup lookup;
  if (auto cached = try_open_cached(object, owner, lookup)) co_return std::move(*cached);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, owner, &lookup] { return open_blocking(object, owner, lookup); });
}

Result<OpenObject> StoreImpl::open_now(const ObjectRef& object) {
  const OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  KeptLookup lookup;
  if (auto cached = try_open_cached(object, owner, lookup)) return std::move(*cached);
  return open_blocking(object, owner, lookup);
}

Awaitable<Result<wire::ObjectRecord>> StoreImpl::stat(const ObjectRef& object) {
  const OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, owner]() -> Result<wire::ObjectRecord> {
        ASSIGN_OR_RETURN(Found found, find_record(object, owner));
        return std::move(found.record);
      });
}

Status StoreImpl::remove_blocking(const ObjectRef& object, size_t owner, std::optional<uint64_t> if_generation) {
  const auto lock = locks_.lock(object);
  if (if_generation) {
    ASSIGN_OR_RETURN(const Found found, find_record(object, owner));
    if (found.record.generation() != *if_generation) {
      return Status::failed_precondition("object {}/{} was rewritten (generation {:016x}, not {:016x})",
                                         object.bucket_id, object.name, found.record.generation(), *if_generation);
    }
  }
  bool is_found = false;
  for (size_t k = 0; k < mountpaths_.size(); ++k) {
    Mountpath& mountpath = *mountpaths_[(owner + k) % mountpaths_.size()];
    if (!mountpath.is_readable()) continue;
    Result<wire::ObjectRecord> record = mountpath.meta().get(object.bucket_id, object.name);
    if (!record && record.error().code() == Code::kNotFound) continue;
    // A record that does not decode is removed too: DELETE is how a client gets rid of it.
    if (!record && record.error().code() != Code::kDataLoss) return std::move(record).error();
    is_found = true;
    // Record first, then file: a crash in between leaves an orphan file, never a record
    // without its bytes.
    RETURN_IF_ERROR(mountpath.meta().remove(object.bucket_id, object.name, Durability::kFsync));
    if (!record) continue;
    Status removed = mountpath.file_system().remove_file(
        mountpath.object_file_path(object.bucket_id, object.name, record->generation()));
    if (!removed.is_ok()) SILO_LOG_WARN("file stays until reconciliation: {}", removed);
  }
  if (!is_found) {
    return Status::not_found("object {}/{} not found", object.bucket_id, object.name)
        .with_reason("NoSuchKey");
  }
  return Status::ok();
}

Result<wire::ObjectRecord> StoreImpl::update_blocking(
    const ObjectRef& object, const std::function<Status(wire::ObjectRecord&)>& mutate,
    Durability durability, size_t owner) {
  const auto lock = locks_.lock(object);
  ASSIGN_OR_RETURN(Found found, find_record(object, owner));
  wire::ObjectRecord updated = found.record;
  RETURN_IF_ERROR(mutate(updated));
  // The bytes did not change, so neither may what describes them (the file's name is
  // derived from the generation).
  updated.set_name(found.record.name());
  updated.set_size(found.record.size());
  updated.set_generation(found.record.generation());
  updated.set_xxh3(found.record.xxh3());
  updated.set_md5_hex(found.record.md5_hex());
  updated.set_etag(found.record.etag());
  *updated.mutable_parts() = found.record.parts();
  updated.set_block_size(found.record.block_size());
  *updated.mutable_block_xxh3() = found.record.block_xxh3();
  if (found.record.has_ec()) {
    *updated.mutable_ec() = found.record.ec();
  } else {
    updated.clear_ec();
  }
  RETURN_IF_ERROR(mountpaths_[found.index]->meta().put(object.bucket_id, updated, durability));
  return updated;
}

Awaitable<Result<wire::ObjectRecord>> StoreImpl::update(
    const ObjectRef& object, std::function<Status(wire::ObjectRecord&)> mutate,
    Durability durability) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  Result<wire::ObjectRecord> updated = co_await mountpaths_[owner]->disk().run(
      [this, &object, &mutate, durability, owner] {
        return update_blocking(object, mutate, durability, owner);
      });
  if (!updated) {
    Status status = std::move(updated).error();
    co_return status.annotate("update {}/{}", object.bucket_id, object.name);
  }
  co_return updated;
}

Awaitable<Status> StoreImpl::set_block_sums(const ObjectRef& object, uint64_t generation, uint64_t block_size,
                                            std::vector<uint64_t> sums) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  Status status = co_await mountpaths_[owner]->disk().run([this, &object, owner, generation, block_size,
                                                           &sums]() -> Status {
    const auto lock = locks_.lock(object);
    ASSIGN_OR_RETURN(Found found, find_record(object, owner));
    if (found.record.generation() != generation) {
      return Status::aborted("{}/{} changed while its block sums were computed", object.bucket_id, object.name);
    }
    if (found.record.has_ec()) return Status::invalid_argument("a slice keeps no block sums");
    wire::ObjectRecord updated = std::move(found.record);
    store::set_block_sums(updated, block_size, sums);
    if (!has_block_sums(updated)) {
      return Status::invalid_argument("{} block sums of {} bytes do not fit {} bytes", sums.size(), block_size,
                                      updated.size());
    }
    // Derived from the bytes, so redone by the next scrub if lost: no fsync.
    return mountpaths_[found.index]->meta().put(object.bucket_id, updated, Durability::kPageCache);
  });
  co_return status.annotate("block sums of {}/{}", object.bucket_id, object.name);
}

Awaitable<Status> StoreImpl::remove(const ObjectRef& object) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, owner] { return remove_blocking(object, owner, std::nullopt); });
}

Awaitable<Status> StoreImpl::remove_generation(const ObjectRef& object, uint64_t generation) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, owner, generation] { return remove_blocking(object, owner, generation); });
}

uint64_t StoreImpl::object_count_estimate() const {
  const OpGate::Ticket ticket = gate_.enter();
  uint64_t count = 0;
  for (const auto& mountpath : mountpaths_.all()) {
    if (mountpath->is_readable()) count += mountpath->meta().estimate_object_count();
  }
  return count;
}

Awaitable<Result<ListResult>> StoreImpl::list(BucketId bucket, ListOptions options) {
  const OpGate::Ticket ticket = gate_.enter();
  // One disk thread merges all mountpaths' iterators; spread buckets over the executors.
  co_return co_await executor_for(bucket).disk().run(
      [this, bucket, &options] { return list_objects(readable_dbs(), bucket, options); });
}

Awaitable<Status> StoreImpl::remove_bucket(BucketId bucket) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  for (const auto& mountpath_ptr : mountpaths_.all()) {
    Mountpath& mountpath = *mountpath_ptr;
    if (!mountpath.is_readable()) continue;
    Status status = co_await mountpath.disk().run([&mountpath, bucket]() -> Status {
      // Metadata first: a crash before the files are gone leaves only orphans, which the
      // reconciliation at the next start removes.
      RETURN_IF_ERROR(mountpath.meta().remove_bucket(bucket));
      for (const std::string& base : {mountpath.object_dir(), mountpath.parts_dir()}) {
        RETURN_IF_ERROR(
            mountpath.file_system().remove_tree(fmt::format("{}/{}", base, bucket.value())));
      }
      return Status::ok();
    });
    CO_RETURN_IF_ERROR(status.annotate("remove bucket {} on {}", bucket, mountpath.path()));
  }
  co_return Status::ok();
}

Awaitable<Result<std::vector<BucketId>>> StoreImpl::bucket_ids() {
  const OpGate::Ticket ticket = gate_.enter();
  std::vector<BucketId> ids;
  for (const auto& mountpath_ptr : mountpaths_.all()) {
    Mountpath& mountpath = *mountpath_ptr;
    if (!mountpath.is_readable()) continue;
    CO_RETURN_IF_ERROR(co_await mountpath.disk().run(
        [&mountpath, &ids] { return mountpath.meta().append_bucket_ids(ids); }));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  co_return std::move(ids);
}

void StoreImpl::close() {
  if (is_closed_.exchange(true)) return;
  for (const auto& mountpath : mountpaths_.all()) {
    if (!mountpath->is_readable()) continue;  // failed: the next start finds out what is left
    Status status = mountpath->mark_clean();
    if (!status.is_ok()) {
      SILO_LOG_ERROR("mountpath {} not marked clean (full reconciliation at next start): {}",
                     mountpath->path(), status);
    }
  }
}

}  // namespace detail
Result<uint64_t> xxh3_of_fd(int fd, uint64_t size) {
  constexpr uint64_t kHashChunk = 1024 * 1024;
  hash::Xxh3Stream xxh3;
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, kHashChunk)));
  uint64_t offset = 0;
  while (offset < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - offset));
    const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::from_errno(errno, "read for the checksum");
    if (n == 0) return Status::data_loss("the file has {} bytes, its record {}", offset, size);
    xxh3.update(std::span<const char>(buffer.data(), static_cast<size_t>(n)));
    offset += static_cast<uint64_t>(n);
  }
  return xxh3.digest();
}

}  // namespace silo::store
