#include "wire/json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace silo::wire {
namespace {

ListEntry entry(std::string name, uint64_t size) {
  ListEntry e;
  e.set_name(std::move(name));
  e.set_size(size);
  e.set_mtime_unix_nanos(1795441725943253063);
  e.set_md5_hex("12c5bf8df38080624cb9fa857d74cf2e");
  return e;
}

TEST(JsonTest, ObjectListIsValidJsonWithEveryField) {
  std::vector<ListEntry> entries = {entry("a/b c", 1), entry("quote\"back\\slash\ttab", 2),
                                    entry("caf\xc3\xa9", 3), entry(std::string("bad\xff", 4), 4)};
  const auto parsed = nlohmann::json::parse(object_list_json(entries, "746f6b"));
  EXPECT_EQ(parsed["next_token"], "746f6b");
  ASSERT_EQ(parsed["objects"].size(), 4u);
  EXPECT_EQ(parsed["objects"][0]["name"], "a/b c");
  EXPECT_EQ(parsed["objects"][0]["size"], 1);
  EXPECT_EQ(parsed["objects"][0]["mtime"], 1795441725943253063);
  EXPECT_EQ(parsed["objects"][0]["etag"], "12c5bf8df38080624cb9fa857d74cf2e");
  EXPECT_EQ(parsed["objects"][1]["name"], "quote\"back\\slash\ttab");
  EXPECT_EQ(parsed["objects"][2]["name"], "caf\xc3\xa9");
  EXPECT_EQ(parsed["objects"][3]["name"], "bad\xef\xbf\xbd");  // invalid UTF-8 replaced
}

TEST(JsonTest, EmptyObjectList) {
  const auto parsed = nlohmann::json::parse(object_list_json({}, ""));
  EXPECT_TRUE(parsed["objects"].empty());
  EXPECT_EQ(parsed["next_token"], "");
}

}  // namespace
}  // namespace silo::wire
