#include "wire/batch_json.h"

#include <gtest/gtest.h>

namespace silo::wire {
namespace {

TEST(BatchJsonTest, RoundTripsEveryKindOfEntry) {
  BatchRequest request;
  request.continue_on_error = true;
  request.entries.push_back(BatchEntry{.bucket = "b", .name = "a/obj"});
  request.entries.push_back(BatchEntry{.bucket = "b", .name = "s.tar", .archpath = "k.jpg", .start = 10, .length = 5});
  request.entries.push_back(BatchEntry{.bucket = "c", .name = "s.tar", .archpath = "k", .archmode = "wdskey"});
  request.entries.push_back(BatchEntry{.bucket = "c", .name = "big", .start = 7});
  const auto parsed = parse_batch_request_json(batch_request_json(request));
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  EXPECT_EQ(*parsed, request);
  EXPECT_EQ(request.entries[0].tar_name(), "b/a/obj");
  EXPECT_EQ(request.entries[1].tar_name(), "b/s.tar/k.jpg");
}

TEST(BatchJsonTest, RefusesWhatCannotBeServedNamingTheEntry) {
  const char* bad[] = {
      R"({"entries": []})",
      R"({})",
      R"({"entries": [{"bucket": "b"}]})",
      R"({"entries": [{"bucket": "", "name": "n"}]})",
      R"({"entries": [{"bucket": "b", "name": "n", "archmode": "wdskey"}]})",
      R"({"entries": [{"bucket": "b", "name": "n", "archpath": "k", "archmode": "wdskey", "start": 1}]})",
      R"({"entries": [{"bucket": "b", "name": "n", "length": 0}]})",
      R"({"entries": [{"bucket": "b", "name": "n", "start": -1}]})",
      R"({"entries": [{"bucket": "b", "name": "n", "archpath": ""}]})",
      R"({"entries": [{"bucket": "b", "name": "n"}], "continue_on_error": "yes"})",
      "not json",
  };
  for (const char* text : bad) {
    const auto parsed = parse_batch_request_json(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code(), Code::kInvalidArgument) << text;
  }
  const auto named = parse_batch_request_json(
      R"({"entries": [{"bucket": "b", "name": "ok"}, {"bucket": "b", "name": "n", "length": 0}]})");
  ASSERT_FALSE(named.has_value());
  EXPECT_NE(named.error().message().find("entry 1 (b/n)"), std::string::npos) << named.error();
}

TEST(BatchJsonTest, PlainNamesLeaveTheBucketOut) {
  BatchRequest request;
  request.plain_names = true;
  request.entries = {BatchEntry{.bucket = "b", .name = "dir/x.tar"},
                     BatchEntry{.bucket = "b", .name = "s.tar", .archpath = "k.jpg"},
                     BatchEntry{.bucket = "b", .name = "s.tar", .archpath = "k", .archmode = "wdskey"}};
  auto parsed = parse_batch_request_json(batch_request_json(request));
  ASSERT_TRUE(parsed.has_value()) << parsed.status();
  EXPECT_TRUE(parsed->plain_names);
  ASSERT_EQ(parsed->entries.size(), 3u);
  EXPECT_EQ(parsed->entries[0].tar_name(), "dir/x.tar");
  EXPECT_EQ(parsed->entries[1].tar_name(), "k.jpg");
  EXPECT_EQ(parsed->entries[2].selection_prefix(), "");
  auto named = parse_batch_request_json(R"({"entries": [{"bucket": "b", "name": "s.tar", "archpath": "k"}]})");
  ASSERT_TRUE(named.has_value());
  EXPECT_FALSE(named->plain_names);
  EXPECT_EQ(named->entries[0].tar_name(), "b/s.tar/k");
  EXPECT_EQ(named->entries[0].selection_prefix(), "b/s.tar/");
}

TEST(BatchJsonTest, TakesUpToTheLimitOfEntries) {
  std::string text = R"({"entries": [)";
  for (size_t i = 0; i <= kMaxBatchEntries; ++i) text += (i ? "," : "") + std::string(R"({"bucket":"b","name":"n"})");
  const auto over = parse_batch_request_json(text + "]}");
  ASSERT_FALSE(over.has_value());
  EXPECT_NE(over.error().message().find("at most 100000"), std::string::npos) << over.error();
  text.resize(text.rfind(",{"));
  const auto at = parse_batch_request_json(text + "]}");
  ASSERT_TRUE(at.has_value()) << at.error();
  EXPECT_EQ(at->entries.size(), kMaxBatchEntries);
}

}  // namespace
}  // namespace silo::wire
