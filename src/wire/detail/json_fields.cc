#include "wire/detail/json_fields.h"

#include <fmt/format.h>

#include <limits>

namespace silo::wire::detail {

using nlohmann::json;

Result<json> parse_object(std::string_view text, std::string_view document) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::invalid_argument("{}: not valid JSON", document);
  if (!doc.is_object()) return Status::invalid_argument("{}: not a JSON object", document);
  return doc;
}

const json* JsonFields::find(std::string_view key) const {
  const auto it = object_->find(std::string(key));
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

Status JsonFields::wrong(std::string_view key, std::string_view what) const {
  return Status::invalid_argument("{}: '{}{}' {}", document_, path_, key, what);
}

Result<std::string> JsonFields::string(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return wrong(key, "is missing");
  if (!value->is_string()) return wrong(key, "must be a string");
  return value->get<std::string>();
}

Result<std::string> JsonFields::string_or(std::string_view key, std::string fallback) const {
  if (find(key) == nullptr) return fallback;
  return string(key);
}

Result<uint64_t> JsonFields::u64(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return wrong(key, "is missing");
  if (!value->is_number_unsigned()) return wrong(key, "must be a non-negative integer");
  return value->get<uint64_t>();
}

Result<uint64_t> JsonFields::u64_or(std::string_view key, uint64_t fallback) const {
  if (find(key) == nullptr) return fallback;
  return u64(key);
}

Result<std::optional<uint64_t>> JsonFields::u64_or_none(std::string_view key) const {
  if (find(key) == nullptr) return std::optional<uint64_t>();
  ASSIGN_OR_RETURN(const uint64_t value, u64(key));
  return std::optional<uint64_t>(value);
}

Result<std::optional<std::string>> JsonFields::string_or_none(std::string_view key) const {
  if (find(key) == nullptr) return std::optional<std::string>();
  ASSIGN_OR_RETURN(std::string value, string(key));
  return std::optional<std::string>(std::move(value));
}

Result<uint32_t> JsonFields::u32(std::string_view key) const {
  ASSIGN_OR_RETURN(const uint64_t value, u64(key));
  if (value > std::numeric_limits<uint32_t>::max()) return wrong(key, "is out of range");
  return static_cast<uint32_t>(value);
}

Result<int64_t> JsonFields::i64_or(std::string_view key, int64_t fallback) const {
  const json* value = find(key);
  if (value == nullptr) return fallback;
  // Unsigned past int64's range is no valid time or count of these documents.
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return wrong(key, "is out of range");
  }
  if (!value->is_number_integer()) return wrong(key, "must be an integer");
  return value->get<int64_t>();
}

Result<bool> JsonFields::bool_or(std::string_view key, bool fallback) const {
  const json* value = find(key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return wrong(key, "must be true or false");
  return value->get<bool>();
}

Result<JsonFields> JsonFields::object(std::string_view key) const {
  ASSIGN_OR_RETURN(std::optional<JsonFields> found, object_or_none(key));
  if (!found) return wrong(key, "is missing");
  return std::move(*found);
}

Result<std::optional<JsonFields>> JsonFields::object_or_none(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return std::optional<JsonFields>();
  if (!value->is_object()) return wrong(key, "must be an object");
  return std::optional<JsonFields>(JsonFields(*value, document_, fmt::format("{}{}.", path_, key)));
}

Result<std::vector<JsonFields>> JsonFields::objects(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return wrong(key, "is missing");
  if (!value->is_array()) return wrong(key, "must be an array");
  std::vector<JsonFields> out;
  out.reserve(value->size());
  for (size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_object()) return wrong(fmt::format("{}[{}]", key, i), "must be an object");
    out.emplace_back(item, document_, fmt::format("{}{}[{}].", path_, key, i));
  }
  return out;
}

Result<std::vector<std::pair<std::string, JsonFields>>> JsonFields::members_or_none(std::string_view key) const {
  const json* value = find(key);
  std::vector<std::pair<std::string, JsonFields>> out;
  if (value == nullptr) return out;
  if (!value->is_object()) return wrong(key, "must be an object");
  for (const auto& [name, item] : value->items()) {
    if (!item.is_object()) return wrong(fmt::format("{}.{}", key, name), "must be an object");
    out.emplace_back(name, JsonFields(item, document_, fmt::format("{}{}.{}.", path_, key, name)));
  }
  return out;
}

Result<std::vector<std::string>> JsonFields::strings_or_none(std::string_view key) const {
  const json* value = find(key);
  std::vector<std::string> out;
  if (value == nullptr) return out;
  if (!value->is_array()) return wrong(key, "must be an array of strings");
  for (size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    if (!item.is_string()) return wrong(fmt::format("{}[{}]", key, i), "must be a string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace silo::wire::detail
