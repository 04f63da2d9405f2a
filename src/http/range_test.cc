#include "http/range.h"

#include <gtest/gtest.h>

namespace silo::http {
namespace {

std::optional<ByteRange> ok_range(std::string_view header, uint64_t size) {
  Result<std::optional<ByteRange>> r = parse_range(header, size);
  EXPECT_TRUE(r.has_value()) << header << ": " << r.status();
  return r ? *r : std::nullopt;
}

bool is_unsatisfiable(std::string_view header, uint64_t size) {
  Result<std::optional<ByteRange>> r = parse_range(header, size);
  return !r && r.error().code() == Code::kOutOfRange;
}

TEST(RangeTest, FirstAndLast) {
  EXPECT_EQ(ok_range("bytes=0-99", 1000), (ByteRange{0, 100}));
  EXPECT_EQ(ok_range("bytes=10-10", 1000), (ByteRange{10, 1}));
  EXPECT_EQ(ok_range("bytes=999-999", 1000), (ByteRange{999, 1}));
}

TEST(RangeTest, OpenEnded) { EXPECT_EQ(ok_range("bytes=100-", 1000), (ByteRange{100, 900})); }

TEST(RangeTest, Suffix) {
  EXPECT_EQ(ok_range("bytes=-100", 1000), (ByteRange{900, 100}));
  EXPECT_EQ(ok_range("bytes=-5000", 1000), (ByteRange{0, 1000}));  // longer than the object
}

TEST(RangeTest, LastPastEndIsClamped) {
  EXPECT_EQ(ok_range("bytes=900-5000", 1000), (ByteRange{900, 100}));
}

TEST(RangeTest, Unsatisfiable) {
  EXPECT_TRUE(is_unsatisfiable("bytes=1000-", 1000));
  EXPECT_TRUE(is_unsatisfiable("bytes=1000-2000", 1000));
  EXPECT_TRUE(is_unsatisfiable("bytes=-0", 1000));
}

TEST(RangeTest, EmptyObjectRejectsEveryRange) {
  EXPECT_TRUE(is_unsatisfiable("bytes=0-0", 0));
  EXPECT_TRUE(is_unsatisfiable("bytes=0-", 0));
  EXPECT_TRUE(is_unsatisfiable("bytes=-10", 0));
}

TEST(RangeTest, IgnoredWhenNotUnderstood) {
  for (const std::string_view header :
       {"", "bytes", "bytes=", "bytes=-", "items=0-9", "bytes=0-9,20-29", "bytes=a-9",
        "bytes=9-0", "bytes=0-9x", "bytes=--1", "bytes=99999999999999999999999-"}) {
    EXPECT_EQ(ok_range(header, 1000), std::nullopt) << header;
  }
}

TEST(RangeTest, ClosedRangesNeedBothOffsets) {
  EXPECT_EQ(parse_closed_range("bytes=0-9"), (ByteRange{0, 10}));
  EXPECT_EQ(parse_closed_range("bytes=5-5"), (ByteRange{5, 1}));
  for (const std::string_view header : {"", "bytes=", "bytes=0-", "bytes=-10", "bytes=9-0", "bytes=0-9,20-29",
                                        "bytes= 0-9", "items=0-9", "bytes=a-9"}) {
    EXPECT_EQ(parse_closed_range(header), std::nullopt) << header;
  }
}

}  // namespace
}  // namespace silo::http
