#include "store/detail/mountpath.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/log.h"
#include "placement/hrw.h"
#include "store/detail/object_file.h"
#include "store/detail/reconcile.h"

namespace silo::store::detail {
namespace {

constexpr char kIdFile[] = ".silo-mountpath";
constexpr char kDisabledFile[] = ".silo-disabled";
constexpr char kCleanFile[] = ".clean";
constexpr char kFormatLine[] = "silo-mountpath-format 1";
constexpr size_t kIdDigits = 16;

bool is_id(std::string_view id) {
  return id.size() == kIdDigits &&
         id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The id file is two lines: "silo-mountpath-format 1" and "id <16 hex digits>".
Result<std::string> parse_id_file(std::string_view content, const std::string& path) {
  const size_t first_end = content.find('\n');
  const std::string_view first = content.substr(0, first_end);
  if (first != kFormatLine) {
    if (first.starts_with("silo-mountpath-format ")) {
      return Status::failed_precondition("{} has '{}'; this build reads '{}'", path, first,
                                         kFormatLine);
    }
    return Status::data_loss("{} is not a Silo mountpath id file", path);
  }
  std::string_view rest =
      first_end == std::string_view::npos ? std::string_view() : content.substr(first_end + 1);
  if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  if (!rest.starts_with("id ") || !is_id(rest.substr(3))) {
    return Status::data_loss("{} holds no valid mountpath id", path);
  }
  return std::string(rest.substr(3));
}

Status make_directory(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::from_errno(ec.value(), fmt::format("create directory {}", path));
  return Status::ok();
}

// Work files belong to PUTs of a previous run, which were never acknowledged.
Result<size_t> remove_work_files(FileSystem& file_system, const std::string& work_dir) {
  std::error_code ec;
  size_t count = 0;
  std::vector<std::string> paths;
  for (std::filesystem::directory_iterator it(work_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    paths.push_back(it->path().string());
  }
  if (ec) return Status::from_errno(ec.value(), fmt::format("list {}", work_dir));
  for (const std::string& path : paths) {
    RETURN_IF_ERROR(file_system.remove_tree(path));
    ++count;
  }
  return count;
}

}  // namespace

Result<std::string> Mountpath::read_or_create_id(const std::string& path) {
  RETURN_IF_ERROR(make_directory(path));
  const std::string id_path = path + "/" + kIdFile;
  Result<std::string> content = read_small_file(id_path, 4096);
  if (content) return parse_id_file(*content, id_path);
  if (content.error().code() != Code::kNotFound) return content.error();
  const std::string id = fmt::format("{:016x}", random_u64());
  // A brand-new mountpath has nothing to reconcile: mark it clean before it gets an id.
  // A directory that has metadata but lost its id file is not new: it gets reconciled.
  std::error_code ec;
  if (!std::filesystem::exists(path + "/meta", ec)) {
    RETURN_IF_ERROR(write_file_durably(path, kCleanFile, ""));
  }
  RETURN_IF_ERROR(write_file_durably(path, kIdFile, fmt::format("{}\nid {}\n", kFormatLine, id)));
  SILO_LOG_INFO("mountpath {}: new id {}", path, id);
  return id;
}

Mountpath::Mountpath(std::string path, std::string id, size_t threads,
                     std::shared_ptr<FileSystem> file_system)
    : path_(std::move(path)),
      id_(std::move(id)),
      object_dir_(path_ + "/obj"),
      work_dir_(path_ + "/work"),
      parts_dir_(path_ + "/parts"),
      file_system_(std::move(file_system)),
      hrw_hash_(placement::candidate_hash(id_)),
      disk_(threads) {}

Result<std::unique_ptr<Mountpath>> Mountpath::open(const std::string& path, const std::string& id,
                                                   const MetaDbResources& resources, size_t threads,
                                                   std::shared_ptr<FileSystem> file_system) {
  std::unique_ptr<Mountpath> mountpath(new Mountpath(path, id, threads, std::move(file_system)));
  Status status = mountpath->recover(resources);
  if (!status.is_ok()) return status.annotate("mountpath {}", path);
  return mountpath;
}

Status Mountpath::recover(const MetaDbResources& resources) {
  RETURN_IF_ERROR(make_directory(path_ + "/meta"));
  RETURN_IF_ERROR(make_directory(object_dir_));
  RETURN_IF_ERROR(make_directory(work_dir_));
  RETURN_IF_ERROR(make_directory(parts_dir_));
  ASSIGN_OR_RETURN(meta_, MetaDb::open(path_ + "/meta", resources));
  struct stat disabled {};
  if (::stat((path_ + "/" + kDisabledFile).c_str(), &disabled) == 0) state_ = MountpathState::kDisabled;

  // .clean goes away before the first request, so a crash from here on is seen as one.
  const std::string clean_path = path_ + "/" + kCleanFile;
  struct stat st {};
  const bool was_clean = ::stat(clean_path.c_str(), &st) == 0;
  if (was_clean) {
    RETURN_IF_ERROR(remove_file(clean_path));
    RETURN_IF_ERROR(sync_directory(path_));
  }
  ASSIGN_OR_RETURN(const size_t work_files, remove_work_files(*file_system_, work_dir_));
  if (work_files > 0) SILO_LOG_INFO("mountpath {}: removed {} work files", path_, work_files);
  // Cheap (only uploads in flight have part files), and it also catches the part files
  // that an abort or completion failed to remove while the mountpath stayed up.
  RETURN_IF_ERROR(reconcile_parts(*file_system_, parts_dir_, *meta_,
                                  was_clean ? PartCheck::kUploadsOnly : PartCheck::kFull));
  if (was_clean) return Status::ok();
  SILO_LOG_INFO("mountpath {}: not closed cleanly, reconciling files and metadata", path_);
  return reconcile(*file_system_, object_dir_, *meta_, lost_at_open_);
}

std::string Mountpath::object_file_path(BucketId bucket, std::string_view name,
                                        uint64_t generation) const {
  return object_dir_ + "/" + object_file_relative_path(bucket, name, generation);
}

std::string Mountpath::upload_dir(BucketId bucket, std::string_view upload_id) const {
  return fmt::format("{}/{}/{}", parts_dir_, bucket.value(), upload_id);
}

std::string Mountpath::part_file_path(BucketId bucket, std::string_view upload_id,
                                      uint32_t part_number, uint64_t generation) const {
  return fmt::format("{}/{}", upload_dir(bucket, upload_id),
                     part_file_name(part_number, generation));
}

Result<WorkFile> Mountpath::create_work_file() {
  for (;;) {
    WorkFile work;
    work.path = fmt::format("{}/{:016x}", work_dir_, random_u64());
    Result<int> fd = file_system_->create_file(work.path);
    if (fd) {
      work.fd = *fd;
      return work;
    }
    if (fd.error().code() != Code::kAlreadyExists) return std::move(fd).error();
  }
}

Status Mountpath::mark_clean() {
  RETURN_IF_ERROR(meta_->sync());
  // Objects written with kPageCache may still be dirty: .clean must not reach the disk
  // before their bytes do, or a power loss would skip the reconciliation they need.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::from_errno(errno, fmt::format("open {}", path_));
  const int rc = ::syncfs(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::from_errno(err, fmt::format("syncfs {}", path_));
  return write_file_durably(path_, kCleanFile, "");
}


Status Mountpath::set_disabled(bool disabled) {
  if (state() == MountpathState::kFailed) {
    return Status::failed_precondition("mountpath {} has failed; restart the target once its drive works", path_);
  }
  const std::string marker = path_ + "/" + kDisabledFile;
  if (disabled) {
    const int fd = ::open(marker.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return Status::from_errno(errno, "create " + marker);
    const int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return Status::from_errno(errno, "fsync " + marker);
  } else if (::unlink(marker.c_str()) != 0 && errno != ENOENT) {
    return Status::from_errno(errno, "remove " + marker);
  }
  RETURN_IF_ERROR(sync_directory(path_));
  state_ = disabled ? MountpathState::kDisabled : MountpathState::kInService;
  return Status::ok();
}

Status Mountpath::close_detached() {
  if (state() == MountpathState::kFailed) {
    meta_.reset();  // its drive is gone: nothing to sync, and the next start sees it unclean
    return Status::ok();
  }
  const std::string marker = path_ + "/" + kDisabledFile;
  if (::unlink(marker.c_str()) != 0 && errno != ENOENT) return Status::from_errno(errno, "remove " + marker);
  const Status clean = mark_clean();
  meta_.reset();
  return clean;
}

void Mountpath::mark_failed(std::string why) {
  {
    MutexLock lock(failure_mutex_);
    failure_ = std::move(why);
  }
  state_ = MountpathState::kFailed;
  // Nothing is read from it any more: its kept files must not hold the drive busy.
  if (meta_) meta_->open_files().invalidate_prefix("");
}

Status Mountpath::probe() const {
  const std::string id_file = path_ + "/" + kIdFile;
  const int id_fd = ::open(id_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (id_fd < 0) return Status::from_errno(errno, "open " + id_file);
  char byte = 0;
  const ssize_t n = ::read(id_fd, &byte, 1);
  ::close(id_fd);
  if (n != 1) return Status::data_loss("{} is empty or unreadable", id_file);
  const std::string probe_file = work_dir_ + "/.probe";
  const int fd = ::open(probe_file.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::from_errno(errno, "create " + probe_file);
  const ssize_t written = ::write(fd, "x", 1);
  ::close(fd);
  ::unlink(probe_file.c_str());
  if (written != 1) return Status::from_errno(errno, "write " + probe_file);
  return Status::ok();
}

MountpathInfo Mountpath::info() const {
  MountpathInfo info;
  info.path = path_;
  info.id = id_;
  info.state = state();
  {
    MutexLock lock(failure_mutex_);
    info.failure = failure_;
  }
  if (is_readable()) info.objects = meta_->estimate_object_count();
  info.lost_objects = lost_objects_.load();
  struct statvfs vfs {};
  if (::statvfs(path_.c_str(), &vfs) == 0) {
    info.capacity_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
    info.available_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  }
  return info;
}

}  // namespace silo::store::detail
