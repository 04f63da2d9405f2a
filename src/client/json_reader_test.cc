#include "client/json_reader.h"

#include <gtest/gtest.h>

#include "client/client.h"

namespace silo::client {
namespace {


TEST(JsonReaderTest, ReadsTheListingAnswer) {
  auto doc = parse_json(
      R"({"objects":[{"name":"a/\u00e9 b","size":18446744073709551615,"mtime":-5,"etag":"x"}],)"
      R"("next_token":"", "flag": true, "none": null, "f": 1.5e3})");
  ASSERT_TRUE(doc.has_value()) << doc.error();
  const auto& o = (*doc)["objects"].items().at(0);
  EXPECT_EQ(o["name"].str(), "a/\xC3\xA9 b");
  EXPECT_EQ(*o["size"].to_u64(), 18446744073709551615ull);
  EXPECT_EQ(*o["mtime"].to_i64(), -5);
  EXPECT_EQ((*doc)["next_token"].str(), "");
  EXPECT_TRUE((*doc)["flag"].to_bool());
  EXPECT_EQ((*doc)["none"].kind(), JsonValue::Kind::kNull);
  EXPECT_EQ((*doc)["missing"].kind(), JsonValue::Kind::kNull);
}

TEST(JsonReaderTest, DecodesSurrogatePairsAndEscapes) {
  auto doc = parse_json(R"(["\ud83d\ude00", "q\"\\\/\n\t"])");
  ASSERT_TRUE(doc.has_value()) << doc.error();
  EXPECT_EQ(doc->items().at(0).str(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(doc->items().at(1).str(), "q\"\\/\n\t");
}

TEST(JsonReaderTest, RejectsMalformedInput) {
  for (const char* text : {"", "{", "[1,", R"({"a" 1})", R"("abc)", "[1] x", R"("\ud800")", "{\"a\":tru}"}) {
    EXPECT_FALSE(parse_json(text).has_value()) << "accepted: " << text;
  }
  EXPECT_FALSE(parse_json(std::string(1000, '[')).has_value());
}

TEST(ClientStatusTest, UsesTheServerCodeAndMessage) {
  Response r;
  r.status = 409;
  r.body = R"({"error":{"code":"FAILED_PRECONDITION","message":"bucket b is not empty"}})";
  const Status s = Client::status_of(r, "DELETE /v1/buckets/b");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("bucket b is not empty"), std::string::npos) << s;
  EXPECT_NE(s.message().find("409"), std::string::npos) << s;
}

TEST(ClientStatusTest, FallsBackToTheHttpStatus) {
  Response r;
  r.status = 416;
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kOutOfRange);
  r.status = 503;
  r.body = "not json";
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kUnavailable);
  r.status = 404;
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kNotFound);
  r.status = 431;
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kInvalidArgument);
  r.status = 204;
  EXPECT_TRUE(Client::status_of(r, "GET x").is_ok());
}

TEST(ClientTest, ObjectTargetKeepsSlashesAndEncodesTheRest) {
  EXPECT_EQ(Client::object_target("b", "a/b c%?#+"), "/v1/objects/b/a/b%20c%25%3F%23%2B");
}

TEST(JsonReaderTest, DumpWritesCompactJsonAndValueAtFindsDottedKeys) {
  const std::string doc = R"({"cluster": {"cache": {"high_wm": 90, "s3": {"region": "a\"b"}}, "flag": true,
                               "list": ["x", 2], "none": null}})";
  auto parsed = parse_json(doc);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ((*parsed)["cluster"]["list"].dump(), R"(["x",2])");
  EXPECT_EQ(json_value_at(doc, "cluster.cache.high_wm").value(), "90");
  EXPECT_EQ(json_value_at(doc, "cluster.cache.s3").value(), R"({"region":"a\"b"})");
  EXPECT_EQ(json_value_at(doc, "cluster.flag").value(), "true");
  EXPECT_EQ(json_value_at(doc, "cluster.none").value(), "");
  EXPECT_EQ(json_value_at(doc, "cluster.cache.high_wm.deeper").value(), "");
  EXPECT_EQ(json_value_at(doc, "cluster.missing").value(), "");
  EXPECT_FALSE(json_value_at("{oops", "a").has_value());
  EXPECT_TRUE(is_json("85") && is_json("\"redirect\"") && is_json("[1]") && is_json("null"));
  EXPECT_FALSE(is_json("redirect") || is_json("") || is_json("1 2"));
}

}  // namespace
}  // namespace silo::client
