#include "wire/name_template.h"

#include <gtest/gtest.h>

namespace silo::wire {
namespace {

std::vector<std::string> expand(std::string_view text) {
  auto t = NameTemplate::parse(text);
  EXPECT_TRUE(t.has_value()) << text << ": " << t.status();
  return t ? t->expand() : std::vector<std::string>{};
}

TEST(NameTemplateTest, RangesPadToTheWidthOfTheFirstBound) {
  EXPECT_EQ(expand("train-{0000..0003}.tar"),
            (std::vector<std::string>{"train-0000.tar", "train-0001.tar", "train-0002.tar", "train-0003.tar"}));
  EXPECT_EQ(expand("{8..11}"), (std::vector<std::string>{"8", "9", "10", "11"}));
  EXPECT_EQ(expand("s{0..10..5}"), (std::vector<std::string>{"s0", "s5", "s10"}));
  EXPECT_EQ(expand("s{0..9..4}"), (std::vector<std::string>{"s0", "s4", "s8"}));
  auto big = NameTemplate::parse("shard-{000000..004095}.tar");
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->size(), 4096u);
  EXPECT_EQ(big->prefix(), "shard-");
  EXPECT_EQ(big->expand().back(), "shard-004095.tar");
}

TEST(NameTemplateTest, ListsAndSeveralBracesMultiply) {
  EXPECT_EQ(expand("{a,b}/x-{0..1}"), (std::vector<std::string>{"a/x-0", "a/x-1", "b/x-0", "b/x-1"}));
  EXPECT_EQ(expand("plain-name"), (std::vector<std::string>{"plain-name"}));
  EXPECT_EQ(expand("{,x}y"), (std::vector<std::string>{"y", "xy"}));
}

TEST(NameTemplateTest, NameAtIsTheExpansionsNameAtThatIndex) {
  for (const char* text : {"train-{0000..0003}.tar", "{a,b}/x-{0..2}", "plain", "s{0..10..5}-{x,y}"}) {
    auto t = NameTemplate::parse(text);
    ASSERT_TRUE(t.has_value()) << text;
    const std::vector<std::string> all = t->expand();
    for (uint64_t i = 0; i < all.size(); ++i) EXPECT_EQ(t->name_at(i), all[i]) << text << " #" << i;
  }
}

TEST(NameTemplateTest, BadTemplatesAreRefusedWithTheReason) {
  for (const char* bad : {"", "a{0..3", "a}b", "{3..1}", "{a..b}", "{0..4..0}", "{x}", "{a{b}}"}) {
    auto t = NameTemplate::parse(bad);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << bad;
  }
  auto huge = NameTemplate::parse("{0..999999}-{0..999999}");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.status().message().find("more than"), std::string::npos) << huge.status();
}

}  // namespace
}  // namespace silo::wire
