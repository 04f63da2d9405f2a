// Multipart uploads of StoreImpl (store.h, docs/on-disk-format.md "Multipart uploads").
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <vector>

#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "store/block_sums.h"
#include "store/detail/object_file.h"
#include "store/detail/store_impl.h"
#include "store/detail/upload_lister.h"

namespace silo::store::detail {
namespace {

constexpr int kMaxPartNumber = 10000;

Status no_such_upload(const ObjectRef& object, std::string_view upload_id) {
  return Status::not_found("upload {} of {}/{} does not exist", upload_id, object.bucket_id,
                           object.name)
      .with_reason("NoSuchUpload");
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view unquoted(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

// The 16 raw bytes of an MD5 given as 32 hex digits (validated when it was stored).
std::string md5_raw(std::string_view hex) {
  auto nibble = [](char c) {
    return static_cast<unsigned>(c <= '9' ? c - '0' : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
  };
  std::string raw;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    raw.push_back(static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1])));
  }
  return raw;
}

PartInfo part_info_of(const wire::UploadPartRecord& part) {
  PartInfo info;
  info.part_number = static_cast<int>(part.part_number());
  info.size = part.size();
  info.etag_hex = part.md5_hex();
  info.mtime_unix_nanos = part.mtime_unix_nanos();
  info.checksums.insert(part.checksums().begin(), part.checksums().end());
  return info;
}

// Checks a CompleteMultipartUpload list against the stored parts (ascending) and returns
// the stored part of each listed one, in order.
Result<std::vector<const wire::UploadPartRecord*>> select_parts(
    const std::vector<CompletePart>& listed, const std::vector<wire::UploadPartRecord>& stored,
    uint64_t min_part_size) {
  if (listed.empty()) {
    return Status::invalid_argument("a multipart upload is completed with at least one part")
        .with_reason("MalformedXML");
  }
  std::vector<const wire::UploadPartRecord*> selected;
  for (size_t i = 0; i < listed.size(); ++i) {
    const CompletePart& part = listed[i];
    if (i > 0 && part.part_number <= listed[i - 1].part_number) {
      return Status::invalid_argument("part {} follows part {}: the list must be ascending",
                                      part.part_number, listed[i - 1].part_number)
          .with_reason("InvalidPartOrder");
    }
    const auto it = std::lower_bound(
        stored.begin(), stored.end(), part.part_number,
        [](const wire::UploadPartRecord& p, int number) {
          return static_cast<int64_t>(p.part_number()) < number;
        });
    if (it == stored.end() || static_cast<int>(it->part_number()) != part.part_number ||
        lowercase(unquoted(part.etag_hex)) != it->md5_hex()) {
      return Status::invalid_argument("part {} with ETag {} was not uploaded", part.part_number,
                                      part.etag_hex)
          .with_reason("InvalidPart");
    }
    selected.push_back(&*it);
  }
  for (size_t i = 0; i + 1 < selected.size(); ++i) {
    if (selected[i]->size() < min_part_size) {
      return Status::invalid_argument("part {} has {} bytes; all but the last need {}",
                                      selected[i]->part_number(), selected[i]->size(),
                                      min_part_size)
          .with_reason("EntityTooSmall");
    }
  }
  return selected;
}

// XXH3-64 and block sums of a whole file, which must have `expected_size` bytes.
Result<FileSums> sums_of_file(const std::string& path, uint64_t expected_size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, fmt::format("open {}", path));
  auto sums = sums_of_fd(fd, expected_size);
  ::close(fd);
  if (!sums) return std::move(sums).error().annotate("assembled {}", path);
  return sums;
}

void remove_directory(FileSystem& file_system, const std::string& dir) {
  const Status removed = file_system.remove_tree(dir);
  // Whatever stays is removed at the next start (the upload's record is gone).
  if (!removed.is_ok()) SILO_LOG_WARN("part files in {} stay until restart: {}", dir, removed);
}

}  // namespace

UploadInfo upload_info_of(const wire::UploadRecord& record) {
  UploadInfo info;
  info.upload_id = record.upload_id();
  info.name = record.name();
  info.initiated_unix_nanos = record.initiated_unix_nanos();
  info.attributes = record.attributes();
  info.checksum = UploadChecksum{record.checksum_algorithm(), record.checksum_type()};
  return info;
}

