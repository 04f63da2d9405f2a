#include "store/detail/meta_db.h"

#include <fmt/format.h>
#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>

namespace silo::store::detail {
namespace {

constexpr size_t kBlockCacheBytes = 32u << 20;
// The records of the open files a target keeps (OpenFiles), all mountpaths together.
constexpr size_t kOpenFilesRecordBytes = 16u << 20;
// Two 16 MiB memtables per mountpath would already pass the budget on a many-drive target;
// the shared manager flushes early when all mountpaths together hold this much.
constexpr size_t kAllWriteBuffersBytes = 64u << 20;
constexpr size_t kObjectsWriteBufferBytes = 16u << 20;
constexpr size_t kSmallWriteBufferBytes = 4u << 20;  // uploads, jobs: little traffic
constexpr int kMaxWriteBuffers = 2;
constexpr int kMaxOpenFiles = 512;
constexpr char kObjectsFamily[] = "objects";
constexpr char kUploadsFamily[] = "uploads";
constexpr char kJobsFamily[] = "jobs";
constexpr char kIndexesFamily[] = "indexes";

rocksdb::ColumnFamilyOptions family_options(const MetaDbResources& resources,
                                            size_t write_buffer_bytes) {
  rocksdb::ColumnFamilyOptions options;
  options.write_buffer_size = write_buffer_bytes;
  options.max_write_buffer_number = kMaxWriteBuffers;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = resources.block_cache;
  // Index and filter blocks live in the shared cache, so they count against its bound.
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  // PUT probes the non-owner mountpaths for a stale record of the same object; a bloom
  // filter answers those misses without reading data blocks.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

void put_big_endian(std::string& out, uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

}  // namespace

MetaDbResources MetaDbResources::create(size_t open_files, size_t mountpaths) {
  MetaDbResources resources;
  mountpaths = std::max<size_t>(mountpaths, 1);
  resources.open_files = open_files / mountpaths;
  resources.open_files_bytes = kOpenFilesRecordBytes / mountpaths;
  resources.block_cache = rocksdb::NewLRUCache(kBlockCacheBytes);
  resources.write_buffers = std::make_shared<rocksdb::WriteBufferManager>(kAllWriteBuffersBytes);
  return resources;
}

std::string bucket_key_prefix(BucketId bucket) {
  std::string key;
  put_big_endian(key, bucket.value());
  return key;
}

std::string object_key(BucketId bucket, std::string_view name) {
  std::string key;
  key.reserve(8 + name.size());
  put_big_endian(key, bucket.value());
  key.append(name);
  return key;
}

BucketId bucket_of_key(rocksdb::Slice key) {
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(key[i]);
  return BucketId(value);
}

std::optional<std::string> prefix_successor(std::string_view prefix) {
  std::string next(prefix);
  while (!next.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(next.back());
    if (last != 0xff) {
      ++last;
      return next;
    }
    next.pop_back();
  }
  return std::nullopt;
}

rocksdb::Slice to_slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

namespace {

constexpr char kNameEscape = '\xff';     // follows 0x00 for a 0x00 byte of the name
constexpr char kNameTerminator = '\x01';  // follows 0x00 at the end of the name

void append_escaped(std::string& out, std::string_view name) {
  for (const char c : name) {
    out.push_back(c);
    if (c == '\0') out.push_back(kNameEscape);
  }
}

}  // namespace

bool is_upload_id(std::string_view upload_id) {
  return upload_id.size() == kUploadIdLength &&
         upload_id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string upload_name_prefix(BucketId bucket, std::string_view name_prefix) {
  std::string key = bucket_key_prefix(bucket);
  append_escaped(key, name_prefix);
  return key;
}

std::string upload_name_key(BucketId bucket, std::string_view name) {
  std::string key = upload_name_prefix(bucket, name);
  key.push_back('\0');
  key.push_back(kNameTerminator);
  return key;
}

std::string upload_key(BucketId bucket, std::string_view name, std::string_view upload_id) {
  return upload_name_key(bucket, name).append(upload_id);
}

std::string part_key(BucketId bucket, std::string_view name, std::string_view upload_id,
                     uint32_t part_number) {
  std::string key = upload_key(bucket, name, upload_id);
  for (int shift = 24; shift >= 0; shift -= 8) {
    key.push_back(static_cast<char>((part_number >> shift) & 0xff));
  }
  return key;
}

std::optional<UploadKey> parse_upload_key(rocksdb::Slice key) {
  if (key.size() < 8) return std::nullopt;
  UploadKey out;
  out.bucket = bucket_of_key(key);
  size_t i = 8;
  for (;;) {
    if (i >= key.size()) return std::nullopt;
    const char c = key[i];
    if (c != '\0') {
      out.name.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= key.size()) return std::nullopt;
    if (key[i + 1] == kNameEscape) {
      out.name.push_back('\0');
      i += 2;
      continue;
    }
    if (key[i + 1] != kNameTerminator) return std::nullopt;
    i += 2;
    break;
  }
  const std::string_view rest(key.data() + i, key.size() - i);
  if (rest.size() != kUploadIdLength && rest.size() != kUploadIdLength + 4) return std::nullopt;
  out.upload_id = std::string(rest.substr(0, kUploadIdLength));
  if (!is_upload_id(out.upload_id)) return std::nullopt;
  if (rest.size() > kUploadIdLength) {
    uint32_t number = 0;
    for (size_t k = kUploadIdLength; k < rest.size(); ++k) {
      number = (number << 8) | static_cast<unsigned char>(rest[k]);
    }
    out.part_number = number;
  }
  return out;
}

Status from_rocksdb(const rocksdb::Status& status, std::string_view context) {
  if (status.ok()) return Status::ok();
  Code code = Code::kInternal;
  if (status.IsCorruption()) {
    code = Code::kDataLoss;
  } else if (status.IsNoSpace()) {
    code = Code::kResourceExhausted;
  } else if (status.IsIOError() || status.IsBusy() || status.IsTryAgain()) {
    code = Code::kUnavailable;
  }
  return Status(code, fmt::format("{}: {}", context, status.ToString()));
}

Result<std::unique_ptr<MetaDb>> MetaDb::open(const std::string& dir,
                                             const MetaDbResources& resources) {
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  options.max_open_files = kMaxOpenFiles;
  options.write_buffer_manager = resources.write_buffers;
  options.keep_log_file_num = 4;
  options.max_log_file_size = 4u << 20;

  // RocksDB refuses to open a DB without naming every family it has: a newer Silo may have
  // added some, so open whatever is there besides ours.
  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName, kObjectsFamily,
                                    kUploadsFamily, kJobsFamily, kIndexesFamily};
  std::vector<std::string> existing;
  if (rocksdb::DB::ListColumnFamilies(options, dir, &existing).ok()) {
    for (const std::string& name : existing) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : names) {
    const size_t buffer =
        name == kObjectsFamily ? kObjectsWriteBufferBytes : kSmallWriteBufferBytes;
    families.emplace_back(name, family_options(resources, buffer));
  }

  std::unique_ptr<MetaDb> meta(new MetaDb());
  meta->open_files_ = std::make_unique<OpenFiles>(resources.open_files, resources.open_files_bytes);
  rocksdb::DB* db = nullptr;
  const rocksdb::Status rs = rocksdb::DB::Open(options, dir, families, &meta->handles_, &db);
  if (!rs.ok()) return from_rocksdb(rs, fmt::format("open metadata DB {}", dir));
  meta->db_.reset(db);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == kObjectsFamily) meta->objects_ = meta->handles_[i];
    if (names[i] == kUploadsFamily) meta->uploads_ = meta->handles_[i];
    if (names[i] == kIndexesFamily) meta->indexes_ = meta->handles_[i];
  }
  return meta;
}

MetaDb::~MetaDb() {
  if (!db_) return;
  for (rocksdb::ColumnFamilyHandle* handle : handles_) {
    std::ignore = db_->DestroyColumnFamilyHandle(handle);  // only fails for a null handle
  }
  std::ignore = db_->Close();  // nothing to do about a failure at this point; WAL is synced
}

Result<wire::ObjectRecord> MetaDb::get(BucketId bucket, std::string_view name) const {
  return *get_with(rocksdb::ReadOptions(), bucket, name);
}

std::optional<Result<wire::ObjectRecord>> MetaDb::get_cached(BucketId bucket, std::string_view name) const {
  rocksdb::ReadOptions options;
  options.read_tier = rocksdb::kBlockCacheTier;
  return get_with(options, bucket, name);
}

std::optional<Result<wire::ObjectRecord>> MetaDb::get_with(const rocksdb::ReadOptions& options, BucketId bucket,
                                                           std::string_view name) const {
  const std::string key = object_key(bucket, name);
  rocksdb::PinnableSlice value;
  const rocksdb::Status rs = db_->Get(options, objects_, key, &value);
  if (rs.IsIncomplete()) return std::nullopt;  // kBlockCacheTier: the answer is on disk
  if (rs.IsNotFound()) return Status::not_found("no metadata for {}/{}", bucket, name);
  if (!rs.ok()) return from_rocksdb(rs, fmt::format("read metadata of {}/{}", bucket, name));
  Result<wire::ObjectRecord> record = wire::decode<wire::ObjectRecord>(
      std::string_view(value.data(), value.size()), wire::Source::kDisk);
  if (!record) {
    Status status = record.error();
    return status.annotate("metadata of {}/{}", bucket, name);
  }
  if (record->name() != name) {
    return Status::data_loss("metadata stored under {}/{} names object {}", bucket, name,
                             record->name());
  }
  return record;
}

Status MetaDb::put(BucketId bucket, const wire::ObjectRecord& record, Durability durability,
                   const FinishedUpload* finished, IndexUpdate index) {
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  const std::string key = object_key(bucket, record.name());
  const std::string value = wire::encode(record);
  // One batch: a crash leaves the upload or the object, never both or neither, and an
  // index never outlives or misses the version it describes.
  rocksdb::WriteBatch batch;
  RETURN_IF_ERROR(from_rocksdb(batch.Put(objects_, key, value), "batch put"));
  if (index.op == IndexUpdate::kDrop) {
    RETURN_IF_ERROR(from_rocksdb(batch.Delete(indexes_, key), "batch delete"));
  } else if (index.op == IndexUpdate::kSet) {
    RETURN_IF_ERROR(from_rocksdb(batch.Put(indexes_, key, rocksdb::Slice(index.bytes.data(), index.bytes.size())),
                                 "batch put"));
  }
  if (finished != nullptr) {
    RETURN_IF_ERROR(from_rocksdb(batch.Delete(uploads_, finished->key), "batch delete"));
    for (const std::string& part : finished->part_keys) {
      RETURN_IF_ERROR(from_rocksdb(batch.Delete(uploads_, part), "batch delete"));
    }
  }
  return write_objects(options, batch, [&] { open_files_->invalidate(key); },
                       fmt::format("write metadata of {}/{}", bucket, record.name()));
}

Status MetaDb::write_objects(const rocksdb::WriteOptions& options, rocksdb::WriteBatch& batch,
                             const std::function<void()>& drop_kept, std::string_view context) {
  // Dropped before the write (no hit returns a record once it may be replaced) and after
  // (a reader that read the old one meanwhile drops its fill).
  drop_kept();
  const Status written = from_rocksdb(db_->Write(options, &batch), context);
  drop_kept();
  return written;
}

Result<std::string> MetaDb::get_index(BucketId bucket, std::string_view name) const {
  std::string value;
  const rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), indexes_, object_key(bucket, name), &value);
  if (rs.IsNotFound()) return Status::not_found("no archive index for {}/{}", bucket, name);
  if (!rs.ok()) return from_rocksdb(rs, fmt::format("read the archive index of {}/{}", bucket, name));
  return value;
}

