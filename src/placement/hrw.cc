#include "placement/hrw.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/hash.h"

namespace silo::placement {
namespace {

// MurmurHash3's 64-bit finalizer: full avalanche, so xor-combined inputs spread evenly.
uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

}  // namespace

uint64_t object_hash(const ObjectRef& object) {
  // The bucket id seeds the name hash, so equal names in two buckets land independently.
  return hash::xxh64(object.name, object.bucket_id.value());
}

uint64_t candidate_hash(std::string_view candidate_id) { return hash::xxh64(candidate_id, 0); }

uint64_t weight(uint64_t candidate, uint64_t object) { return fmix64(candidate ^ object); }

HrwCandidates::HrwCandidates(std::vector<std::string> ids) : ids_(std::move(ids)) {
  hashes_.reserve(ids_.size());
  for (const auto& id : ids_) hashes_.push_back(candidate_hash(id));
}

size_t HrwCandidates::owner(const ObjectRef& object) const {
  SILO_CHECK(!ids_.empty()) << "owner() with no candidates";
  const uint64_t h = object_hash(object);
  size_t best = 0;
  uint64_t best_weight = weight(hashes_[0], h);
  for (size_t i = 1; i < hashes_.size(); ++i) {
    const uint64_t w = weight(hashes_[i], h);
    // Ties (astronomically rare) go to the smaller id, so every node agrees.
    if (w > best_weight || (w == best_weight && ids_[i] < ids_[best])) {
      best = i;
      best_weight = w;
    }
  }
  return best;
}

std::vector<size_t> HrwCandidates::ranking(const ObjectRef& object, size_t n) const {
  const uint64_t h = object_hash(object);
  std::vector<std::pair<uint64_t, size_t>> weighted;
  weighted.reserve(ids_.size());
  for (size_t i = 0; i < hashes_.size(); ++i) weighted.emplace_back(weight(hashes_[i], h), i);
  const size_t count = std::min(n, weighted.size());
  auto better = [this](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : ids_[a.second] < ids_[b.second];
  };
  std::partial_sort(weighted.begin(), weighted.begin() + static_cast<ptrdiff_t>(count),
                    weighted.end(), better);
  std::vector<size_t> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(weighted[i].second);
  return out;
}

}  // namespace silo::placement
