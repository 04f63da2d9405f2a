#pragma once

// Private to wire/: reads the members of the native API's JSON documents for their
// decoders, so that every decoder names the document and the member when the text is
// wrong, in one wording. nlohmann_json stays inside wire/ (STYLE.md 2.2 rule 4).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire::detail {

// Parses `text` as one JSON object. `document` names it in errors ("a job");
// kInvalidArgument when the text is not JSON or not an object.
Result<nlohmann::json> parse_object(std::string_view text, std::string_view document);

// A view of one JSON object of a document. Every error is kInvalidArgument naming the
// document and the member's path: "a job: 'progress.errors' must be a non-negative
// integer". A member that is absent or null counts as absent. Unknown members are
// ignored, so a newer server's additions do not break an older client.
// Borrows the object and `document`: both must outlive the view.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string_view document, std::string path = {})
      : object_(&object), document_(document), path_(std::move(path)) {}

  Result<std::string> string(std::string_view key) const;
  Result<std::string> string_or(std::string_view key, std::string fallback) const;
  Result<uint64_t> u64(std::string_view key) const;
  Result<uint64_t> u64_or(std::string_view key, uint64_t fallback) const;
  Result<std::optional<uint64_t>> u64_or_none(std::string_view key) const;
  Result<std::optional<std::string>> string_or_none(std::string_view key) const;
  Result<uint32_t> u32(std::string_view key) const;
  Result<int64_t> i64_or(std::string_view key, int64_t fallback) const;
  Result<bool> bool_or(std::string_view key, bool fallback) const;
  Result<JsonFields> object(std::string_view key) const;
  // nullopt when absent or null.
  Result<std::optional<JsonFields>> object_or_none(std::string_view key) const;
  // The objects of the array `key` (required).
  Result<std::vector<JsonFields>> objects(std::string_view key) const;
  // The members of the object `key` (each an object), by name; empty when absent.
  Result<std::vector<std::pair<std::string, JsonFields>>> members_or_none(std::string_view key) const;
  // The strings of the array `key`; empty when absent.
  Result<std::vector<std::string>> strings_or_none(std::string_view key) const;

 private:
  const nlohmann::json* find(std::string_view key) const;
  Status wrong(std::string_view key, std::string_view what) const;

  const nlohmann::json* object_;
  std::string_view document_;
  std::string path_;  // "progress." for a nested object, "" at the top
};

}  // namespace silo::wire::detail
