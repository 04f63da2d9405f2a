#include "shards/member_index.h"

namespace silo::shards {

MemberIndex::MemberIndex(wire::ArchiveIndex index) : index_(std::move(index)) {
  by_name_.reserve(static_cast<size_t>(index_.members_size()));
  bytes_ = sizeof(MemberIndex);
  for (int i = 0; i < index_.members_size(); ++i) {
    const std::string& name = index_.members(i).name();
    by_name_.insert_or_assign(std::string_view(name), i);  // the last of a name wins
    // The member, its name, and its entry in the map (a node and a bucket slot).
    bytes_ += sizeof(wire::ArchiveMember) + name.size() + 4 * sizeof(void*) + sizeof(std::string_view) + sizeof(int);
  }
}

const wire::ArchiveMember* MemberIndex::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &index_.members(it->second);
}

}  // namespace silo::shards
