#pragma once

// Which members of an archive a read names (docs/shards.md "Reads"): one by its name
// (`archpath`), a WebDataset sample by its key, or those matching a pattern
// (`archmode`), as AIStore's archpath / archregx + archmode do.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "wire/codec.h"

namespace silo::archive {

// The reason (S3 error code) of a read that found the object but not the member it
// names: a 404 of its own, which get-from-neighbor and remote buckets must not take for a
// missing object.
inline constexpr const char* kNoSuchMember = "NoSuchArchiveMember";
inline bool is_member_miss(const Status& s) { return s.code() == Code::kNotFound && s.reason() == kNoSuchMember; }

// The format an object's name says it has: .tar (WebDataset shards), .tgz and .tar.gz,
// .tar.lz4, .zip; else nullopt (compressed.h sniff_format() reads the bytes instead).
std::optional<wire::ArchiveFormat> format_of_name(std::string_view object_name);
std::string_view format_name(wire::ArchiveFormat format);

// The member named `name`; of a name stored twice, the last (what extraction leaves).
const wire::ArchiveMember* find_member(const wire::ArchiveIndex& index, std::string_view name);

// A WebDataset member's sample key and extension: "dir/a.b.jpg" -> ("dir/a", "b.jpg"),
// split at the first dot of the last path component; no dot -> (name, "").
std::pair<std::string_view, std::string_view> split_sample_key(std::string_view member_name);

enum class SelectMode { kWdsKey, kRegexp, kPrefix, kSuffix, kSubstr };
// "wdskey" | "regexp" | "prefix" | "suffix" | "substr"; kInvalidArgument naming them.
Result<SelectMode> parse_select_mode(std::string_view text);

// The members `pattern` selects under `mode`, in archive order: kWdsKey, every member
// whose sample key is `pattern`; kRegexp, whose whole name matches the ECMAScript regular
// expression (kInvalidArgument when it does not compile); the others by name.
Result<std::vector<const wire::ArchiveMember*>> select_members(const wire::ArchiveIndex& index, SelectMode mode,
                                                             std::string_view pattern);

}  // namespace silo::archive
