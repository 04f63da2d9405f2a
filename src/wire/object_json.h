#pragma once

// The object documents of the native API (a bucket listing page, the answer to an object
// PUT): one codec, the encoder for the target and proxy, the decoder for the client.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

class ArchiveIndex;  // object_record.proto
class ListEntry;     // cluster_messages.proto
class ObjectRecord;  // object_record.proto

// One object of a listing page.
struct ObjectEntry {
  std::string name;
  uint64_t size = 0;
  int64_t mtime_unix_nanos = 0;
  std::string etag;    // MD5 hex, no quotes
  bool cached = true;  // a remote bucket's object: whether Silo holds it
  bool operator==(const ObjectEntry&) const = default;
};

// GET /v1/buckets/{bucket}?prefix=&limit=&token= as a client reads it (ListPage is the
// protobuf page a target gives the proxy).
struct ObjectListPage {
  std::vector<ObjectEntry> objects;
  std::string next_token;  // empty on the last page
  bool operator==(const ObjectListPage&) const = default;
};

// {"objects": [{"name", "size", "mtime", "etag"[, "cached"]}], "next_token"}; "cached"
// (whether Silo holds the object) when `shows_cached` (a remote bucket).
std::string object_list_json(std::span<const ListEntry> entries, std::string_view next_token,
                             bool shows_cached = false);
// Requires each object's name and size; "cached" absent means true.
Result<ObjectListPage> parse_object_list_json(std::string_view text);

// The answer to an object PUT.
struct PutResult {
  std::string name;
  uint64_t size = 0;
  std::string etag;  // MD5 hex, no quotes
  bool operator==(const PutResult&) const = default;
};

// {"name", "size", "etag"}
std::string object_put_json(const ObjectRecord& record);
Result<PutResult> parse_object_put_json(std::string_view text);

// GET /v1/objects/{bucket}/{name}?archlist=true (docs/shards.md): an archive's members.
struct ArchiveMemberEntry {
  std::string name;
  uint64_t size = 0;
  uint64_t offset = 0;  // of the member's first byte in the object
  bool operator==(const ArchiveMemberEntry&) const = default;
};
struct ArchiveList {
  std::string format;  // "tar"
  std::vector<ArchiveMemberEntry> members;
  bool operator==(const ArchiveList&) const = default;
};
// {"format", "members": [{"name", "size", "offset"}]}; names that are not UTF-8 get U+FFFD.
std::string archive_list_json(const ArchiveIndex& index);
Result<ArchiveList> parse_archive_list_json(std::string_view text);

}  // namespace silo::wire
