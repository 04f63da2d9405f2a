#include "target/completed_uploads.h"

#include <fmt/format.h>

#include "s3/checksum.h"

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

std::string multipart_etag_of(const std::vector<std::string>& part_etags_hex) {
  s3::Md5 md5;
  for (const std::string& hex : part_etags_hex) {
    if (hex.size() != 32) return "";
    std::string raw;
    for (size_t i = 0; i < 32; i += 2) {
      const auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int hi = nibble(hex[i]);
      const int lo = nibble(hex[i + 1]);
      if (hi < 0 || lo < 0) return "";
      raw.push_back(static_cast<char>(hi * 16 + lo));
    }
    md5.update(raw);
  }
  return fmt::format("{}-{}", md5.hex(), part_etags_hex.size());
}

}  // namespace silo::target