Status MetaDb::put_index(BucketId bucket, std::string_view name, std::string_view bytes) {
  return from_rocksdb(db_->Put(rocksdb::WriteOptions(), indexes_, object_key(bucket, name),
                               rocksdb::Slice(bytes.data(), bytes.size())),
                      fmt::format("write the archive index of {}/{}", bucket, name));
}

Status MetaDb::remove(BucketId bucket, std::string_view name, Durability durability) {
  return remove_keys({object_key(bucket, name)}, durability);
}

Status MetaDb::remove_keys(const std::vector<std::string>& keys, Durability durability) {
  if (keys.empty()) return Status::ok();
  rocksdb::WriteBatch batch;
  for (const std::string& key : keys) {
    RETURN_IF_ERROR(from_rocksdb(batch.Delete(objects_, key), "batch delete"));
    RETURN_IF_ERROR(from_rocksdb(batch.Delete(indexes_, key), "batch delete"));
  }
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  return write_objects(
      options, batch, [&] { for (const std::string& key : keys) open_files_->invalidate(key); },
      "delete metadata records");
}

Status MetaDb::remove_bucket(BucketId bucket) {
  const std::string begin = bucket_key_prefix(bucket);
  const std::optional<std::string> end = prefix_successor(begin);
  rocksdb::WriteBatch batch;
  for (rocksdb::ColumnFamilyHandle* family : {objects_, uploads_, indexes_}) {
    if (end) {
      RETURN_IF_ERROR(from_rocksdb(batch.DeleteRange(family, begin, *end), "batch delete range"));
      continue;
    }
    // The last possible bucket id has no exclusive end key: delete its records one by one.
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), family));
    for (it->Seek(begin); it->Valid() && it->key().starts_with(begin); it->Next()) {
      RETURN_IF_ERROR(from_rocksdb(batch.Delete(family, it->key()), "batch delete"));
    }
    RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate metadata"));
  }
  rocksdb::WriteOptions options;
  options.sync = true;
  return write_objects(options, batch, [&] { open_files_->invalidate_prefix(begin); },
                       fmt::format("delete metadata of bucket {}", bucket));
}

