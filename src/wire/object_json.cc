#include "wire/object_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>

#include "wire/codec.h"
#include "wire/detail/json_fields.h"

namespace silo::wire {
namespace {

using nlohmann::json;

// Appends `text` as a JSON string. Plain printable ASCII (nearly every object name) is
// copied as is; anything else goes through nlohmann (escapes, invalid UTF-8 replaced).
void append_json_string(std::string& out, std::string_view text) {
  const bool is_plain = std::all_of(text.begin(), text.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (is_plain) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string object_list_json(std::span<const ListEntry> entries, std::string_view next_token, bool shows_cached) {
  // Written directly, not through a json DOM: listing pages are the hot path of W4.
  std::string out;
  out.reserve(64 + entries.size() * 120);
  out += "{\"next_token\":";
  append_json_string(out, next_token);
  out += ",\"objects\":[";
  for (const auto& e : entries) {
    if (out.back() != '[') out += ',';
    out += "{\"etag\":";
    append_json_string(out, e.md5_hex());
    fmt::format_to(std::back_inserter(out), ",\"mtime\":{},\"name\":", e.mtime_unix_nanos());
    append_json_string(out, e.name());
    fmt::format_to(std::back_inserter(out), ",\"size\":{}", e.size());
    if (shows_cached) out += e.is_remote_only() ? ",\"cached\":false" : ",\"cached\":true";
    out += '}';
  }
  out += "]}";
  return out;
}

Result<ObjectListPage> parse_object_list_json(std::string_view text) {
  constexpr std::string_view kDocument = "a listing page";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  ObjectListPage page;
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> objects, fields.objects("objects"));
  page.objects.reserve(objects.size());
  for (const detail::JsonFields& o : objects) {
    ObjectEntry& entry = page.objects.emplace_back();
    ASSIGN_OR_RETURN(entry.name, o.string("name"));
    ASSIGN_OR_RETURN(entry.size, o.u64("size"));
    ASSIGN_OR_RETURN(entry.mtime_unix_nanos, o.i64_or("mtime", 0));
    ASSIGN_OR_RETURN(entry.etag, o.string_or("etag", ""));
    ASSIGN_OR_RETURN(entry.cached, o.bool_or("cached", true));
  }
  ASSIGN_OR_RETURN(page.next_token, fields.string_or("next_token", ""));
  return page;
}

std::string archive_list_json(const ArchiveIndex& index) {
  json members = json::array();
  for (const ArchiveMember& m : index.members()) {
    members.push_back({{"name", m.name()}, {"size", m.size()}, {"offset", m.offset()}});
  }
  const char* format = index.format() == ARCHIVE_FORMAT_TAR ? "tar" : "unknown";
  return json{{"format", format}, {"members", std::move(members)}}.dump(-1, ' ', false,
                                                                         json::error_handler_t::replace);
}

Result<ArchiveList> parse_archive_list_json(std::string_view text) {
  constexpr std::string_view kDocument = "an archive's member list";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  ArchiveList list;
  ASSIGN_OR_RETURN(list.format, fields.string("format"));
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> members, fields.objects("members"));
  list.members.reserve(members.size());
  for (const detail::JsonFields& m : members) {
    ArchiveMemberEntry& entry = list.members.emplace_back();
    ASSIGN_OR_RETURN(entry.name, m.string("name"));
    ASSIGN_OR_RETURN(entry.size, m.u64("size"));
    ASSIGN_OR_RETURN(entry.offset, m.u64("offset"));
  }
  return list;
}

std::string object_put_json(const ObjectRecord& record) {
  return json{{"name", record.name()}, {"size", record.size()}, {"etag", record.md5_hex()}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

Result<PutResult> parse_object_put_json(std::string_view text) {
  constexpr std::string_view kDocument = "an object PUT answer";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  const detail::JsonFields fields(doc, kDocument);
  PutResult out;
  ASSIGN_OR_RETURN(out.name, fields.string("name"));
  ASSIGN_OR_RETURN(out.size, fields.u64("size"));
  ASSIGN_OR_RETURN(out.etag, fields.string("etag"));
  return out;
}

}  // namespace silo::wire
