#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_id.h"
#include "store/store.h"
#include "wire/codec.h"

namespace silo::store::detail {

// Memory shared by the metadata DBs of all mountpaths of one target, so that the total
// stays bounded however many drives there are (the target must stay under 150 MB RSS).
struct MetaDbResources {
  std::shared_ptr<rocksdb::Cache> block_cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;
  static MetaDbResources create();
};

// Key in the `objects` column family: 8-byte big-endian bucket id + object name bytes, so
// a bucket's objects are contiguous and sorted by name (bytewise, as S3 lists them).
std::string bucket_key_prefix(BucketId bucket);
std::string object_key(BucketId bucket, std::string_view name);
// The bucket of a key; requires key.size() >= 8.
BucketId bucket_of_key(rocksdb::Slice key);
// The smallest key greater than every key that starts with `prefix`; nullopt when there is
// none (the prefix is empty or all 0xff bytes).
std::optional<std::string> prefix_successor(std::string_view prefix);
rocksdb::Slice to_slice(std::string_view s);

// The metadata of one mountpath: one RocksDB in <mountpath>/meta with the column families
// `objects` (ObjectRecord per object), `uploads` and `jobs` (reserved). Thread-safe
// (RocksDB is); blocking, so called only on the mountpath's DiskExecutor or at startup.
// Owned by its Mountpath.
class MetaDb {
 public:
  static Result<std::unique_ptr<MetaDb>> open(const std::string& dir,
                                              const MetaDbResources& resources);
  ~MetaDb();
  MetaDb(const MetaDb&) = delete;
  MetaDb& operator=(const MetaDb&) = delete;

  // kNotFound when absent; kDataLoss when the stored bytes do not decode or name another
  // object.
  Result<wire::ObjectRecord> get(BucketId bucket, std::string_view name) const;
  // Stores `record` under (bucket, record.name()); kFsync syncs the WAL before returning.
  Status put(BucketId bucket, const wire::ObjectRecord& record, Durability durability);
  // Removing an absent record is ok.
  Status remove(BucketId bucket, std::string_view name, Durability durability);
  // Removes these raw keys of the `objects` family in one batch.
  Status remove_keys(const std::vector<std::string>& keys, Durability durability);
  // Every record of `bucket` (a range tombstone, so it costs the same for any count).
  Status remove_bucket(BucketId bucket);
  // Appends the ids of buckets with at least one record, ascending.
  Status append_bucket_ids(std::vector<BucketId>& out) const;
  // An iterator over the `objects` family (listing, reconciliation).
  std::unique_ptr<rocksdb::Iterator> new_object_iterator(const rocksdb::ReadOptions& options) const;
  // Makes every write so far durable (also those written with kPageCache).
  Status sync();

 private:
  MetaDb() = default;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // destroyed before db_
  rocksdb::ColumnFamilyHandle* objects_ = nullptr;
};

// Maps a RocksDB error to our codes: kDataLoss (corruption), kResourceExhausted (no
// space), kUnavailable (I/O), kInternal otherwise.
Status from_rocksdb(const rocksdb::Status& status, std::string_view context);

}  // namespace silo::store::detail
