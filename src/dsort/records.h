#pragma once

// The sample records of a resharding job (docs/resharding.md): what extraction learns of
// each sample, how records order, their byte codec (pages, spilled runs, shard plans) and
// RecordSorter, a target's records sorted within a memory bound, spilling sorted runs.
#include <compare>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "wire/dsort_json.h"

namespace silo::dsort {

// One sample of an input shard, or one member object of a loose sample. The global order
// is (sort_key, key, source): equal sort keys (a random order's rare XXH64 ties, equal
// content values) fall back to the key, then the input object, so every node derives
// the same total order from the records alone.
struct Record {
  std::string sort_key;  // bytes compared as unsigned; see sort_key_of_*()
  std::string key;       // the WebDataset sample key ("dir/KEY")
  std::string source;    // the input object: the shard, or the loose member's own object
  uint64_t bytes = 0;    // what it takes in an output tar: headers, data, padding

  std::strong_ordering operator<=>(const Record& other) const {
    if (auto c = sort_key <=> other.sort_key; c != 0) return c;
    if (auto c = key <=> other.key; c != 0) return c;
    return source <=> other.source;
  }
  bool operator==(const Record&) const = default;
  // What it costs in memory, counted against the sorter's limit.
  size_t memory() const { return sizeof(Record) + sort_key.size() + key.size() + source.size(); }
};

// Sort keys: bytes whose unsigned lexicographic order is the order asked for.
// kRandom: XXH64(key, seed), big-endian: a uniform shuffle that every node computes alike.
std::string sort_key_random(std::string_view key, uint64_t seed);
// kKey: natural order: digit runs compare by value ("a2" < "a10"), the rest by byte.
std::string sort_key_natural(std::string_view key);
// kContent: the member's text as `type` (surrounding white space ignored): kInvalidArgument
// when it is not one.
Result<std::string> sort_key_content(std::string_view text, wire::DsortContentType type);
// kList: the output shard's index in the list, then the key's position within it.
std::string sort_key_list(uint32_t shard, uint32_t position);

// The codec's integers: LEB128 varints. take_varint() drops what it read from `in`;
// nullopt (and `in` untouched) when `in` ends first.
void append_varint(std::string& out, uint64_t v);
std::optional<uint64_t> take_varint(std::string_view& in);

// Appends `record` (four length-prefixed fields) to `out`.
void append_record(std::string& out, const Record& record);
// Reads one record from the front of `in` and drops it from `in`; kDataLoss when `in`
// holds a torn one.
Result<Record> take_record(std::string_view& in);

// A target's records of one job: kept in memory until they take `memory_limit` bytes,
// then sorted and written as a run file under `spill_dir` (created on the first spill,
// removed with the sorter); every kMaxRunsPerLevel runs of a level are merged into one of
// the next. finish() sorts what is in memory; then next_page() hands out every record in
// order, merging the runs (one 256 KiB buffer each). spilled_bytes() counts every byte
// written, merges included. Not thread-safe;
// blocking (files): call on a disk executor.
class RecordSorter {
 public:
  RecordSorter(std::string spill_dir, uint64_t memory_limit);
  ~RecordSorter();
  RecordSorter(const RecordSorter&) = delete;
  RecordSorter& operator=(const RecordSorter&) = delete;

  Status add(Record record);
  Status finish();
  // Appends whole records to `out` until it passes `max_bytes` or none are left; returns
  // whether any are left. Requires: finish().
  Result<bool> next_page(std::string& out, size_t max_bytes);

  uint64_t records() const { return records_; }
  uint64_t spilled_bytes() const { return spilled_bytes_; }
  // Runs on disk now (merged ones count once).
  uint64_t spilled_runs() const { return runs_.size(); }
  static constexpr size_t kMaxRunsPerLevel = 16;

 private:
  struct Run;
  class RunWriter;
  Status spill();
  Result<std::unique_ptr<RunWriter>> new_run(uint32_t level);
  // Merges `tier` into one run of `level`, removing their files.
  Status merge(std::vector<std::unique_ptr<Run>> tier, uint32_t level);

  const std::string spill_dir_;
  const uint64_t memory_limit_;
  std::vector<Record> memory_;
  uint64_t memory_bytes_ = 0;
  size_t memory_next_ = 0;  // after finish(): the next record of memory_ to hand out
  std::vector<std::unique_ptr<Run>> runs_;
  uint64_t next_run_ = 0;  // names run files
  uint64_t records_ = 0;
  uint64_t spilled_bytes_ = 0;
  bool is_finished_ = false;
};

}  // namespace silo::dsort
