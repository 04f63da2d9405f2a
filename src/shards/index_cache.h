#pragma once

// shards::IndexCache: decoded archive indexes of recent member reads, so that a read of a
// shard read a moment ago neither reads its index from RocksDB nor decodes it again
// (docs/shards.md "The index"). Bounded in bytes; least recently used out first.
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/mutex.h"
#include "base/object_ref.h"
#include "shards/member_index.h"

namespace silo::shards {

// An entry is the index of one version (its generation): a read of another version
// misses and replaces it, so an index never outlives its object's version in use.
// Thread-safe.
class IndexCache {
 public:
  explicit IndexCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // The index of `object` at `generation`, or null.
  std::shared_ptr<const MemberIndex> find(const ObjectRef& object, uint64_t generation);
  // Keeps `index` (of `object` at its generation) as the most recent.
  void put(const ObjectRef& object, std::shared_ptr<const MemberIndex> index);

  uint64_t bytes() const;

 private:
  using Key = std::pair<uint64_t, std::string>;  // bucket id, object name
  struct Entry {
    std::shared_ptr<const MemberIndex> index;
    uint64_t bytes = 0;
    std::list<Key>::iterator recency;
  };

  const uint64_t max_bytes_;
  mutable Mutex mutex_;
  std::map<Key, Entry> entries_ GUARDED_BY(mutex_);
  std::list<Key> recency_ GUARDED_BY(mutex_);  // most recent first
  uint64_t bytes_ GUARDED_BY(mutex_) = 0;
};

}  // namespace silo::shards
