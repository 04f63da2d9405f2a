#include "store/detail/open_files.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace silo::store::detail {

OpenFiles::OpenFiles(size_t max_entries, size_t max_bytes)
    : max_entries_per_shard_((max_entries + kShards - 1) / kShards),
      max_bytes_per_shard_(std::max<size_t>(max_bytes / kShards, 1)) {}

OpenFiles::Shard& OpenFiles::shard_of(std::string_view key) {
  return shards_[std::hash<std::string_view>{}(key) % kShards];
}

void OpenFiles::erase(Shard& shard, std::list<Entry>::iterator it) {
  shard.bytes -= it->bytes;
  shard.by_key.erase(it->key);
  shard.entries.erase(it);
}

std::shared_ptr<const OpenFile> OpenFiles::find(std::string_view key) {
  Shard& shard = shard_of(key);
  MutexLock lock(shard.mutex);
  const auto found = shard.by_key.find(key);
  if (found == shard.by_key.end()) return nullptr;
  shard.entries.splice(shard.entries.begin(), shard.entries, found->second);
  return found->second->file;
}

uint64_t OpenFiles::epoch(std::string_view key) {
  Shard& shard = shard_of(key);
  MutexLock lock(shard.mutex);
  return shard.epoch;
}

void OpenFiles::insert(std::string_view key, uint64_t epoch, std::shared_ptr<const OpenFile> file) {
  if (max_entries_per_shard_ == 0) return;
  // The record's encoded size stands for its memory (block sums make large objects'
  // records the large ones).
  const size_t bytes = key.size() + file->record.ByteSizeLong() + sizeof(Entry);
  if (bytes > max_bytes_per_shard_) return;
  std::vector<std::shared_ptr<const OpenFile>> dropped;  // closed after the lock is released
  Shard& shard = shard_of(key);
  MutexLock lock(shard.mutex);
  if (shard.epoch != epoch) return;  // the record may have changed since it was read
  if (const auto found = shard.by_key.find(key); found != shard.by_key.end()) {
    dropped.push_back(std::move(found->second->file));
    erase(shard, found->second);
  }
  shard.entries.push_front(Entry{std::string(key), std::move(file), bytes});
  shard.by_key.emplace(shard.entries.front().key, shard.entries.begin());
  shard.bytes += bytes;
  while (shard.entries.size() > max_entries_per_shard_ || shard.bytes > max_bytes_per_shard_) {
    const auto last = std::prev(shard.entries.end());
    dropped.push_back(std::move(last->file));
    erase(shard, last);
  }
}

void OpenFiles::invalidate(std::string_view key) {
  std::shared_ptr<const OpenFile> dropped;
  Shard& shard = shard_of(key);
  MutexLock lock(shard.mutex);
  ++shard.epoch;
  if (const auto found = shard.by_key.find(key); found != shard.by_key.end()) {
    dropped = std::move(found->second->file);
    erase(shard, found->second);
  }
}

void OpenFiles::invalidate_prefix(std::string_view prefix) {
  for (Shard& shard : shards_) {
    std::list<Entry> dropped;
    MutexLock lock(shard.mutex);
    ++shard.epoch;
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      const auto next = std::next(it);
      if (it->key.starts_with(prefix)) {
        shard.bytes -= it->bytes;
        shard.by_key.erase(it->key);
        dropped.splice(dropped.end(), shard.entries, it);
      }
      it = next;
    }
  }
}

size_t OpenFiles::size() {
  size_t count = 0;
  for (Shard& shard : shards_) {
    MutexLock lock(shard.mutex);
    count += shard.entries.size();
  }
  return count;
}

}  // namespace silo::store::detail
