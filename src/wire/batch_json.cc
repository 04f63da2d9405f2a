#include "wire/batch_json.h"

#include <nlohmann/json.hpp>

#include "wire/detail/json_fields.h"

namespace silo::wire {

using nlohmann::json;

std::string BatchEntry::tar_name() const {
  if (plain_name) return archpath ? *archpath : name;
  std::string out = bucket;
  out += '/';
  out += name;
  if (archpath) {
    out += '/';
    out += *archpath;
  }
  return out;
}

std::string BatchEntry::selection_prefix() const { return plain_name ? std::string() : bucket + "/" + name + "/"; }

std::string batch_request_json(const BatchRequest& request) {
  json entries = json::array();
  for (const BatchEntry& e : request.entries) {
    json entry{{"bucket", e.bucket}, {"name", e.name}};
    if (e.archpath) entry["archpath"] = *e.archpath;
    if (e.archmode) entry["archmode"] = *e.archmode;
    if (e.start) entry["start"] = *e.start;
    if (e.length) entry["length"] = *e.length;
    entries.push_back(std::move(entry));
  }
  json doc{{"entries", std::move(entries)}, {"continue_on_error", request.continue_on_error}};
  if (request.plain_names) doc["plain_names"] = true;
  return doc.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

Result<BatchRequest> parse_batch_request_json(std::string_view text) {
  constexpr std::string_view kDocument = "a batch request";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  BatchRequest request;
  ASSIGN_OR_RETURN(request.continue_on_error, fields.bool_or("continue_on_error", false));
  ASSIGN_OR_RETURN(request.plain_names, fields.bool_or("plain_names", false));
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> entries, fields.objects("entries"));
  if (entries.empty()) return Status::invalid_argument("a batch request names no entries");
  if (entries.size() > kMaxBatchEntries) {
    return Status::invalid_argument("a batch request names {} entries; at most {} are allowed", entries.size(),
                                    kMaxBatchEntries);
  }
  request.entries.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const detail::JsonFields& f = entries[i];
    BatchEntry& entry = request.entries.emplace_back();
    entry.plain_name = request.plain_names;
    ASSIGN_OR_RETURN(entry.bucket, f.string("bucket"));
    ASSIGN_OR_RETURN(entry.name, f.string("name"));
    ASSIGN_OR_RETURN(entry.archpath, f.string_or_none("archpath"));
    ASSIGN_OR_RETURN(entry.archmode, f.string_or_none("archmode"));
    ASSIGN_OR_RETURN(entry.start, f.u64_or_none("start"));
    ASSIGN_OR_RETURN(entry.length, f.u64_or_none("length"));
    const char* wrong = nullptr;
    if (entry.bucket.empty()) {
      wrong = "has an empty bucket";
    } else if (entry.name.empty()) {
      wrong = "has an empty name";
    } else if (entry.archpath && entry.archpath->empty()) {
      wrong = "has an empty archpath";
    } else if (entry.archmode && !entry.archpath) {
      wrong = "has an archmode but no archpath (the pattern)";
    } else if (entry.archmode && (entry.start || entry.length)) {
      wrong = "reads a range of a selection (start and length apply to an object or one member)";
    } else if (entry.length && *entry.length == 0) {
      wrong = "has a length of 0";
    }
    if (wrong != nullptr) {
      return Status::invalid_argument("a batch request: entry {} ({}/{}) {}", i, entry.bucket, entry.name, wrong);
    }
  }
  return request;
}

}  // namespace silo::wire
