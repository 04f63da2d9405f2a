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


TEST(JsonTest, BucketPropsNameOneLayout) {
  auto coded = apply_bucket_props_json(R"({"ec": {"data": 4, "parity": 2, "min_size": 65536}})", {});
  ASSERT_TRUE(coded.has_value()) << coded.error();
  EXPECT_TRUE(is_erasure_coded(*coded));
  EXPECT_EQ(holder_count(*coded), 6u);
  EXPECT_EQ(coded->ec().min_size(), 65536u);

  // From copies to ec and back: the property named replaces the other layout.
  BucketProps two;
  two.set_copies(2);
  auto to_ec = apply_bucket_props_json(R"({"ec": {"data": 2, "parity": 1}})", two);
  ASSERT_TRUE(to_ec.has_value()) << to_ec.error();
  EXPECT_EQ(copies_of(*to_ec), 1u);
  EXPECT_EQ(holder_count(*to_ec), 3u);
  auto to_copies = apply_bucket_props_json(R"({"copies": 3})", *to_ec);
  ASSERT_TRUE(to_copies.has_value()) << to_copies.error();
  EXPECT_FALSE(is_erasure_coded(*to_copies));
  EXPECT_EQ(holder_count(*to_copies), 3u);
  auto off = apply_bucket_props_json(R"({"ec": null})", *to_ec);
  ASSERT_TRUE(off.has_value()) << off.error();
  EXPECT_FALSE(is_erasure_coded(*off));

  for (const char* bad : {R"({"ec": {"data": 0, "parity": 1}})", R"({"ec": {"data": 2}})",
                          R"({"ec": {"data": 30, "parity": 3}})", R"({"ec": {"data": 2, "parity": 1, "x": 1}})",
                          R"({"ec": {"data": -2, "parity": 1}})", R"({"ec": "4+2"})",
                          R"({"ec": {"data": 2, "parity": 1}, "copies": 2})"}) {
    auto got = apply_bucket_props_json(bad, {});
    ASSERT_FALSE(got.has_value()) << bad;
    EXPECT_EQ(got.error().code(), Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace silo::wire
