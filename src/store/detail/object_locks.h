#pragma once

#include <array>
#include <cstddef>
#include <mutex>

#include "base/hash.h"
#include "base/object_ref.h"

namespace silo::store::detail {

// Serializes the metadata-and-file steps of PUT commit, GET open and DELETE of one object
// across all mountpaths of a target. Striped: two objects may share a mutex, which costs
// a little waiting but never correctness. Held on disk threads (network threads only
// try_lock) and never across a co_await, so a stripe shared by two objects cannot deadlock.
class ObjectLocks {
 public:
  std::unique_lock<std::mutex> lock(const ObjectRef& object) {
    return std::unique_lock<std::mutex>(stripe(object));
  }
  // The lock if it is free now, else an unowned lock (the caller must not wait).
  std::unique_lock<std::mutex> try_lock(const ObjectRef& object) {
    return std::unique_lock<std::mutex>(stripe(object), std::try_to_lock);
  }

 private:
  std::mutex& stripe(const ObjectRef& object) {
    return stripes_[hash::xxh64(object.name, object.bucket_id.value()) % kStripes];
  }

  static constexpr size_t kStripes = 1024;
  std::array<std::mutex, kStripes> stripes_;
};

}  // namespace silo::store::detail
