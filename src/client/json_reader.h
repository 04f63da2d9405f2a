#pragma once

// A small JSON reader for the answers of the native API. nlohmann_json stays in config/
// and wire/ (STYLE.md 2.2 rule 4), and wire/ has no decoders for these documents, so the
// client reads the few it needs with this. Public: tests and tools read the same answers.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::client {

// One parsed JSON value. Numbers keep their text so 64-bit integers stay exact.
class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind() const { return kind_; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_string() const { return kind_ == Kind::kString; }

  // The member `key` of an object; a null value when absent or when this is no object.
  const JsonValue& operator[](std::string_view key) const;
  const std::vector<JsonValue>& items() const { return items_; }  // array elements
  // The string itself, or "" for other kinds.
  const std::string& str() const { return text_; }
  // A non-negative integer number; kInvalidArgument otherwise.
  Result<uint64_t> to_u64() const;
  Result<int64_t> to_i64() const;
  bool to_bool() const { return kind_ == Kind::kBool && text_ == "true"; }
  // The value as compact JSON text (object members in key order).
  std::string dump() const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  std::string text_;  // string value, number text, or "true"/"false"
  std::vector<JsonValue> items_;
  std::map<std::string, JsonValue, std::less<>> members_;
};

// Parses one JSON document (RFC 8259); kInvalidArgument naming the offset on bad input.
Result<JsonValue> parse_json(std::string_view text);
// The JSON object a request `what` ("GET /v1/...") answered with `body`: errors name it.
Result<JsonValue> parse_answer_object(std::string_view body, std::string_view what);

}  // namespace silo::client
