#include "archive/members.h"

#include <regex>

namespace silo::archive {

std::optional<wire::ArchiveFormat> format_of_name(std::string_view object_name) {
  if (object_name.ends_with(".tar")) return wire::ARCHIVE_FORMAT_TAR;
  if (object_name.ends_with(".tgz") || object_name.ends_with(".tar.gz")) return wire::ARCHIVE_FORMAT_TGZ;
  if (object_name.ends_with(".tar.lz4")) return wire::ARCHIVE_FORMAT_TAR_LZ4;
  if (object_name.ends_with(".zip")) return wire::ARCHIVE_FORMAT_ZIP;
  return std::nullopt;
}

std::string_view format_name(wire::ArchiveFormat format) {
  switch (format) {
    case wire::ARCHIVE_FORMAT_TAR: return "tar";
    case wire::ARCHIVE_FORMAT_TGZ: return "tgz";
    case wire::ARCHIVE_FORMAT_TAR_LZ4: return "tar.lz4";
    case wire::ARCHIVE_FORMAT_ZIP: return "zip";
    default: return "unknown";
  }
}

const wire::ArchiveMember* find_member(const wire::ArchiveIndex& index, std::string_view name) {
  for (int i = index.members_size() - 1; i >= 0; --i) {
    if (index.members(i).name() == name) return &index.members(i);
  }
  return nullptr;
}

std::pair<std::string_view, std::string_view> split_sample_key(std::string_view member_name) {
  const size_t slash = member_name.rfind('/');
  const size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t dot = member_name.find('.', base);
  if (dot == std::string_view::npos) return {member_name, {}};
  return {member_name.substr(0, dot), member_name.substr(dot + 1)};
}

Result<SelectMode> parse_select_mode(std::string_view text) {
  if (text == "wdskey") return SelectMode::kWdsKey;
  if (text == "regexp") return SelectMode::kRegexp;
  if (text == "prefix") return SelectMode::kPrefix;
  if (text == "suffix") return SelectMode::kSuffix;
  if (text == "substr") return SelectMode::kSubstr;
  return Status::invalid_argument("archmode '{}' is not one of wdskey, regexp, prefix, suffix, substr", text)
      .with_reason("InvalidArgument");
}

Result<std::vector<const wire::ArchiveMember*>> select_members(const wire::ArchiveIndex& index, SelectMode mode,
                                                             std::string_view pattern) {
  std::optional<std::regex> regex;
  if (mode == SelectMode::kRegexp) {
    try {
      regex.emplace(pattern.begin(), pattern.end(), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status::invalid_argument("archpath '{}' is not a regular expression: {}", pattern, e.what())
          .with_reason("InvalidArgument");
    }
  }
  std::vector<const wire::ArchiveMember*> out;
  for (const wire::ArchiveMember& member : index.members()) {
    const std::string_view name = member.name();
    bool is_selected = false;
    switch (mode) {
      case SelectMode::kWdsKey: is_selected = split_sample_key(name).first == pattern; break;
      case SelectMode::kRegexp: is_selected = std::regex_match(member.name(), *regex); break;
      case SelectMode::kPrefix: is_selected = name.starts_with(pattern); break;
      case SelectMode::kSuffix: is_selected = name.ends_with(pattern); break;
      case SelectMode::kSubstr: is_selected = name.find(pattern) != std::string_view::npos; break;
    }
    if (is_selected) out.push_back(&member);
  }
  return out;
}

}  // namespace silo::archive