StoreImpl::UploadClaim::~UploadClaim() {
  const MutexLock guard(store_.claims_mutex_);
  store_.claimed_uploads_.erase(upload_id_);
}

bool StoreImpl::try_claim(const std::string& upload_id) {
  const MutexLock guard(claims_mutex_);
  return claimed_uploads_.insert(upload_id).second;
}

bool StoreImpl::is_claimed(const std::string& upload_id) {
  const MutexLock guard(claims_mutex_);
  return claimed_uploads_.contains(upload_id);
}

Result<StoreImpl::FoundUpload> StoreImpl::find_upload(const ObjectRef& object,
                                                      const std::string& upload_id,
                                                      size_t owner) {
  // Ids name directories: refuse anything but our own format before any lookup.
  if (!is_upload_id(upload_id)) return no_such_upload(object, upload_id);
  for (size_t k = 0; k < mountpaths_.size(); ++k) {
    const size_t index = (owner + k) % mountpaths_.size();
    if (!mountpaths_[index]->is_readable()) continue;
    Result<wire::UploadRecord> record =
        mountpaths_[index]->meta().get_upload(object.bucket_id, object.name, upload_id);
    if (record) return FoundUpload{index, std::move(*record)};
    if (record.error().code() != Code::kNotFound) return std::move(record).error();
  }
  return no_such_upload(object, upload_id);
}

Awaitable<Result<UploadInfo>> StoreImpl::create_upload(const ObjectRef& object, wire::ObjectRecord attributes,
                                                       UploadChecksum checksum) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  CO_RETURN_IF_ERROR(check_object_name(object));
  const size_t owner = owner_of(object);
  MetaDb& meta = mountpaths_[owner]->meta();
  co_return co_await mountpaths_[owner]->disk().run(
      [&meta, &object, &attributes, &checksum]() -> Result<UploadInfo> {
        wire::UploadRecord record;
        record.set_name(object.name);
        const int64_t now = Clock::real().unix_nanos();
        // Time first, so ids of one name sort by initiation; the random half makes them
        // unguessable and unique.
        record.set_upload_id(
            fmt::format("{:016x}{:016x}", static_cast<uint64_t>(now), random_u64()));
        record.set_initiated_unix_nanos(now);
        copy_descriptive_fields(attributes, *record.mutable_attributes());
        record.set_checksum_algorithm(checksum.algorithm);
        record.set_checksum_type(checksum.type);
        Status status = meta.put_upload(object.bucket_id, record, Durability::kFsync);
        if (!status.is_ok()) {
          return status.annotate("create upload of {}/{}", object.bucket_id, object.name);
        }
        return upload_info_of(record);
      });
}

Awaitable<Result<std::unique_ptr<ObjectWriter>>> StoreImpl::create_part(const ObjectRef& object,
                                                                        std::string upload_id,
                                                                        int part_number,
                                                                        PutOptions options) {
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  if (part_number < 1 || part_number > kMaxPartNumber) {
    co_return Status::invalid_argument("part number {} is not in 1..{}", part_number,
                                       kMaxPartNumber)
        .with_reason("InvalidArgument");
  }
  OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  // The upload is checked again when the part commits; this only fails early.
  Result<std::pair<size_t, WorkFile>> created = co_await mountpaths_[owner]->disk().run(
      [this, &object, &upload_id, owner]() -> Result<std::pair<size_t, WorkFile>> {
        ASSIGN_OR_RETURN(FoundUpload found, find_upload(object, upload_id, owner));
        if (is_claimed(upload_id)) return no_such_upload(object, upload_id);
        // On the upload's mountpath, so the part is renamed into place and completion can
        // copy_file_range within one file system.
        ASSIGN_OR_RETURN(WorkFile work, mountpaths_[found.index]->create_work_file());
        return std::make_pair(found.index, std::move(work));
      });
  if (!created) {
    Status status = std::move(created).error();
    co_return status.annotate("part {} of upload {}", part_number, upload_id);
  }
  const size_t index = created->first;
  co_return std::unique_ptr<ObjectWriter>(std::make_unique<WorkFileWriter>(
      *this, std::move(ticket), index, *mountpaths_[index], object, std::move(options), std::move(created->second),
      PartTarget{std::move(upload_id), static_cast<uint32_t>(part_number)}));
}

