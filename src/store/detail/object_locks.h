#pragma once

#include <array>
#include <cstddef>
#include <mutex>

#include "base/hash.h"
#include "base/object_ref.h"

namespace silo::store::detail {

// Serializes the metadata-and-file steps of PUT commit, GET open and DELETE of one object
// across all mountpaths of a target. Striped: two objects may share a mutex, which costs
// a little waiting but never correctness. Held only on disk threads and never across a
// co_await, so a stripe shared by two objects cannot deadlock.
class ObjectLocks {
 public:
  std::unique_lock<std::mutex> lock(const ObjectRef& object) {
    const uint64_t h = hash::xxh64(object.name, object.bucket_id.value());
    return std::unique_lock<std::mutex>(stripes_[h % kStripes]);
  }

 private:
  static constexpr size_t kStripes = 1024;
  std::array<std::mutex, kStripes> stripes_;
};

}  // namespace silo::store::detail
