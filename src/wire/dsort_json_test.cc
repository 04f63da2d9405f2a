#include "wire/dsort_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

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

TEST(DsortJsonTest, TheOutputFormatFollowsTheNamesAndMustAgreeWithThem) {
  const auto spec = [](std::string_view template_text, std::string_view format) {
    return parse_dsort_spec_json(fmt::format(
        R"({{"kind": "dsort", "input": {{"bucket": "i", "prefix": "p/"}}, "output": {{"bucket": "o",
            "template": "{}", "shard_size": 10{}}}}})",
        template_text, format.empty() ? std::string() : fmt::format(R"(, "format": "{}")", format)));
  };
  for (const auto& [name, format] : std::vector<std::pair<std::string, std::string>>{
           {"x-{0..9}.tgz", ""}, {"x-{0..9}.tar.gz", ""}, {"x-{0..9}.tgz", "tgz"}, {"x-{0..9}.tar.gz", "tar.gz"}}) {
    auto parsed = spec(name, format);
    ASSERT_TRUE(parsed.has_value()) << name << " " << format << ": " << parsed.status();
    EXPECT_TRUE(parsed->output_gzip) << name;
    EXPECT_EQ(*parse_dsort_spec_json(dsort_spec_json(*parsed)), *parsed);
  }
  for (const auto& [name, format] : std::vector<std::pair<std::string, std::string>>{
           {"x-{0..9}.tar", ""}, {"x-{0..9}.tar", "tar"}, {"x-{0..9}", ""}}) {
    auto parsed = spec(name, format);
    ASSERT_TRUE(parsed.has_value()) << name << ": " << parsed.status();
    EXPECT_FALSE(parsed->output_gzip) << name;
  }
  EXPECT_NE(spec("x-{0..9}.tar", "tgz").status().message().find("must end in .tgz or .tar.gz"), std::string::npos);
  EXPECT_NE(spec("x-{0..9}.tgz", "tar").status().message().find("'output.format' is tar"), std::string::npos);
  EXPECT_NE(spec("x-{0..9}.zip", "zip").status().message().find("'output.format' must be"), std::string::npos);
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