Result<wire::ObjectRecord> StoreImpl::install_part(size_t index, const ObjectRef& object,
                                                   const PartTarget& part,
                                                   const std::string& work_path,
                                                   wire::ObjectRecord record,
                                                   Durability durability) {
  Mountpath& mountpath = *mountpaths_[index];
  MetaDb& meta = mountpath.meta();
  const auto lock = locks_.lock(object);
  Result<wire::UploadRecord> upload = meta.get_upload(object.bucket_id, object.name, part.upload_id);
  if (!upload) return std::move(upload).error();  // NoSuchUpload after an abort or completion
  if (is_claimed(part.upload_id)) return no_such_upload(object, part.upload_id);
  std::optional<uint64_t> previous_generation;
  Result<wire::UploadPartRecord> previous =
      meta.get_part(object.bucket_id, object.name, part.upload_id, part.part_number);
  if (previous) {
    previous_generation = previous->generation();
  } else if (previous.error().code() == Code::kDataLoss) {
    SILO_LOG_WARN("{}; replacing it (its file stays until the next reconciliation)",
                  previous.error().message());
  } else if (previous.error().code() != Code::kNotFound) {
    return std::move(previous).error();
  }

  FileSystem& file_system = mountpath.file_system();
  RETURN_IF_ERROR(make_directories(file_system, mountpath.parts_dir(),
                                   fmt::format("{}/{}", object.bucket_id.value(), part.upload_id),
                                   durability));
  const std::string final_path = mountpath.part_file_path(object.bucket_id, part.upload_id,
                                                          part.part_number, record.generation());
  RETURN_IF_ERROR(file_system.rename(work_path, final_path));
  // As in install(): until the record is committed, a failure takes the new file away.
  wire::UploadPartRecord part_record;
  part_record.set_part_number(part.part_number);
  part_record.set_size(record.size());
  part_record.set_md5_hex(record.md5_hex());
  part_record.set_generation(record.generation());
  part_record.set_mtime_unix_nanos(record.mtime_unix_nanos());
  part_record.set_xxh3(record.xxh3());
  part_record.mutable_checksums()->insert(record.checksums().begin(), record.checksums().end());
  Status status;
  if (durability == Durability::kFsync) {
    status = file_system.sync_directory(mountpath.upload_dir(object.bucket_id, part.upload_id));
  }
  if (status.is_ok()) {
    status = meta.put_part(object.bucket_id, object.name, part.upload_id, part_record, durability);
  }
  if (!status.is_ok()) {
    std::ignore = file_system.remove_file(final_path);  // if this fails, reconciliation removes it
    return status;
  }
  if (previous_generation && *previous_generation != record.generation()) {
    Status removed = file_system.remove_file(mountpath.part_file_path(
        object.bucket_id, part.upload_id, part.part_number, *previous_generation));
    if (!removed.is_ok()) SILO_LOG_WARN("replaced part file stays until restart: {}", removed);
  }
  return record;
}

Awaitable<Result<UploadInfo>> StoreImpl::get_upload(const ObjectRef& object,
                                                    const std::string& upload_id) {
  const OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, &upload_id, owner]() -> Result<UploadInfo> {
        ASSIGN_OR_RETURN(FoundUpload found, find_upload(object, upload_id, owner));
        return upload_info_of(found.record);
      });
}

Result<std::vector<PartInfo>> StoreImpl::list_parts_blocking(const ObjectRef& object,
                                                             const std::string& upload_id,
                                                             size_t owner) {
  ASSIGN_OR_RETURN(FoundUpload found, find_upload(object, upload_id, owner));
  std::vector<wire::UploadPartRecord> stored;
  RETURN_IF_ERROR(mountpaths_[found.index]->meta().get_parts(object.bucket_id, object.name,
                                                             upload_id, &stored, nullptr));
  std::vector<PartInfo> parts;
  parts.reserve(stored.size());
  for (const wire::UploadPartRecord& part : stored) parts.push_back(part_info_of(part));
  return parts;
}

Awaitable<Result<std::vector<PartInfo>>> StoreImpl::list_parts(const ObjectRef& object,
                                                               const std::string& upload_id) {
  const OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, &upload_id, owner] { return list_parts_blocking(object, upload_id, owner); });
}

