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

MetaDbResources MetaDbResources::create() {
  MetaDbResources resources;
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
                                    kUploadsFamily, kJobsFamily};
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
  rocksdb::DB* db = nullptr;
  const rocksdb::Status rs = rocksdb::DB::Open(options, dir, families, &meta->handles_, &db);
  if (!rs.ok()) return from_rocksdb(rs, fmt::format("open metadata DB {}", dir));
  meta->db_.reset(db);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == kObjectsFamily) meta->objects_ = meta->handles_[i];
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
  const std::string key = object_key(bucket, name);
  rocksdb::PinnableSlice value;
  const rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), objects_, key, &value);
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

Status MetaDb::put(BucketId bucket, const wire::ObjectRecord& record, Durability durability) {
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  const std::string key = object_key(bucket, record.name());
  const std::string value = wire::encode(record);
  return from_rocksdb(db_->Put(options, objects_, key, value),
                      fmt::format("write metadata of {}/{}", bucket, record.name()));
}

Status MetaDb::remove(BucketId bucket, std::string_view name, Durability durability) {
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  return from_rocksdb(db_->Delete(options, objects_, object_key(bucket, name)),
                      fmt::format("delete metadata of {}/{}", bucket, name));
}

Status MetaDb::remove_keys(const std::vector<std::string>& keys, Durability durability) {
  if (keys.empty()) return Status::ok();
  rocksdb::WriteBatch batch;
  for (const std::string& key : keys) {
    RETURN_IF_ERROR(from_rocksdb(batch.Delete(objects_, key), "batch delete"));
  }
  rocksdb::WriteOptions options;
  options.sync = durability == Durability::kFsync;
  return from_rocksdb(db_->Write(options, &batch), "delete metadata records");
}

Status MetaDb::remove_bucket(BucketId bucket) {
  rocksdb::WriteOptions options;
  options.sync = true;
  const std::string begin = bucket_key_prefix(bucket);
  const std::optional<std::string> end = prefix_successor(begin);
  if (end) {
    return from_rocksdb(db_->DeleteRange(options, objects_, begin, *end),
                        fmt::format("delete metadata of bucket {}", bucket));
  }
  // The last possible bucket id has no exclusive end key: delete its records one by one.
  std::vector<std::string> keys;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), objects_));
  for (it->Seek(begin); it->Valid() && it->key().starts_with(begin); it->Next()) {
    keys.push_back(it->key().ToString());
  }
  RETURN_IF_ERROR(from_rocksdb(it->status(), "iterate metadata"));
  return remove_keys(keys, Durability::kFsync);
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

Status MetaDb::sync() { return from_rocksdb(db_->FlushWAL(/*sync=*/true), "sync metadata WAL"); }

}  // namespace silo::store::detail
