#include "access/policy.h"

#include <gtest/gtest.h>

namespace silo::access {
namespace {

wire::Policy parse(std::string_view text) {
  auto policy = wire::parse_policy_json(text);
  EXPECT_TRUE(policy.has_value()) << policy.error();
  EXPECT_TRUE(validate(*policy, "data").is_ok());
  return *policy;
}

Subject user(std::string key, std::string ip = "10.1.2.3") {
  Subject s;
  s.access_key = std::move(key);
  s.source_ip = std::move(ip);
  return s;
}

Subject admin() {
  Subject s = user("root");
  s.is_admin = true;
  return s;
}

Subject anonymous(std::string ip = "10.1.1.1") {
  Subject s;
  s.source_ip = std::move(ip);
  return s;
}

Request bucket_request(std::string action) {
  Request r;
  r.action = std::move(action);
  r.bucket = "data";
  return r;
}

Request object(std::string action, std::string key) {
  Request r = bucket_request(std::move(action));
  r.key = std::move(key);
  return r;
}

constexpr std::string_view kReadShared = R"({
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "read", "Effect": "Allow", "Principal": {"AWS": ["bob", "arn:aws:iam::123456789012:user/carol"]},
     "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::data/shared/*"},
    {"Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::data",
     "Condition": {"StringLike": {"s3:prefix": ["shared/*", "shared/"]}}},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::data/shared/secret*"}
  ]})";

TEST(PolicyTest, AllowsWhatItGrantsAndNothingElse) {
  const wire::Policy policy = parse(kReadShared);
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:GetObject", "shared/a.jpg")), Effect::kAllow);
  EXPECT_EQ(evaluate(policy, user("carol"), object("s3:GetObject", "shared/a.jpg")), Effect::kAllow);
  EXPECT_EQ(evaluate(policy, user("dave"), object("s3:GetObject", "shared/a.jpg")), Effect::kNone);
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:PutObject", "shared/a.jpg")), Effect::kNone);
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:GetObject", "private/a.jpg")), Effect::kNone);
}

TEST(PolicyTest, ExplicitDenyWins) {
  const wire::Policy policy = parse(kReadShared);
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:GetObject", "shared/secret.txt")), Effect::kDeny);
  // Even for the owner: only the policy's own management stays with it.
  const BucketAccess bucket{"alice", &policy, false};
  EXPECT_EQ(authorize(user("alice"), bucket, object("s3:GetObject", "shared/secret.txt")).reason(), "AccessDenied");
  EXPECT_TRUE(authorize(user("alice"), bucket, bucket_request("s3:PutBucketPolicy")).is_ok());
  EXPECT_TRUE(authorize(user("alice"), bucket, object("s3:GetObject", "private/x")).is_ok());
  // Admins are outside bucket policies.
  EXPECT_TRUE(authorize(admin(), bucket, object("s3:GetObject", "shared/secret.txt")).is_ok());
}

TEST(PolicyTest, ListingConditionsOnThePrefix) {
  const wire::Policy policy = parse(kReadShared);
  Request list = bucket_request("s3:ListBucket");
  EXPECT_EQ(evaluate(policy, user("bob"), list), Effect::kNone);  // no prefix: StringLike fails
  list.prefix = "shared/";
  EXPECT_EQ(evaluate(policy, user("bob"), list), Effect::kAllow);
  list.prefix = "private/";
  EXPECT_EQ(evaluate(policy, user("bob"), list), Effect::kNone);
}

TEST(PolicyTest, SourceAddressConditions) {
  const wire::Policy policy = parse(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*",
     "Condition": {"IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "2001:db8::/32"]}}},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*",
     "Condition": {"IpAddress": {"aws:SourceIp": "10.9.0.0/16"}}}]})");
  EXPECT_EQ(evaluate(policy, user("bob", "10.1.2.3"), object("s3:GetObject", "k")), Effect::kAllow);
  EXPECT_EQ(evaluate(policy, user("bob", "10.9.2.3"), object("s3:GetObject", "k")), Effect::kDeny);
  EXPECT_EQ(evaluate(policy, user("bob", "192.168.1.1"), object("s3:GetObject", "k")), Effect::kNone);
  EXPECT_EQ(evaluate(policy, user("bob", "2001:db8:0:1::7"), object("s3:GetObject", "k")), Effect::kAllow);
  EXPECT_EQ(evaluate(policy, user("bob", "2001:db9::7"), object("s3:GetObject", "k")), Effect::kNone);
  // Principal "*" takes anonymous clients too.
  EXPECT_EQ(evaluate(policy, anonymous(), object("s3:GetObject", "k")), Effect::kAllow);
}

