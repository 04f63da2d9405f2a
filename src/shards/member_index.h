#pragma once

// shards::MemberIndex: an archive's index with its members found by name in constant
// time (a shard of 10,000 members is not scanned per read; docs/shards.md "The index").
#include <string_view>
#include <unordered_map>

#include "wire/codec.h"

namespace silo::shards {

// Immutable once made; shared by the reads of one version (IndexCache).
class MemberIndex {
 public:
  explicit MemberIndex(wire::ArchiveIndex index);
  MemberIndex(const MemberIndex&) = delete;
  MemberIndex& operator=(const MemberIndex&) = delete;

  const wire::ArchiveIndex& index() const { return index_; }
  // The member named `name`; of several, the last in the archive (a later tar member
  // replaces an earlier one of the same name, as tar extracts them). Null when none.
  const wire::ArchiveMember* find(std::string_view name) const;
  // Memory it holds, for the cache's bound.
  uint64_t bytes() const { return bytes_; }

 private:
  const wire::ArchiveIndex index_;
  std::unordered_map<std::string_view, int> by_name_;  // views of index_'s names
  uint64_t bytes_ = 0;
};

}  // namespace silo::shards