// The ObjectWriter of Store::assemble_upload: the upload's parts copied into a work file
// on the upload's mountpath, and the claim on the upload, held until the writer commits,
// finishes sealed or ends (which releases the claim and leaves the upload as it was).
class AssembledUpload final : public ObjectWriter {
 public:
  AssembledUpload(StoreImpl& store, OpGate::Ticket ticket, size_t owner, size_t index, ObjectRef object,
                  std::string upload_id, std::unique_ptr<StoreImpl::UploadClaim> claim, PutOptions options,
                  std::string work_path, wire::ObjectRecord record, FinishedUpload finished)
      : store_(store),
        ticket_(std::move(ticket)),
        claim_(std::move(claim)),
        owner_(owner),
        mountpath_(*store.mountpaths_[index]),
        index_(index),
        object_(std::move(object)),
        upload_id_(std::move(upload_id)),
        options_(std::move(options)),
        work_path_(std::move(work_path)),
        record_(std::move(record)),
        finished_(std::move(finished)) {}
  ~AssembledUpload() override {
    if (work_path_.empty()) return;
    // The claim goes with the writer: the upload stays as it was.
    mountpath_.disk().post([path = std::move(work_path_), &file_system = mountpath_.file_system()] {
      std::ignore = file_system.remove_file(path);  // open() clears work/ if this fails
    });
  }
  AssembledUpload(const AssembledUpload&) = delete;
  AssembledUpload& operator=(const AssembledUpload&) = delete;

