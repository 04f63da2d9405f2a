#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/object_ref.h"

namespace silo::placement {

// Highest random weight (rendezvous) hashing. Candidates are named by a stable id (a
// node id for targets, a mountpath id inside a target). Every node computes the same
// answer from the same candidates; adding or removing one candidate moves only the
// objects that candidate wins or loses (about 1/N of them).
//
// weight(candidate, object) = fmix64(xxh64(candidate id) ^ xxh64(bucket id, name)).
// The candidate hash can be computed once per node map (HrwCandidates) so a lookup
// costs one xxh64 of the name plus N multiply-xor rounds.

// Hash of an object's address, the per-object half of the weight.
uint64_t object_hash(const ObjectRef& object);
// Hash of a candidate id, the per-candidate half of the weight.
uint64_t candidate_hash(std::string_view candidate_id);
uint64_t weight(uint64_t candidate_hash, uint64_t object_hash);

// A fixed list of candidates with their hashes precomputed. Immutable; share freely.
class HrwCandidates {
 public:
  HrwCandidates() = default;
  explicit HrwCandidates(std::vector<std::string> ids);

  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  const std::string& id(size_t index) const { return ids_[index]; }
  const std::vector<std::string>& ids() const { return ids_; }

  // Index of the candidate that owns `object`. Requires: !empty().
  size_t owner(const ObjectRef& object) const;
  // Indexes of the top `n` candidates for `object`, best first (copies, slices, and
  // the order in which to look for an object). Returns min(n, size()) indexes.
  std::vector<size_t> ranking(const ObjectRef& object, size_t n) const;

 private:
  std::vector<std::string> ids_;
  std::vector<uint64_t> hashes_;
};

}  // namespace silo::placement
