#include "base/result.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "base/hash.h"
#include "base/strong_id.h"

namespace silo {
namespace {

Result<int> half(int x) {
  if (x % 2 != 0) return Status::invalid_argument("{} is odd", x);
  return x / 2;
}

Result<int> quarter(int x) {
  ASSIGN_OR_RETURN(const int h, half(x));
  return half(h);
}

Status check_even(int x) {
  RETURN_IF_ERROR(half(x).status());
  return Status::ok();
}

TEST(StatusTest, CarriesCodeAndAnnotatedMessage) {
  Status s = Status::not_found("no object {}", "a/b");
  s.annotate("get {}", "bucket");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "get bucket: no object a/b");
  EXPECT_EQ(s.to_string(), "NOT_FOUND: get bucket: no object a/b");
  EXPECT_TRUE(Status::ok().is_ok());
}

TEST(StatusTest, MapsErrnoToRetryMeaning) {
  EXPECT_EQ(Status::from_errno(ENOSPC, "write").code(), Code::kResourceExhausted);
  EXPECT_EQ(Status::from_errno(ENOENT, "open").code(), Code::kNotFound);
  EXPECT_EQ(Status::from_errno(EIO, "read").code(), Code::kUnavailable);
}

TEST(ResultTest, PropagatesErrorsThroughMacros) {
  EXPECT_EQ(*quarter(8), 2);
  EXPECT_EQ(quarter(6).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(quarter(6).error().message(), "3 is odd");
  EXPECT_TRUE(check_even(4).is_ok());
  EXPECT_FALSE(check_even(5).is_ok());
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  EXPECT_DEATH({ std::ignore = *half(3); }, "value\\(\\) on an error Result");
}

TEST(HashTest, IsStable) {
  // Placement and on-disk paths depend on these exact values.
  EXPECT_EQ(hash::xxh64("", 0), 0xef46db3751d8e999ULL);
  EXPECT_EQ(hash::xxh128_hex("").size(), 32u);
  hash::Xxh3Stream a;
  a.update(std::string_view("hello "));
  a.update(std::string_view("world"));
  hash::Xxh3Stream b;
  b.update(std::string_view("hello world"));
  EXPECT_EQ(a.digest(), b.digest());
}

TEST(StrongIdTest, ComparesWithinTag) {
  EXPECT_EQ(NodeId("t1"), NodeId("t1"));
  EXPECT_LT(NodeId("t1"), NodeId("t2"));
  EXPECT_EQ(fmt::format("{}", NodeId("t9")), "t9");
}

}  // namespace
}  // namespace silo

#include "base/base64.h"

namespace silo {
namespace {
TEST(Base64Test, RoundTripsAndRejectsGarbage) {
  const std::string raw = "\x01\x02\xff hello";
  const auto encoded = base64::encode({reinterpret_cast<const unsigned char*>(raw.data()), raw.size()});
  EXPECT_EQ(*base64::decode(encoded), raw);
  EXPECT_EQ(*base64::decode("YQ=="), "a");
  EXPECT_EQ(*base64::decode("YWI="), "ab");
  EXPECT_FALSE(base64::decode("abc").has_value());
  EXPECT_FALSE(base64::decode("!!!!").has_value());
}
}  // namespace
}  // namespace silo

namespace silo {
namespace {

TEST(StatusTest, ReasonRefinesTheCodeAndSurvivesAnnotation) {
  Status s = Status::not_found("upload u1 of a/b").with_reason("NoSuchUpload");
  s.annotate("complete");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.reason(), "NoSuchUpload");
  EXPECT_EQ(s.message(), "complete: upload u1 of a/b");
  EXPECT_TRUE(Status::not_found("x").reason().empty());
}

}  // namespace
}  // namespace silo
