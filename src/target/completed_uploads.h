#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/object_ref.h"
#include "base/thread_annotations.h"
#include "store/store.h"

namespace silo::target {

// The answers of CompleteMultipartUploads this target gave, kept a while so that a retried
// completion (its first answer lost to a timeout or a dropped connection) gets the same
// 200 and ETag as AWS answers, not NoSuchUpload (issue #25 item 1). In memory: a
// retry after this target restarted, or after kKeep, gets NoSuchUpload. Thread-safe.
class CompletedUploads {
 public:
  static constexpr std::chrono::minutes kKeep{15};
  static constexpr size_t kMaxAnswers = 100'000;  // the oldest go first beyond it

  struct Answer {
    std::string etag;            // unquoted, "<hex>-N"
    uint64_t parts = 0;          // parts_fingerprint() of the completion's list (a retry must match)
    std::string checksum_name;   // "CRC32"...; empty: none
    std::string checksum_value;  // base64, "-N" for a composite
    std::string checksum_type;   // "COMPOSITE" or "FULL_OBJECT"
  };

  void remember(const ObjectRef& object, const std::string& upload_id, Answer answer);
  // The answer of `upload_id` when it completed `object` within kKeep.
  std::optional<Answer> find(const ObjectRef& object, const std::string& upload_id);

 private:
  struct Entry {
    ObjectRef object;
    Answer answer;
    std::chrono::steady_clock::time_point at;
  };
  void prune(std::chrono::steady_clock::time_point now) REQUIRES(mutex_);

  Mutex mutex_;
  std::unordered_map<std::string, Entry> by_upload_ GUARDED_BY(mutex_);
  std::deque<std::string> order_ GUARDED_BY(mutex_);  // upload ids, oldest first
};

// A fingerprint of a CompleteMultipartUpload list (part numbers and ETags, which the store
// compares case-insensitively): a retry names the same parts when it has the same one.
uint64_t parts_fingerprint(const std::vector<store::CompletePart>& parts);

}  // namespace silo::target