  Awaitable<Status> write(std::span<const char>) override {
    co_return Status::failed_precondition("an assembled upload takes no more bytes");
  }
  void set_checksum(std::string algorithm, std::string base64_value) override {
    (*record_.mutable_checksums())[std::move(algorithm)] = std::move(base64_value);
  }
  wire::ObjectRecord& attributes() override { return record_; }
  Result<int> open_reader() override {
    if (work_path_.empty()) return Status::failed_precondition("the assembled upload is gone");
    const int fd = ::open(work_path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::from_errno(errno, fmt::format("open {}", work_path_));
    return fd;
  }
  Awaitable<Result<wire::ObjectRecord>> commit() override {
    co_return co_await run([this]() -> Result<wire::ObjectRecord> {
      if (is_sealed_) return Status::failed_precondition("a sealed upload is finished, not committed");
      wire::ObjectRecord record = record_;
      record.set_generation(store_.next_generation());
      Result<wire::ObjectRecord> installed = store_.install(index_, object_, work_path_, std::move(record),
                                                            options_.durability, options_.precondition, &finished_);
      if (!installed) {
        remove_work_file();  // now, not later: the upload stays, its work file does not
        return installed;
      }
      work_path_.clear();
      forget_files();
      return installed;
    });
  }
  Awaitable<Result<wire::ObjectRecord>> seal() override {
    co_return co_await run([this]() -> Result<wire::ObjectRecord> {
      RETURN_IF_ERROR(store_.check_precondition(owner_, object_, options_.precondition));
      is_sealed_ = true;
      return record_;
    });
  }
  Awaitable<void> finish_sealed() override {
    std::ignore = co_await run([this]() -> Result<wire::ObjectRecord> {
      remove_work_file();
      std::vector<std::string> keys = finished_.part_keys;
      keys.push_back(finished_.key);
      RETURN_IF_ERROR(mountpath_.meta().remove_upload_keys(keys, options_.durability));
      forget_files();
      return wire::ObjectRecord();
    });
  }
  Awaitable<void> discard() override {
    std::ignore = co_await run([this]() -> Result<wire::ObjectRecord> {
      remove_work_file();
      return wire::ObjectRecord();
    });
  }

 private:
  // `work` on the mountpath's disk thread; errors name the upload.
  template <typename Fn>
  Awaitable<Result<wire::ObjectRecord>> run(Fn work) {
    Result<wire::ObjectRecord> out = co_await mountpath_.disk().run(std::move(work));
    if (!out) {
      Status status = std::move(out).error();
      co_return status.annotate("complete upload {} of {}/{}", upload_id_, object_.bucket_id, object_.name);
    }
    co_return out;
  }
  void remove_work_file() {
    if (work_path_.empty()) return;
    std::ignore = mountpath_.file_system().remove_file(work_path_);  // open() clears work/ if this fails
    work_path_.clear();
  }
  // The upload's records are gone: its part files go, then the claim.
  void forget_files() {
    remove_directory(mountpath_.file_system(), mountpath_.upload_dir(object_.bucket_id, upload_id_));
    claim_.reset();
  }

  StoreImpl& store_;
  OpGate::Ticket ticket_;
  std::unique_ptr<StoreImpl::UploadClaim> claim_;
  size_t owner_;  // the object's owner mountpath (preconditions look there first)
  Mountpath& mountpath_;
  size_t index_;  // the upload's mountpath, where the work file is
  ObjectRef object_;
  std::string upload_id_;
  PutOptions options_;
  std::string work_path_;      // empty once installed or removed
  wire::ObjectRecord record_;  // generation 0
  FinishedUpload finished_;
  bool is_sealed_ = false;
};

Result<std::unique_ptr<ObjectWriter>> StoreImpl::assemble_blocking(OpGate::Ticket ticket, const ObjectRef& object,
                                                                   const std::string& upload_id,
                                                                   const std::vector<CompletePart>& listed,
                                                                   PutOptions options, size_t owner) {
  // Claim the upload under the object lock, then build the object without the lock (it
  // may take a while); the install takes the lock again. The claim keeps parts, aborts and
  // other completions of this upload out meanwhile.
  FoundUpload found;
  std::vector<wire::UploadPartRecord> stored;
  FinishedUpload finished;
  std::unique_ptr<UploadClaim> claim;
  {
    const auto lock = locks_.lock(object);
    ASSIGN_OR_RETURN(found, find_upload(object, upload_id, owner));
    if (!try_claim(upload_id)) return no_such_upload(object, upload_id);
    claim = std::make_unique<UploadClaim>(*this, upload_id);
    RETURN_IF_ERROR(mountpaths_[found.index]->meta().get_parts(
        object.bucket_id, object.name, upload_id, &stored, &finished.part_keys));
  }
  finished.key = upload_key(object.bucket_id, object.name, upload_id);
  ASSIGN_OR_RETURN(const std::vector<const wire::UploadPartRecord*> selected,
                   select_parts(listed, stored, min_part_size_));

  Mountpath& mountpath = *mountpaths_[found.index];
  ASSIGN_OR_RETURN(WorkFile work, mountpath.create_work_file());
  Md5Stream etag_md5;
  uint64_t size = 0;
  Status status;
  for (const wire::UploadPartRecord* part : selected) {
    const std::string path = mountpath.part_file_path(object.bucket_id, upload_id,
                                                      part->part_number(), part->generation());
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      status = errno == ENOENT ? Status::data_loss("part file {} is missing", path)
                               : Status::from_errno(errno, fmt::format("open {}", path));
      break;
    }
    status = mountpath.file_system().append_file(work.fd, work.path, fd, path, part->size());
    ::close(fd);
    if (!status.is_ok()) break;
    size += part->size();
    etag_md5.update(md5_raw(part->md5_hex()));
  }
  if (status.is_ok() && options.durability == Durability::kFsync) {
    status = mountpath.file_system().sync_data(work.fd, work.path);
  }
  if (::close(work.fd) != 0 && status.is_ok()) {
    status = Status::from_errno(errno, fmt::format("close {}", work.path));
  }
  // copy_file_range moved the bytes without us seeing them: read the result once for its
  // integrity checksums, whole and per block (and to prove its size).
  Result<FileSums> sums = status.is_ok() ? sums_of_file(work.path, size) : Result<FileSums>(status);
  if (!sums) {
    // open() clears work/ if this fails.
    std::ignore = mountpath.file_system().remove_file(work.path);
    return std::move(sums).error();
  }

  wire::ObjectRecord record;
  copy_descriptive_fields(found.record.attributes(), record);
  record.set_name(object.name);
  record.set_size(size);
  record.set_xxh3(sums->xxh3);
  store::set_block_sums(record, sums->block_size, sums->blocks);
  // md5_hex stays empty: nobody computed the MD5 of the whole bytes, and S3's ETag of a
  // multipart object is not one.
  record.set_etag(fmt::format("{}-{}", etag_md5.finish_hex(), selected.size()));
  for (const wire::UploadPartRecord* part : selected) {
    wire::ObjectRecord::PartInfo& info = *record.add_parts();
    info.set_size(part->size());
    info.set_etag_hex(part->md5_hex());
  }
  const int64_t now = Clock::real().unix_nanos();
  record.set_mtime_unix_nanos(now);
  record.set_atime_unix_nanos(now);
  return std::unique_ptr<ObjectWriter>(new AssembledUpload(*this, std::move(ticket), owner, found.index, object,
                                                           upload_id, std::move(claim), std::move(options),
                                                           std::move(work.path), std::move(record),
                                                           std::move(finished)));
}

