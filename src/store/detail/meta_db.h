#pragma once

#include <rocksdb/db.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_id.h"
#include "store/detail/open_files.h"
#include "store/store.h"
#include "wire/codec.h"

namespace silo::store::detail {

// Memory shared by the metadata DBs of all mountpaths of one target, so that the total
// stays bounded however many drives there are (the target must stay under 150 MB RSS).
struct MetaDbResources {
  std::shared_ptr<rocksdb::Cache> block_cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;
  // Each MetaDb's OpenFiles: at most this many open files, about this many bytes of
  // records.
  size_t open_files = 0;
  size_t open_files_bytes = 0;
  // `open_files` files kept open in all (StoreOptions::open_files), shared by `mountpaths`.
  static MetaDbResources create(size_t open_files, size_t mountpaths);
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

// Keys in the `uploads` column family (docs/on-disk-format.md "uploads"):
//   upload: 8-byte big-endian bucket id + escaped name + 0x00 0x01 + upload id (32 hex)
//   part:   the upload's key + 4-byte big-endian part number
// The name is escaped (0x00 -> 0x00 0xff) and terminated by 0x00 0x01 so keys sort by
// (name, upload id) as S3 lists uploads, and the parts of an upload sort right after it,
// below upload key + 0xff.
inline constexpr size_t kUploadIdLength = 32;
bool is_upload_id(std::string_view upload_id);
// Bucket id + escaped `name_prefix`, unterminated: every upload of a name that starts
// with name_prefix has a key that starts with this.
std::string upload_name_prefix(BucketId bucket, std::string_view name_prefix);
// Bucket id + escaped name + terminator: the prefix of every upload key of `name`.
std::string upload_name_key(BucketId bucket, std::string_view name);
std::string upload_key(BucketId bucket, std::string_view name, std::string_view upload_id);
std::string part_key(BucketId bucket, std::string_view name, std::string_view upload_id,
                     uint32_t part_number);
struct UploadKey {
  BucketId bucket{0};
  std::string name;
  std::string upload_id;
  std::optional<uint32_t> part_number;  // set for a part key
};
// nullopt when `key` is not an uploads key written by us.
std::optional<UploadKey> parse_upload_key(rocksdb::Slice key);

// The upload whose record a completion replaces by the object record.
struct FinishedUpload {
  std::string key;                     // upload_key()
  std::vector<std::string> part_keys;  // every part of it (the upload is claimed)
};

// What becomes of an object's archive index (`indexes`) when its record is written: a
// new version sets its own or drops the old one's; a record update (tags) of the same
// version keeps it. (An index also names its generation: one left behind is never used.)
struct IndexUpdate {
  enum Op { kKeep, kSet, kDrop };
  Op op = kKeep;
  std::string_view bytes;  // kSet
};

// The metadata of one mountpath: one RocksDB in <mountpath>/meta with the column families
// `objects` (ObjectRecord per object), `uploads` (UploadRecord per multipart upload in
// flight, UploadPartRecord per uploaded part), `indexes` (an archive object's
// ArchiveIndex, same key as its record, docs/shards.md) and `jobs` (reserved). Thread-safe
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
  // The same answer from memory only (memtable and block cache, RocksDB's
  // kBlockCacheTier): nullopt when it would need to read the disk. Never blocks on I/O,
  // so a network thread may call it.
  std::optional<Result<wire::ObjectRecord>> get_cached(BucketId bucket, std::string_view name) const;
  // Stores `record` under (bucket, record.name()); kFsync syncs the WAL before returning.
  // With `finished`, the same atomic batch deletes that upload's record and part records.
  // The same batch writes or removes the object's archive index as `index` says.
  Status put(BucketId bucket, const wire::ObjectRecord& record, Durability durability,
             const FinishedUpload* finished = nullptr, IndexUpdate index = {});
  // An archive index (encoded wire::ArchiveIndex); kNotFound when there is none.
  Result<std::string> get_index(BucketId bucket, std::string_view name) const;
  // Stores an index built after the record (a first member read). Requires: the object
  // lock is held and the record is the version the index describes.
  Status put_index(BucketId bucket, std::string_view name, std::string_view bytes);
  // Removing an absent record is ok. Its archive index goes too, in the same batch.
  Status remove(BucketId bucket, std::string_view name, Durability durability);
  // Removes these raw keys of the `objects` family (and their indexes) in one batch.
  Status remove_keys(const std::vector<std::string>& keys, Durability durability);
  // Every object, index, upload and part record of `bucket` (range tombstones, so it
  // costs the same for any count).
  Status remove_bucket(BucketId bucket);
  // Appends the ids of buckets with at least one record, ascending.
  Status append_bucket_ids(std::vector<BucketId>& out) const;
  // RocksDB's estimate of the object records here (rebalance progress).
  uint64_t estimate_object_count() const;
  // An iterator over the `objects` family (listing, reconciliation).
  std::unique_ptr<rocksdb::Iterator> new_object_iterator(const rocksdb::ReadOptions& options) const;
  // Uploads. get_upload: kNotFound when absent, kDataLoss when it does not decode or
  // names another upload.
  Result<wire::UploadRecord> get_upload(BucketId bucket, std::string_view name,
                                        std::string_view upload_id) const;
  Status put_upload(BucketId bucket, const wire::UploadRecord& record, Durability durability);
  // Every part record of the upload, ascending, with the raw keys (for FinishedUpload).
  // A part record that does not decode is kDataLoss.
  Status get_parts(BucketId bucket, std::string_view name, std::string_view upload_id,
                   std::vector<wire::UploadPartRecord>* parts,
                   std::vector<std::string>* keys) const;
  // kNotFound when absent.
  Result<wire::UploadPartRecord> get_part(BucketId bucket, std::string_view name,
                                          std::string_view upload_id, uint32_t part_number) const;
  Status put_part(BucketId bucket, std::string_view name, std::string_view upload_id,
                  const wire::UploadPartRecord& part, Durability durability);
  // The upload record and every part record, in one batch. Absent is ok.
  Status remove_upload(BucketId bucket, std::string_view name, std::string_view upload_id,
                       Durability durability);
  // Removes these raw keys of the `uploads` family in one batch.
  Status remove_upload_keys(const std::vector<std::string>& keys, Durability durability);
  std::unique_ptr<rocksdb::Iterator> new_upload_iterator(const rocksdb::ReadOptions& options) const;

