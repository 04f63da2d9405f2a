#include "store/detail/work_file_writer.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <tuple>

#include "base/clock.h"
#include "store/detail/store_impl.h"

namespace silo::store::detail {
namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

WorkFileWriter::WorkFileWriter(StoreImpl& store, OpGate::Ticket ticket, size_t owner, Mountpath& mountpath,
                               ObjectRef object, PutOptions options, WorkFile work,
                               std::optional<PartTarget> part)
    : store_(store),
      ticket_(std::move(ticket)),
      owner_(owner),
      mountpath_(mountpath),
      object_(std::move(object)),
      options_(std::move(options)),
      part_(std::move(part)),
      fd_(work.fd),
      work_path_(std::move(work.path)) {}

WorkFileWriter::~WorkFileWriter() {
  if (fd_ < 0 && work_path_.empty()) return;
  // The mountpath (and so its FileSystem) outlives the work its executor runs.
  mountpath_.disk().post(
      [fd = fd_, path = std::move(work_path_), &file_system = mountpath_.file_system()] {
        if (fd >= 0) ::close(fd);
        // open() clears work/ if this fails.
        if (!path.empty()) std::ignore = file_system.remove_file(path);
      });
}

Awaitable<Status> WorkFileWriter::write(std::span<const char> data) {
  Status status = co_await mountpath_.disk().run([this, data] { return write_blocking(data); });
  co_return status.annotate("put {}/{}", object_.bucket_id, object_.name);
}

void WorkFileWriter::set_checksum(std::string algorithm, std::string base64_value) {
  checksums_[std::move(algorithm)] = std::move(base64_value);
}

Awaitable<Result<wire::ObjectRecord>> WorkFileWriter::commit() {
  Result<wire::ObjectRecord> record =
      co_await mountpath_.disk().run([this] { return commit_blocking(); });
  if (!record) {
    Status status = std::move(record).error();
    co_return status.annotate("put {}/{}", object_.bucket_id, object_.name);
  }
  co_return std::move(record);
}

Status WorkFileWriter::write_blocking(std::span<const char> data) {
  if (state_ != State::kWriting) return Status::failed_precondition("writer is not open");
  xxh3_.update(data);
  // A part's blocks are not kept: the assembled object gets its own.
  if (!part_) blocks_.update(data);
  // A copy takes its MD5 from the original's record (its XXH3 proves the bytes equal).
  if (computes_md5()) md5_.update(data);
  Status status = write_fully(mountpath_.file_system(), fd_, data, work_path_);
  if (!status.is_ok()) {
    state_ = State::kFailed;
    return status;
  }
  size_ += data.size();
  return Status::ok();
}

Status WorkFileWriter::check_expected(const std::string& md5_hex) const {
  if (options_.expected_size && *options_.expected_size != size_) {
    return Status::invalid_argument("expected {} bytes, received {}", *options_.expected_size,
                                    size_)
        .with_reason("IncompleteBody");
  }
  if (options_.expected_md5_hex && lowercase(*options_.expected_md5_hex) != md5_hex) {
    return Status::invalid_argument("expected MD5 {}, the bytes have {}",
                                    *options_.expected_md5_hex, md5_hex)
        .with_reason("BadDigest");
  }
  return Status::ok();
}

Result<int> WorkFileWriter::open_reader() {
  if (work_path_.empty()) return Status::failed_precondition("writer of {} has no work file", object_.name);
  const int fd = ::open(work_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, fmt::format("open {}", work_path_));
  return fd;
}

Result<wire::ObjectRecord> WorkFileWriter::commit_blocking() {
  if (state_ != State::kWriting) return Status::failed_precondition("writer is not open");
  // Failed until install() succeeds; every early return below leaves no work file.
  state_ = State::kFailed;
  const std::string md5_hex = is_copy()          ? options_.original->md5_hex()
                              : !computes_md5() ? std::string()
                                                : md5_.finish_hex();
  Status status = check_expected(md5_hex);
  if (status.is_ok() && options_.durability == Durability::kFsync) {
    status = mountpath_.file_system().sync_data(fd_, work_path_);
  }
  if (status.is_ok() && ::close(std::exchange(fd_, -1)) != 0) {
    status = Status::from_errno(errno, fmt::format("close {}", work_path_));
  }
  if (!status.is_ok()) {
    discard_blocking();
    return status;
  }

  wire::ObjectRecord record = record_of_bytes(md5_hex);
  record.set_generation(store_.next_generation());
  if (options_.original && !part_) {
    const wire::ObjectRecord& original = *options_.original;
    if (original.size() != record.size() || original.xxh3() != record.xxh3()) {
      discard_blocking();
      return Status::data_loss("copy of {}/{} has {} bytes with XXH3 {:016x}; the original has {} with {:016x}",
                               object_.bucket_id, object_.name, record.size(), record.xxh3(), original.size(),
                               original.xxh3());
    }
    record.set_md5_hex(original.md5_hex());
    record.set_etag(original.etag());
    *record.mutable_parts() = original.parts();
    record.set_mtime_unix_nanos(original.mtime_unix_nanos());
    record.set_atime_unix_nanos(original.atime_unix_nanos());
    if (original.has_ec()) {
      *record.mutable_ec() = original.ec();
      set_block_sums(record, 0, {});  // a slice is checked whole (docs/data-protection.md)
    }
  }
  Result<wire::ObjectRecord> installed =
      part_ ? store_.install_part(owner_, object_, *part_, work_path_, std::move(record),
                                  options_.durability)
            : store_.install(owner_, object_, work_path_, std::move(record), options_.durability,
                             options_.precondition);
  if (!installed) {
    discard_blocking();
    return installed;
  }
  work_path_.clear();
  state_ = State::kCommitted;
  return installed;
}

wire::ObjectRecord WorkFileWriter::record_of_bytes(const std::string& md5_hex) {
  wire::ObjectRecord record;
  record.set_name(object_.name);
  record.set_size(size_);
  record.set_xxh3(xxh3_.digest());
  if (!part_) {
    const std::vector<uint64_t> sums = blocks_.finish();
    set_block_sums(record, blocks_.block_size(), sums);
  }
  record.set_md5_hex(md5_hex);
  const int64_t now = Clock::real().unix_nanos();
  record.set_mtime_unix_nanos(now);
  record.set_atime_unix_nanos(now);
  if (part_) {
    // A part keeps only its checksums: the upload holds the object's attributes.
    record.mutable_checksums()->insert(options_.attributes.checksums().begin(),
                                       options_.attributes.checksums().end());
  } else {
    copy_descriptive_fields(options_.attributes, record);
  }
  for (const auto& [algorithm, value] : checksums_) (*record.mutable_checksums())[algorithm] = value;
  return record;
}

Awaitable<Result<wire::ObjectRecord>> WorkFileWriter::seal() {
  Result<wire::ObjectRecord> record = co_await mountpath_.disk().run([this] { return seal_blocking(); });
  if (!record) {
    Status status = std::move(record).error();
    co_return status.annotate("put {}/{}", object_.bucket_id, object_.name);
  }
  co_return std::move(record);
}

Result<wire::ObjectRecord> WorkFileWriter::seal_blocking() {
  if (state_ != State::kWriting) return Status::failed_precondition("writer is not open");
  if (part_ || is_copy()) return Status::failed_precondition("only a new object's writer seals");
  // A failed check ends the writer as a failed commit would; the work file stays for
  // discard() or the destructor.
  state_ = State::kFailed;
  const std::string md5_hex = computes_md5() ? md5_.finish_hex() : std::string();
  RETURN_IF_ERROR(check_expected(md5_hex));
  RETURN_IF_ERROR(store_.check_precondition(owner_, object_, options_.precondition));
  state_ = State::kSealed;
  return record_of_bytes(md5_hex);
}

Awaitable<void> WorkFileWriter::discard() {
  if (state_ == State::kCommitted) co_return;
  state_ = State::kFailed;
  co_await mountpath_.disk().run([this] {
    discard_blocking();
    return Status::ok();
  });
}

void WorkFileWriter::discard_blocking() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (!work_path_.empty()) {
    // open() clears work/ if this fails.
    std::ignore = mountpath_.file_system().remove_file(work_path_);
    work_path_.clear();
  }
}

}  // namespace silo::store::detail
