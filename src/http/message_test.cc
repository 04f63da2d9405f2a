#include "http/message.h"

#include <gtest/gtest.h>

namespace silo::http {
namespace {

TEST(HeadersTest, NamesAreCaseInsensitive) {
  Headers headers;
  headers.add("Content-Type", "text/plain");
  headers.add("x-amz-meta-a", "1");
  EXPECT_EQ(headers.get("content-type"), "text/plain");
  EXPECT_EQ(headers.get("X-AMZ-META-A"), "1");
  EXPECT_FALSE(headers.has("etag"));
  headers.set("CONTENT-TYPE", "application/json");
  ASSERT_EQ(headers.fields().size(), 2u);
  EXPECT_EQ(headers.get("Content-Type"), "application/json");
  headers.add("x-amz-meta-a", "2");
  headers.remove("X-Amz-Meta-A");
  EXPECT_FALSE(headers.has("x-amz-meta-a"));
}

TEST(RequestHeadTest, QueryParam) {
  RequestHead head;
  head.query = "uploads&partNumber=3&prefix=a%20b&empty=&x%79=z";
  EXPECT_EQ(head.query_param("uploads"), "");
  EXPECT_EQ(head.query_param("partNumber"), "3");
  EXPECT_EQ(head.query_param("prefix"), "a b");
  EXPECT_EQ(head.query_param("empty"), "");
  EXPECT_EQ(head.query_param("xy"), "z");
  EXPECT_EQ(head.query_param("missing"), std::nullopt);
  EXPECT_EQ(head.query_param("partnumber"), std::nullopt);  // names are case-sensitive
}

TEST(MethodTest, Names) {
  EXPECT_EQ(method_name(Method::kGet), "GET");
  EXPECT_EQ(method_name(Method::kDelete), "DELETE");
}

}  // namespace
}  // namespace silo::http