uint64_t MetaDb::estimate_object_count() const {
  uint64_t count = 0;
  if (!db_->GetIntProperty(objects_, "rocksdb.estimate-num-keys", &count)) return 0;
  return count;
}

Status MetaDb::append_bucket_ids(std::vector<BucketId>& out) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), objects_));
  it->SeekToFirst();
  while (it->Valid()) {
    const rocksdb::Slice key = it->key();
    if (key.size() < 8) {  // not written by us; skip rather than fail the whole scan
      it->Next();
      continue;
    }
    const std::string prefix(key.data(), 8);
    out.push_back(bucket_of_key(key));
    const std::optional<std::string> next = prefix_successor(prefix);
    if (!next) break;
    it->Seek(*next);  // jump over the rest of this bucket's records
  }
  return from_rocksdb(it->status(), "iterate metadata");
}

std::unique_ptr<rocksdb::Iterator> MetaDb::new_object_iterator(
    const rocksdb::ReadOptions& options) const {
  return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(options, objects_));
}

Result<wire::UploadRecord> MetaDb::get_upload(BucketId bucket, std::string_view name,
                                              std::string_view upload_id) const {
  const std::string key = upload_key(bucket, name, upload_id);
  rocksdb::PinnableSlice value;
  const rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), uploads_, key, &value);
  if (rs.IsNotFound()) {
    return Status::not_found("upload {} of {}/{} does not exist", upload_id, bucket, name)
        .with_reason("NoSuchUpload");
  }
  if (!rs.ok()) return from_rocksdb(rs, fmt::format("read upload {} of {}/{}", upload_id, bucket, name));
  Result<wire::UploadRecord> record = wire::decode<wire::UploadRecord>(
      std::string_view(value.data(), value.size()), wire::Source::kDisk);
  if (!record) {
    Status status = record.error();
    return status.annotate("upload {} of {}/{}", upload_id, bucket, name);
  }
  if (record->name() != name || record->upload_id() != upload_id) {
    return Status::data_loss("upload record stored under {}/{} {} names {} {}", bucket, name,
                             upload_id, record->name(), record->upload_id());
  }
  return record;
}