Awaitable<Result<std::unique_ptr<ObjectWriter>>> StoreImpl::assemble_upload(const ObjectRef& object,
                                                                            const std::string& upload_id,
                                                                            std::vector<CompletePart> parts,
                                                                            PutOptions options) {
  OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  Result<std::unique_ptr<ObjectWriter>> writer = co_await mountpaths_[owner]->disk().run(
      [this, &ticket, &object, &upload_id, &parts, &options, owner] {
        return assemble_blocking(std::move(ticket), object, upload_id, parts, std::move(options), owner);
      });
  if (!writer) {
    Status status = std::move(writer).error();
    co_return status.annotate("complete upload {} of {}/{}", upload_id, object.bucket_id, object.name);
  }
  co_return writer;
}

Status StoreImpl::abort_blocking(const ObjectRef& object, const std::string& upload_id,
                                 size_t owner) {
  size_t index = 0;
  {
    const auto lock = locks_.lock(object);
    ASSIGN_OR_RETURN(FoundUpload found, find_upload(object, upload_id, owner));
    if (is_claimed(upload_id)) return no_such_upload(object, upload_id);
    index = found.index;
    RETURN_IF_ERROR(mountpaths_[index]->meta().remove_upload(object.bucket_id, object.name,
                                                             upload_id, Durability::kFsync));
  }
  // Records first, then files: a crash in between leaves only files without an upload,
  // which the next start removes.
  remove_directory(mountpaths_[index]->file_system(),
                   mountpaths_[index]->upload_dir(object.bucket_id, upload_id));
  return Status::ok();
}

Awaitable<Status> StoreImpl::abort_upload(const ObjectRef& object, const std::string& upload_id) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run(
      [this, &object, &upload_id, owner] { return abort_blocking(object, upload_id, owner); });
}

Awaitable<Result<UploadList>> StoreImpl::list_uploads(BucketId bucket, UploadListOptions options) {
  const OpGate::Ticket ticket = gate_.enter();
  co_return co_await executor_for(bucket).disk().run(
      [this, bucket, &options] { return detail::list_uploads(readable_dbs(), bucket, options); });
}

Awaitable<Result<size_t>> StoreImpl::remove_uploads_initiated_before(int64_t unix_nanos) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  size_t removed = 0;
  for (const auto& mountpath_ptr : mountpaths_.all()) {
    Mountpath& mountpath = *mountpath_ptr;
    if (!mountpath.is_readable()) continue;
    Result<size_t> aborted = co_await mountpath.disk().run([this, &mountpath, unix_nanos]() -> Result<size_t> {
      std::vector<std::pair<ObjectRef, std::string>> old;
      {
        rocksdb::ReadOptions read_options;
        read_options.fill_cache = false;
        std::unique_ptr<rocksdb::Iterator> it = mountpath.meta().new_upload_iterator(read_options);
        it->SeekToFirst();
        while (it->Valid()) {
          const std::optional<UploadKey> key = parse_upload_key(it->key());
          if (!key || key->part_number) {
            it->Next();
            continue;
          }
          Result<wire::UploadRecord> record = wire::decode<wire::UploadRecord>(
              std::string_view(it->value().data(), it->value().size()), wire::Source::kDisk);
          if (record && record->initiated_unix_nanos() < unix_nanos) {
            old.emplace_back(ObjectRef{key->bucket, key->name}, key->upload_id);
          }
          it->Seek(upload_key(key->bucket, key->name, key->upload_id) + '\xff');
        }
        RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate uploads"));
      }
      size_t count = 0;
      for (const auto& [object, upload_id] : old) {
        Status status = abort_blocking(object, upload_id, owner_of(object));
        if (status.is_ok()) {
          ++count;
        } else if (status.code() != Code::kNotFound) {
          return status.annotate("remove abandoned upload {} of {}/{}", upload_id,
                                 object.bucket_id, object.name);
        }
      }
      return count;
    });
    if (!aborted) {
      Status status = std::move(aborted).error();
      co_return status.annotate("mountpath {}", mountpath.path());
    }
    removed += *aborted;
  }
  co_return removed;
}

}  // namespace silo::store::detail
