#include "wire/object_json.h"

#include <gtest/gtest.h>

#include <vector>

#include "wire/codec.h"

namespace silo::wire {
namespace {

ListEntry entry(std::string name, uint64_t size, bool is_remote_only = false) {
  ListEntry e;
  e.set_name(std::move(name));
  e.set_size(size);
  e.set_mtime_unix_nanos(1795441725943253063);
  e.set_md5_hex("12c5bf8df38080624cb9fa857d74cf2e");
  e.set_is_remote_only(is_remote_only);
  return e;
}

TEST(ObjectListJsonTest, RoundTrip) {
  const std::vector<ListEntry> entries = {entry("a/b c", 1), entry("quote\"back\\slash\ttab", 2),
                                          entry("caf\xc3\xa9", 3, /*is_remote_only=*/true),
                                          entry("\xf0\x9f\x98\x80", UINT64_MAX)};
  for (const bool shows_cached : {false, true}) {
    auto page = parse_object_list_json(object_list_json(entries, "746f6b", shows_cached));
    ASSERT_TRUE(page.has_value()) << page.error();
    EXPECT_EQ(page->next_token, "746f6b");
    ASSERT_EQ(page->objects.size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      const ObjectEntry want{entries[i].name(), entries[i].size(), entries[i].mtime_unix_nanos(),
                             entries[i].md5_hex(), !(shows_cached && entries[i].is_remote_only())};
      EXPECT_EQ(page->objects[i], want) << i;
    }
  }
  auto empty = parse_object_list_json(object_list_json({}, ""));
  ASSERT_TRUE(empty.has_value()) << empty.error();
  EXPECT_EQ(*empty, ObjectListPage{});
}

TEST(ObjectListJsonTest, MalformedNamesTheDocumentAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "a listing page: not a JSON object"},
      {R"({"next_token": ""})", "a listing page: 'objects' is missing"},
      {R"({"objects": [{"name": "a"}]})", "a listing page: 'objects[0].size' is missing"},
      {R"({"objects": [{"name": "a", "size": 1.5}]})",
       "a listing page: 'objects[0].size' must be a non-negative integer"},
      {R"({"objects": [{"name": "a", "size": 1, "mtime": "now"}]})", "a listing page: 'objects[0].mtime' must be an integer"},
      {R"({"objects": [{"name": "a", "size": 1, "cached": 1}]})",
       "a listing page: 'objects[0].cached' must be true or false"},
      {R"({"objects": [], "next_token": 5})", "a listing page: 'next_token' must be a string"},
  };
  for (const auto& [text, message] : cases) {
    auto decoded = parse_object_list_json(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument) << text;
    EXPECT_EQ(decoded.error().message(), message) << text;
  }
}

TEST(ObjectPutJsonTest, RoundTrip) {
  ObjectRecord record;
  record.set_name("dir/\xc3\xa9t\xc3\xa9.bin");
  record.set_size(1234);
  record.set_md5_hex("0cc175b9c0f1b6a831c399e269772661");
  auto decoded = parse_object_put_json(object_put_json(record));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(*decoded, (PutResult{record.name(), 1234, record.md5_hex()}));
}

TEST(ObjectPutJsonTest, Malformed) {
  auto missing = parse_object_put_json(R"({"name": "a", "size": 1})");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "an object PUT answer: 'etag' is missing");
  auto not_json = parse_object_put_json("OK");
  ASSERT_FALSE(not_json.has_value());
  EXPECT_EQ(not_json.error().message(), "an object PUT answer: not valid JSON");
}

TEST(ArchiveListJsonTest, RoundTripWithANameThatIsNotUtf8) {
  ArchiveIndex index;
  index.set_format(ARCHIVE_FORMAT_TAR);
  for (const char* name : {"a.jpg", "dir/b.cls", "bad\xff.bin"}) {
    ArchiveMember& m = *index.add_members();
    m.set_name(name);
    m.set_size(static_cast<uint64_t>(index.members_size()) * 10);
    m.set_offset(static_cast<uint64_t>(index.members_size()) * 512);
  }
  auto decoded = parse_archive_list_json(archive_list_json(index));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(decoded->format, "tar");
  ASSERT_EQ(decoded->members.size(), 3u);
  EXPECT_EQ(decoded->members[1], (ArchiveMemberEntry{"dir/b.cls", 20, 1024}));
  EXPECT_EQ(decoded->members[2].name, "bad\xef\xbf\xbd.bin") << "U+FFFD in place of the byte";
  EXPECT_FALSE(parse_archive_list_json(R"({"format": "tar"})").has_value());
}

}  // namespace
}  // namespace silo::wire
