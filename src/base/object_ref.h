#pragma once

#include <string>

#include "base/strong_id.h"

namespace silo {

// An object's address: the bucket's id (never reused) and the object's name.
struct ObjectRef {
  BucketId bucket_id;
  std::string name;
  bool operator==(const ObjectRef&) const = default;
};

}  // namespace silo
