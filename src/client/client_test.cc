#include "client/client.h"

#include <gtest/gtest.h>

namespace silo::client {
namespace {

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
  EXPECT_NE(Client::status_of(r, "GET x").message().find("not json"), std::string::npos);
  r.status = 404;
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kNotFound);
  r.body = R"({"error":{"code":"NOT_A_CODE","message":"m"}})";  // an unknown name: the HTTP status
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kNotFound);
  r.status = 431;
  EXPECT_EQ(Client::status_of(r, "GET x").code(), Code::kInvalidArgument);
  r.status = 204;
  EXPECT_TRUE(Client::status_of(r, "GET x").is_ok());
}

TEST(ClientTest, ObjectTargetKeepsSlashesAndEncodesTheRest) {
  EXPECT_EQ(Client::object_target("b", "a/b c%?#+"), "/v1/objects/b/a/b%20c%25%3F%23%2B");
}

TEST(ClientTest, ListPageErrorsNameTheField) {
  auto page = Client::parse_list_page(R"({"objects": [{"name": "a"}], "next_token": ""})");
  ASSERT_FALSE(page.has_value());
  EXPECT_EQ(page.error().message(), "a listing page: 'objects[0].size' is missing");
}

}  // namespace
}  // namespace silo::client