TEST(PolicyTest, OwnersAdminsAnonymousAndStrangers) {
  const BucketAccess none{"alice", nullptr, false};
  EXPECT_TRUE(authorize(user("alice"), none, object("s3:PutObject", "k")).is_ok());
  EXPECT_EQ(authorize(user("bob"), none, object("s3:GetObject", "k")).reason(), "AccessDenied");
  EXPECT_EQ(authorize(anonymous(), none, object("s3:GetObject", "k")).reason(), "AccessDenied");
  const BucketAccess legacy{"", nullptr, false};  // made before buckets had owners
  EXPECT_EQ(authorize(user("alice"), legacy, object("s3:GetObject", "k")).reason(), "AccessDenied");
  EXPECT_TRUE(authorize(admin(), legacy, object("s3:GetObject", "k")).is_ok());
  const BucketAccess public_read{"alice", nullptr, true};
  EXPECT_TRUE(authorize(anonymous(), public_read, object("s3:GetObject", "k")).is_ok());
  EXPECT_TRUE(authorize(anonymous(), public_read, bucket_request("s3:ListBucket")).is_ok());
  EXPECT_EQ(authorize(anonymous(), public_read, object("s3:PutObject", "k")).reason(), "AccessDenied");
}

TEST(PolicyTest, NotActionAndWildcards) {
  const wire::Policy policy = parse(R"({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3:Get*", "Resource": ["arn:aws:s3:::data/img-??.jpg"]},
    {"Effect": "Deny", "Principal": {"AWS": "bob"}, "NotAction": ["s3:Get*", "s3:List*"], "Resource": "arn:aws:s3:::data/*"}]})");
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:GetObject", "img-01.jpg")), Effect::kAllow);
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:getobject", "img-01.jpg")), Effect::kAllow);  // actions fold case
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:GetObject", "img-001.jpg")), Effect::kNone);
  EXPECT_EQ(evaluate(policy, user("bob"), object("s3:DeleteObject", "img-01.jpg")), Effect::kDeny);
}

TEST(PolicyTest, MalformedPoliciesAreRefusedWithTheirReason) {
  for (const std::string_view bad : {
           "not json", "[]", R"({"Version": "2012-10-17"})",
           R"({"Version": "2019-01-01", "Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Maybe", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "bob", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": {"Service": "x"}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": [], "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "x", "Extra": 1}})",
           R"({"Statement": {"Effect": "Allow", "NotPrincipal": "*", "Action": "s3:GetObject", "Resource": "x"}})",
       }) {
    EXPECT_EQ(wire::parse_policy_json(bad).error().reason(), "MalformedPolicy") << bad;
  }
  for (const std::string_view invalid : {
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObjekt", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "ec2:*", "Resource": "arn:aws:s3:::data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "data/*"}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*", "Condition": {"DateLessThan": {"aws:CurrentTime": "2030-01-01"}}}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*", "Condition": {"StringLike": {"s3:x-amz-acl": "a"}}}})",
           R"({"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/33"}}}})",
       }) {
    auto policy = wire::parse_policy_json(invalid);
    ASSERT_TRUE(policy.has_value()) << invalid;
    EXPECT_EQ(validate(*policy, "data").reason(), "MalformedPolicy") << invalid;
  }
}

TEST(PolicyTest, WildcardsAndAddresses) {
  EXPECT_TRUE(wildcard_match("a*b?c", "aXYZbQc"));
  EXPECT_TRUE(wildcard_match("*", ""));
  EXPECT_FALSE(wildcard_match("a*b", "a/c"));
  EXPECT_TRUE(wildcard_match("**a", "xxa"));
  EXPECT_FALSE(wildcard_match("abc", "ABC"));
  EXPECT_TRUE(wildcard_match("abc", "ABC", true));
  EXPECT_TRUE(ip_in_range("127.0.0.1", "127.0.0.0/8"));
  EXPECT_TRUE(ip_in_range("127.0.0.1", "127.0.0.1"));
  EXPECT_FALSE(ip_in_range("128.0.0.1", "127.0.0.0/8"));
  EXPECT_TRUE(ip_in_range("0.0.0.0", "0.0.0.0/0"));
  EXPECT_TRUE(ip_in_range("::1", "::1/128"));
  EXPECT_TRUE(ip_in_range("::ffff:10.1.2.3", "10.0.0.0/8"));
  EXPECT_TRUE(ip_in_range("fe80::1:2", "fe80::/10"));
  EXPECT_FALSE(ip_in_range("127.0.0.1", "::1/128"));
  EXPECT_FALSE(ip_in_range("1.2.3", "1.2.3.0/24"));
  EXPECT_FALSE(ip_in_range("1.2.3.4", "1.2.3.0/x"));
  EXPECT_FALSE(ip_in_range("1:2:3:4:5:6:7:8:9", "::/0"));
  EXPECT_FALSE(ip_in_range("1::2::3", "::/0"));
}

}  // namespace
}  // namespace silo::access
