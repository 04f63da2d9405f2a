#include "wire/dsort_json.h"

#include <gtest/gtest.h>

namespace silo::wire {
namespace {

constexpr std::string_view kSpec = R"({"kind": "dsort",
  "input": {"bucket": "in", "template": "shard-{000..199}.tar"},
  "output": {"bucket": "out", "template": "train-{00000..99999}.tar", "shard_size": 4194304},
  "order": {"by": "random", "seed": 42}})";

TEST(DsortJsonTest, ASpecRoundTrips) {
  auto spec = parse_dsort_spec_json(kSpec);
  ASSERT_TRUE(spec.has_value()) << spec.status();
  EXPECT_EQ(spec->input_bucket, "in");
  EXPECT_EQ(spec->input_template, "shard-{000..199}.tar");
  EXPECT_FALSE(spec->input_loose);
  EXPECT_EQ(spec->shard_size, 4194304u);
  EXPECT_EQ(spec->order, DsortOrder::kRandom);
  EXPECT_EQ(spec->seed, 42u);
  EXPECT_FALSE(spec->fails_on_duplicate);
  auto again = parse_dsort_spec_json(dsort_spec_json(*spec));
  ASSERT_TRUE(again.has_value()) << again.status();
  EXPECT_EQ(*again, *spec);

  auto content = parse_dsort_spec_json(R"({"kind": "dsort", "input": {"bucket": "in", "prefix": "d/", "format": "loose"},
      "output": {"bucket": "out", "template": "o-{0..9}.tar", "shard_size": 100},
      "order": {"by": "content", "member": "cls", "type": "float"}, "on_duplicate": "fail", "dry_run": true,
      "memory_limit": 1024})");
  ASSERT_TRUE(content.has_value()) << content.status();
  EXPECT_TRUE(content->input_loose);
  EXPECT_EQ(content->content_type, DsortContentType::kFloat);
  EXPECT_TRUE(content->fails_on_duplicate);
  EXPECT_TRUE(content->dry_run);
  EXPECT_EQ(content->memory_limit, 1024u);
  EXPECT_EQ(*parse_dsort_spec_json(dsort_spec_json(*content)), *content);
}

TEST(DsortJsonTest, WrongSpecsAreRefusedNamingTheField) {
  const auto refusal = [](std::string_view text) {
    auto spec = parse_dsort_spec_json(text);
    EXPECT_FALSE(spec.has_value()) << text;
    return spec ? std::string() : std::string(spec.status().message());
  };
  const std::string out = R"("output": {"bucket": "o", "template": "x-{0..9}.tar", "shard_size": 10})";
  const std::string in = R"("input": {"bucket": "i", "prefix": "p/"})";
  EXPECT_NE(refusal("{\"kind\": \"dsort\", " + in + "}").find("output"), std::string::npos);
  EXPECT_NE(refusal("{\"kind\": \"dsort\", " + in + ", " + out + ", \"colour\": 1}").find("'colour'"), std::string::npos);
  EXPECT_NE(refusal("{\"kind\": \"dsort\", " + in + ", " + out + ", \"order\": {\"by\": \"size\"}}").find("order.by"),
            std::string::npos);
  EXPECT_NE(refusal("{\"kind\": \"dsort\", " + in + ", " + out + ", \"order\": {\"by\": \"content\"}}").find("order.member"),
            std::string::npos);
  EXPECT_NE(refusal("{\"kind\": \"dsort\", " + in + ", " + out + ", \"order\": {\"by\": \"list\", \"object\": \"x\"}}")
                .find("BUCKET/NAME"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"kind": "dsort", "input": {"bucket": "i", "prefix": "p", "template": "a{0..1}"}, )" + out + "}")
                .find("not both"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"kind": "dsort", )" + in + R"(, "output": {"bucket": "o", "template": "x{0..1}"}})").find("shard_size"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"kind": "dsort", )" + in + R"(, "output": {"bucket": "o", "template": "x{1..0}", "shard_size": 1}})")
                .find("brace template"),
            std::string::npos);
  EXPECT_NE(refusal("{\"kind\": \"dsort\", " + in + ", " + out + ", \"on_duplicate\": \"merge\"}").find("on_duplicate"),
            std::string::npos);
}

TEST(DsortJsonTest, KeyListsKeepTheirOrderAndRefuseRepeats) {
  auto list = parse_dsort_list_json(R"({"z.tar": ["k3", "k1"], "a.tar": ["k2"]})");
  ASSERT_TRUE(list.has_value()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0], (DsortListShard{"z.tar", {"k3", "k1"}}));
  EXPECT_EQ((*list)[1], (DsortListShard{"a.tar", {"k2"}}));
  for (const char* bad : {"[]", "{}", R"({"a": ["k", "k"]})", R"({"a": ["k"], "b": ["k"]})", R"({"a": "k"})",
                          R"({"a": [1]})", R"({"": ["k"]})"}) {
    EXPECT_EQ(parse_dsort_list_json(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace silo::wire