  // Makes every write so far durable (also those written with kPageCache).
  Status sync();

  // The open files of hot objects, under their object_key(). Every write of a record
  // above drops its entry (OpenFiles' invariant).
  OpenFiles& open_files() { return *open_files_; }

 private:
  MetaDb() = default;
  std::optional<Result<wire::ObjectRecord>> get_with(const rocksdb::ReadOptions& options, BucketId bucket,
                                                     std::string_view name) const;
  // Writes `batch`, a change of object records, with `drop_kept` dropping their kept open
  // files before and after the write (OpenFiles' invariant). `context` names a failure.
  Status write_objects(const rocksdb::WriteOptions& options, rocksdb::WriteBatch& batch,
                       const std::function<void()>& drop_kept, std::string_view context);
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // destroyed before db_
  rocksdb::ColumnFamilyHandle* objects_ = nullptr;
  rocksdb::ColumnFamilyHandle* uploads_ = nullptr;
  rocksdb::ColumnFamilyHandle* indexes_ = nullptr;
  std::unique_ptr<OpenFiles> open_files_;
};

// Maps a RocksDB error to our codes: kDataLoss (corruption), kResourceExhausted (no
// space), kUnavailable (I/O), kInternal otherwise.
Status from_rocksdb(const rocksdb::Status& status, std::string_view context);

}  // namespace silo::store::detail
