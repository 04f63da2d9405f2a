#pragma once

// Records for the tests of the rules every target applies to what it holds (copy_wire.h,
// erasure/detail/slice_io.h): a full copy's record and one slice of it. Header only,
// for tests.
#include <cstdint>

#include "wire/json.h"

namespace silo::replication::testing {

// A full copy's record of version (mtime, xxh3).
inline wire::ObjectRecord copy_record(int64_t mtime, uint64_t xxh3, uint64_t size = 100) {
  wire::ObjectRecord r;
  r.set_name("obj");
  r.set_mtime_unix_nanos(mtime);
  r.set_xxh3(xxh3);
  r.set_size(size);
  return r;
}

// Slice `index` of `whole` under a k + m code (its own XXH3 differs from the object's).
inline wire::ObjectRecord slice_of(const wire::ObjectRecord& whole, uint32_t index, uint32_t k = 2, uint32_t m = 1) {
  wire::ObjectRecord r = whole;
  r.set_xxh3(1000 + index);  // a slice's own bytes
  auto* ec = r.mutable_ec();
  ec->set_data(k);
  ec->set_parity(m);
  ec->set_index(index);
  ec->set_object_size(whole.size());
  ec->set_object_xxh3(whole.xxh3());
  ec->set_cell_size(1 << 20);
  return r;
}

}  // namespace silo::replication::testing
