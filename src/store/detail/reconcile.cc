#include "store/detail/reconcile.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "base/hash.h"
#include "base/log.h"
#include "store/detail/object_file.h"

namespace silo::store::detail {
namespace {

// Hashes of relative paths below obj/ rather than the paths themselves: millions of
// objects fit in a few tens of MB. A collision only spares one orphan file.
struct KeptFiles {
  std::unordered_set<uint64_t> paths;  // files that records name
  std::unordered_set<uint64_t> stems;  // objects whose record is corrupt: keep every generation
};

struct Counts {
  size_t records = 0;
  size_t lost_records = 0;
  size_t corrupt_records = 0;
  size_t orphan_files = 0;
};

Status check_records(const std::string& object_dir, MetaDb& meta, KeptFiles& kept, Counts& counts,
                     std::vector<LostRecord>& lost) {
  wire::ObjectRecord record;
  rocksdb::ReadOptions options;
  options.fill_cache = false;  // one pass over everything: do not evict the hot blocks
  std::unique_ptr<rocksdb::Iterator> it = meta.new_object_iterator(options);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ++counts.records;
    const rocksdb::Slice key = it->key();
    if (key.size() < 8) continue;
    const BucketId bucket = bucket_of_key(key);
    const std::string_view name(key.data() + 8, key.size() - 8);
    Result<wire::ObjectRecord> decoded = wire::decode<wire::ObjectRecord>(
        std::string_view(it->value().data(), it->value().size()), wire::Source::kDisk);
    if (!decoded || decoded->name() != name) {
      ++counts.corrupt_records;
      SILO_LOG_ERROR("metadata of {}/{} does not decode; keeping its files", bucket, name);
      kept.stems.insert(hash::xxh64(object_file_relative_stem(bucket, name)));
      continue;
    }
    const std::string relative = object_file_relative_path(bucket, name, decoded->generation());
    const std::string path = object_dir + "/" + relative;
    struct stat st {};
    // Records go in only after their file was synced and renamed, and go out before it is
    // unlinked: a file that is missing or has another size lost bytes that were
    // acknowledged. The record stays (the object is listed and reads answer DataLoss),
    // and so does the torn file; the store drops the record if another mountpath has one.
    if (::stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return Status::from_errno(errno, fmt::format("stat {}", path));
      lost.push_back({bucket, std::string(name), fmt::format("file {} is missing", path)});
      continue;
    }
    kept.paths.insert(hash::xxh64(relative));
    if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != decoded->size()) {
      lost.push_back({bucket, std::string(name),
                      fmt::format("file {} has {} bytes, its record says {}", path, st.st_size, decoded->size())});
    }
  }
  RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate metadata"));
  counts.lost_records = lost.size();
  return Status::ok();
}

bool is_kept(const KeptFiles& kept, std::string_view relative) {
  if (kept.paths.contains(hash::xxh64(relative))) return true;
  if (kept.stems.empty()) return false;
  const size_t dot = relative.rfind('.');
  return dot != std::string_view::npos && kept.stems.contains(hash::xxh64(relative.substr(0, dot)));
}

Status remove_orphans(FileSystem& file_system, const std::string& object_dir, const KeptFiles& kept,
                      Counts& counts) {
  // Collect first and unlink after the walk: readdir need not be stable under removal.
  std::vector<std::filesystem::path> orphans;
  const std::filesystem::path root(object_dir);
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    const std::string relative = it->path().lexically_relative(root).string();
    if (!is_kept(kept, relative)) orphans.push_back(it->path());
  }
  if (ec) return Status::from_errno(ec.value(), fmt::format("walk {}", object_dir));
  for (const std::filesystem::path& path : orphans) {
    SILO_LOG_WARN("removing orphan object file {}", path.string());
    RETURN_IF_ERROR(file_system.remove_file(path.string()));
  }
  counts.orphan_files = orphans.size();
  return Status::ok();
}

struct KeptParts {
  std::unordered_set<std::string> uploads;  // "<bucket id>/<upload id>"
  std::unordered_set<std::string> files;    // "<bucket id>/<upload id>/<file name>"
  std::unordered_set<std::string> numbers;  // "<bucket id>/<upload id>/<part:05>": undecodable
};

