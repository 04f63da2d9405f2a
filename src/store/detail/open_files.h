#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/mutex.h"
#include "store/store.h"

namespace silo::store::detail {

// The open files of a mountpath's hot objects, each with the record it was opened under
// (docs/adr/0025): a warm GET then costs neither a RocksDB lookup and decode nor an
// openat/close. Bounded by a count of entries (each holds an fd) and by the bytes of
// their records; the least recently used goes first. Keyed by the object's MetaDb key.
// Thread-safe: sharded, each shard under its own mutex.
//
// Invariant: an entry never outlives a change of its record. Every write of the objects
// column family calls invalidate() (or invalidate_prefix()) after it, and a reader fills
// an entry only with the epoch it read before its RocksDB lookup: insert() drops it when
// an invalidation of that shard came in between. Files replaced or unlinked under the
// record are caught by the caller (OpenFile::is_current) on every hit.
class OpenFiles {
 public:
  // At most `max_entries` files and about `max_bytes` of records; 0 entries: keeps none.
  OpenFiles(size_t max_entries, size_t max_bytes);
  OpenFiles(const OpenFiles&) = delete;
  OpenFiles& operator=(const OpenFiles&) = delete;

  // The file kept under `key`, now the most recently used; null when none.
  std::shared_ptr<const OpenFile> find(std::string_view key);
  // What insert() for `key` needs: read it before reading the record.
  uint64_t epoch(std::string_view key);
  // Keeps `file` under `key` unless `key`'s shard was invalidated since `epoch`.
  void insert(std::string_view key, uint64_t epoch, std::shared_ptr<const OpenFile> file);
  // Drops `key`'s entry: its record changed or went.
  void invalidate(std::string_view key);
  // Drops every entry whose key starts with `prefix` (a bucket's records went).
  void invalidate_prefix(std::string_view prefix);

  size_t size();

 private:
  static constexpr size_t kShards = 16;
  struct Entry {
    std::string key;
    std::shared_ptr<const OpenFile> file;
    size_t bytes = 0;
  };
  struct Shard {
    Mutex mutex;
    uint64_t epoch GUARDED_BY(mutex) = 0;
    std::list<Entry> entries GUARDED_BY(mutex);  // most recently used first
    std::unordered_map<std::string_view, std::list<Entry>::iterator> by_key GUARDED_BY(mutex);
    size_t bytes GUARDED_BY(mutex) = 0;
  };
  Shard& shard_of(std::string_view key);
  static void erase(Shard& shard, std::list<Entry>::iterator it) REQUIRES(shard.mutex);

  const size_t max_entries_per_shard_;
  const size_t max_bytes_per_shard_;
  std::array<Shard, kShards> shards_;
};

}  // namespace silo::store::detail
