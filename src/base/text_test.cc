#include "base/text.h"

#include <gtest/gtest.h>

namespace silo::text {
namespace {

TEST(PercentTest, EncodeKeepsUnreserved) {
  EXPECT_EQ(percent_encode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(percent_encode("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(percent_encode_path("a b/c"), "a%20b/c");
  EXPECT_EQ(percent_encode("\xff+"), "%FF%2B");
}

TEST(PercentTest, DecodeRoundTrips) {
  const std::string text = "dir/a b+c%\x01\xfe";
  Result<std::string> decoded = percent_decode(percent_encode_path(text));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, text);
  EXPECT_EQ(*percent_decode("%41%6a"), "Aj");
}

TEST(PercentTest, DecodeRejectsBadEscapes) {
  for (const std::string_view bad : {"%", "%4", "a%zz", "%g0", "abc%"}) {
    Result<std::string> decoded = percent_decode(bad);
    ASSERT_FALSE(decoded) << bad;
    EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument);
  }
}

TEST(PercentTest, EncodesLikeAws) {
  EXPECT_EQ(percent_encode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(percent_encode("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(percent_encode_path("a b/c"), "a%20b/c");
  EXPECT_EQ(percent_encode_path("+=&?%#,!*'();:@$"),
            "%2B%3D%26%3F%25%23%2C%21%2A%27%28%29%3B%3A%40%24");
  EXPECT_EQ(percent_encode("\xC3\xA9\xFF"), "%C3%A9%FF");
  EXPECT_EQ(percent_encode(std::string("\0", 1)), "%00");
  EXPECT_EQ(percent_encode_path(""), "");
}

TEST(PercentTest, Decodes) {
  EXPECT_EQ(*percent_decode("a%20b%2fc%2F+"), "a b/c/+");
  EXPECT_EQ(*percent_decode("%C3%A9"), "\xC3\xA9");
  EXPECT_EQ(*percent_decode(""), "");
  EXPECT_FALSE(percent_decode("%").has_value()) << "%";
  EXPECT_FALSE(percent_decode("%2").has_value()) << "%2";
  EXPECT_FALSE(percent_decode("%zz").has_value()) << "%zz";
  EXPECT_FALSE(percent_decode("%2g").has_value()) << "%2g";
  EXPECT_FALSE(percent_decode("%-1").has_value()) << "%-1";
  for (int c = 0; c < 256; ++c) {
    const std::string s(1, static_cast<char>(c));
    EXPECT_EQ(*percent_decode(percent_encode(s)), s);
  }
}

TEST(Utf8Test, AcceptsWellFormedAndRejectsTheRest) {
  for (const std::string_view good : {"", "plain", "ünï/cødé", "\xF0\x9F\x98\x80", "\xEF\xBF\xBD"}) {
    EXPECT_TRUE(is_utf8(good)) << good;
  }
  for (const std::string_view bad : {"\xff", "\xC0\xAF" /* overlong '/' */, "\xED\xA0\x80" /* surrogate */,
                                     "\xF4\x90\x80\x80" /* past U+10FFFF */, "\xE2\x82", "a\x80"}) {
    EXPECT_FALSE(is_utf8(bad)) << bad;
  }
}

}  // namespace
}  // namespace silo::text
