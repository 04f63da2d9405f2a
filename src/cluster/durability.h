#pragma once

// The durability a bucket's commits get, as every writer of a target (client writes,
// copies, slices, fetches of remote buckets) asks for it.
#include "config/config.h"
#include "wire/codec.h"
#include "store/store.h"

namespace silo::cluster {

// The durability of commits into `bucket`: its props', else the cluster's default.
store::Durability durability_of(const wire::Bucket& bucket, const config::ClusterConfig& config);

}  // namespace silo::cluster
