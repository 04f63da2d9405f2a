#pragma once

// `silo put DIR BUCKET/PREFIX --shard-size SIZE` (docs/shards.md "Making shards"): packs
// a directory's files into tar shards of about SIZE bytes, each WebDataset sample (the
// files sharing a key: `dir/KEY.ext`) whole in one shard, samples in natural key order,
// and uploads them as PREFIX000000.tar, PREFIX000001.tar, ...
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "context.h"

namespace silo::cli {

// One file of a shard: its path, its member name (relative to the directory) and size.
struct ShardMember {
  std::string path;
  std::string name;
  uint64_t size = 0;
};
// One shard to write: its object name and members, in order.
struct ShardPlan {
  std::string name;
  std::vector<ShardMember> members;
  uint64_t samples = 0;
  uint64_t bytes = 0;  // the tar's length
};

// "a10" after "a9": runs of digits compare as numbers, the rest bytewise.
bool natural_less(const std::string& a, const std::string& b);

// The shards `members` (any order) make: samples in natural key order, members of a
// sample by name, a new shard once the next sample would take it past `shard_size`
// (a sample larger than that alone in its shard). Names: `prefix` + 6 digits + ".tar";
// an empty prefix or one ending in '/' gets "shard-".
std::vector<ShardPlan> plan_shards(std::vector<ShardMember> members, uint64_t shard_size, const std::string& prefix);

// Walks `dir`, plans its shards and uploads them to `bucket`, `workers` at a time.
Status put_shards(Context& context, const std::string& dir, const std::string& bucket, const std::string& prefix,
                  uint64_t shard_size, int workers);

}  // namespace silo::cli