Status check_part_records(const std::string& parts_dir, MetaDb& meta, PartCheck check,
                          KeptParts& kept, size_t& dangling_count) {
  std::vector<std::string> dangling;
  rocksdb::ReadOptions options;
  options.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it = meta.new_upload_iterator(options);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::optional<UploadKey> key = parse_upload_key(it->key());
    if (!key) {
      SILO_LOG_ERROR("uploads metadata holds a key this build does not know; skipping it");
      continue;
    }
    const std::string upload = fmt::format("{}/{}", key->bucket.value(), key->upload_id);
    if (!key->part_number) {
      kept.uploads.insert(upload);
      continue;
    }
    if (check != PartCheck::kFull) continue;
    if (!kept.uploads.contains(upload)) {  // the upload's key sorts before its parts'
      SILO_LOG_WARN("part {} of upload {} has no upload record; removing it", *key->part_number,
                    key->upload_id);
      dangling.push_back(it->key().ToString());
      continue;
    }
    Result<wire::UploadPartRecord> part = wire::decode<wire::UploadPartRecord>(
        std::string_view(it->value().data(), it->value().size()), wire::Source::kDisk);
    if (!part || part->part_number() != *key->part_number) {
      SILO_LOG_ERROR("part {} of upload {} does not decode; keeping its files", *key->part_number,
                     key->upload_id);
      kept.numbers.insert(fmt::format("{}/{:05}", upload, *key->part_number));
      continue;
    }
    const std::string relative =
        fmt::format("{}/{}", upload, part_file_name(part->part_number(), part->generation()));
    const std::string path = parts_dir + "/" + relative;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return Status::from_errno(errno, fmt::format("stat {}", path));
      SILO_LOG_WARN("part file {} is missing; removing its record", path);
      dangling.push_back(it->key().ToString());
      continue;
    }
    if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != part->size()) {
      SILO_LOG_WARN("part file {} has {} bytes, its record says {}; removing it", path,
                    st.st_size, part->size());
      dangling.push_back(it->key().ToString());
      continue;
    }
    kept.files.insert(relative);
  }
  RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate uploads"));
  dangling_count = dangling.size();
  return meta.remove_upload_keys(dangling, Durability::kFsync);
}

bool is_kept_part(const KeptParts& kept, const std::string& upload, const std::string& file) {
  if (kept.files.contains(upload + "/" + file)) return true;
  const size_t dot = file.find('.');
  return dot != std::string::npos && kept.numbers.contains(upload + "/" + file.substr(0, dot));
}

std::vector<std::filesystem::path> list_dir(const std::filesystem::path& dir, std::error_code& ec) {
  std::vector<std::filesystem::path> out;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  return out;
}

}  // namespace

Status reconcile_parts(FileSystem& file_system, const std::string& parts_dir, MetaDb& meta,
                       PartCheck check) {
  KeptParts kept;
  size_t dangling = 0;
  RETURN_IF_ERROR(check_part_records(parts_dir, meta, check, kept, dangling));
  size_t removed_uploads = 0;
  size_t removed_files = 0;
  std::error_code ec;
  // Collect before removing: readdir need not be stable under removal.
  const std::vector<std::filesystem::path> buckets = list_dir(parts_dir, ec);
  if (ec) return Status::from_errno(ec.value(), fmt::format("list {}", parts_dir));
  for (const std::filesystem::path& bucket_dir : buckets) {
    if (std::filesystem::is_directory(bucket_dir, ec)) {
      const std::vector<std::filesystem::path> uploads = list_dir(bucket_dir, ec);
      if (ec) return Status::from_errno(ec.value(), fmt::format("list {}", bucket_dir.string()));
      for (const std::filesystem::path& upload_dir : uploads) {
        const std::string upload =
            bucket_dir.filename().string() + "/" + upload_dir.filename().string();
        if (kept.uploads.contains(upload) && std::filesystem::is_directory(upload_dir, ec)) {
          if (check != PartCheck::kFull) continue;
          const std::vector<std::filesystem::path> files = list_dir(upload_dir, ec);
          if (ec) return Status::from_errno(ec.value(), fmt::format("list {}", upload_dir.string()));
          for (const std::filesystem::path& file : files) {
            if (is_kept_part(kept, upload, file.filename().string())) continue;
            SILO_LOG_WARN("removing orphan part file {}", file.string());
            RETURN_IF_ERROR(file_system.remove_tree(file.string()));
            ++removed_files;
          }
          continue;
        }
        RETURN_IF_ERROR(file_system.remove_tree(upload_dir.string()));
        ++removed_uploads;
      }
      // An emptied bucket directory goes too; one that still holds uploads stays (ENOTEMPTY).
      std::filesystem::remove(bucket_dir, ec);
      ec.clear();
      continue;
    }
    RETURN_IF_ERROR(file_system.remove_tree(bucket_dir.string()));
  }
  if (dangling + removed_uploads + removed_files > 0) {
    SILO_LOG_INFO(
        "reconciled {}: {} uploads, {} dangling part records removed, {} upload directories "
        "and {} part files removed",
        parts_dir, kept.uploads.size(), dangling, removed_uploads, removed_files);
  }
  return Status::ok();
}

Status reconcile(FileSystem& file_system, const std::string& object_dir, MetaDb& meta,
                 std::vector<LostRecord>& lost) {
  KeptFiles kept;
  Counts counts;
  RETURN_IF_ERROR(check_records(object_dir, meta, kept, counts, lost));
  RETURN_IF_ERROR(remove_orphans(file_system, object_dir, kept, counts));
  SILO_LOG_INFO(
      "reconciled {}: {} records, {} with a missing or torn file, {} corrupt records kept, {} "
      "orphan files removed",
      object_dir, counts.records, counts.lost_records, counts.corrupt_records, counts.orphan_files);
  return Status::ok();
}

}  // namespace silo::store::detail
