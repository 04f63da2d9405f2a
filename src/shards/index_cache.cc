#include "shards/index_cache.h"

namespace silo::shards {

std::shared_ptr<const MemberIndex> IndexCache::find(const ObjectRef& object, uint64_t generation) {
  MutexLock lock(mutex_);
  const auto it = entries_.find(Key(object.bucket_id.value(), object.name));
  if (it == entries_.end() || it->second.index->index().generation() != generation) return nullptr;
  recency_.splice(recency_.begin(), recency_, it->second.recency);
  return it->second.index;
}

void IndexCache::put(const ObjectRef& object, std::shared_ptr<const MemberIndex> index) {
  const uint64_t size = index->bytes() + object.name.size();
  if (size > max_bytes_) return;
  MutexLock lock(mutex_);
  Key key(object.bucket_id.value(), object.name);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    bytes_ -= it->second.bytes;
    recency_.erase(it->second.recency);
    entries_.erase(it);
  }
  recency_.push_front(key);
  entries_.emplace(std::move(key), Entry{std::move(index), size, recency_.begin()});
  bytes_ += size;
  while (bytes_ > max_bytes_) {
    const auto oldest = entries_.find(recency_.back());
    bytes_ -= oldest->second.bytes;
    entries_.erase(oldest);
    recency_.pop_back();
  }
}

uint64_t IndexCache::bytes() const {
  MutexLock lock(mutex_);
  return bytes_;
}

}  // namespace silo::shards