Status MetaDb::put_upload(BucketId bucket, const wire::UploadRecord& record,
                          Durability durability) {
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  return from_rocksdb(
      db_->Put(options, uploads_, upload_key(bucket, record.name(), record.upload_id()),
               wire::encode(record)),
      fmt::format("write upload {} of {}/{}", record.upload_id(), bucket, record.name()));
}

Status MetaDb::get_parts(BucketId bucket, std::string_view name, std::string_view upload_id,
                         std::vector<wire::UploadPartRecord>* parts,
                         std::vector<std::string>* keys) const {
  const std::string begin = upload_key(bucket, name, upload_id);
  const std::string end = begin + '\xff';  // part numbers' first byte is never 0xff
  const rocksdb::Slice end_slice = to_slice(end);
  rocksdb::ReadOptions options;
  options.iterate_upper_bound = &end_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, uploads_));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    if (it->key().size() == begin.size()) continue;  // the upload record itself
    if (keys != nullptr) keys->push_back(it->key().ToString());
    if (parts == nullptr) continue;
    Result<wire::UploadPartRecord> part = wire::decode<wire::UploadPartRecord>(
        std::string_view(it->value().data(), it->value().size()), wire::Source::kDisk);
    if (!part) {
      Status status = part.error();
      return status.annotate("part of upload {} of {}/{}", upload_id, bucket, name);
    }
    parts->push_back(std::move(*part));
  }
  return from_rocksdb(it->status(), "iterate parts");
}

