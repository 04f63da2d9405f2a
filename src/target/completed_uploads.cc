#include "target/completed_uploads.h"

#include <fmt/format.h>

#include <cctype>

#include "base/hash.h"

namespace silo::target {

void CompletedUploads::remember(const ObjectRef& object, const std::string& upload_id, Answer answer) {
  const auto now = std::chrono::steady_clock::now();
  const MutexLock lock(mutex_);
  prune(now);
  if (by_upload_.insert_or_assign(upload_id, Entry{object, std::move(answer), now}).second) order_.push_back(upload_id);
}

std::optional<CompletedUploads::Answer> CompletedUploads::find(const ObjectRef& object, const std::string& upload_id) {
  const MutexLock lock(mutex_);
  prune(std::chrono::steady_clock::now());
  const auto it = by_upload_.find(upload_id);
  if (it == by_upload_.end() || !(it->second.object == object)) return std::nullopt;
  return it->second.answer;
}

void CompletedUploads::prune(std::chrono::steady_clock::time_point now) {
  while (!order_.empty()) {
    const auto it = by_upload_.find(order_.front());
    if (it != by_upload_.end() && now - it->second.at < kKeep && by_upload_.size() <= kMaxAnswers) break;
    if (it != by_upload_.end()) by_upload_.erase(it);
    order_.pop_front();
  }
}

uint64_t parts_fingerprint(const std::vector<store::CompletePart>& parts) {
  std::string listed;
  for (const store::CompletePart& part : parts) {
    listed += fmt::format("{}:", part.part_number);
    for (const char c : part.etag_hex) listed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    listed += ',';
  }
  return hash::xxh64(listed);
}

}  // namespace silo::target