Result<wire::UploadPartRecord> MetaDb::get_part(BucketId bucket, std::string_view name,
                                                std::string_view upload_id,
                                                uint32_t part_number) const {
  rocksdb::PinnableSlice value;
  const rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), uploads_,
                                      part_key(bucket, name, upload_id, part_number), &value);
  if (rs.IsNotFound()) return Status::not_found("part {} of upload {} does not exist", part_number, upload_id);
  if (!rs.ok()) return from_rocksdb(rs, fmt::format("read part {} of upload {}", part_number, upload_id));
  return wire::decode<wire::UploadPartRecord>(std::string_view(value.data(), value.size()),
                                              wire::Source::kDisk);
}

Status MetaDb::put_part(BucketId bucket, std::string_view name, std::string_view upload_id,
                        const wire::UploadPartRecord& part, Durability durability) {
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  return from_rocksdb(db_->Put(options, uploads_,
                               part_key(bucket, name, upload_id, part.part_number()),
                               wire::encode(part)),
                      fmt::format("write part {} of upload {}", part.part_number(), upload_id));
}

Status MetaDb::remove_upload(BucketId bucket, std::string_view name, std::string_view upload_id,
                             Durability durability) {
  std::vector<std::string> keys = {upload_key(bucket, name, upload_id)};
  RETURN_IF_ERROR(get_parts(bucket, name, upload_id, nullptr, &keys));
  return remove_upload_keys(keys, durability);
}

Status MetaDb::remove_upload_keys(const std::vector<std::string>& keys, Durability durability) {
  if (keys.empty()) return Status::ok();
  rocksdb::WriteBatch batch;
  for (const std::string& key : keys) {
    RETURN_IF_ERROR(from_rocksdb(batch.Delete(uploads_, key), "batch delete"));
  }
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  return from_rocksdb(db_->Write(options, &batch), "delete upload records");
}

std::unique_ptr<rocksdb::Iterator> MetaDb::new_upload_iterator(
    const rocksdb::ReadOptions& options) const {
  return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(options, uploads_));
}

Status MetaDb::sync() { return from_rocksdb(db_->FlushWAL(/*sync=*/true), "sync metadata WAL"); }

}  // namespace silo::store::detail
