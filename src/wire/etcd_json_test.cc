#include "wire/etcd_json.h"

#include <gtest/gtest.h>

namespace silo::wire {
namespace {

TEST(EtcdJsonTest, RangeAnswerDecodesKeysValuesAndStringRevisions) {
  // As etcd 3.4's gateway writes it: int64 as strings, bytes as base64.
  const std::string body =
      R"({"header":{"cluster_id":"1","revision":"7"},"kvs":[{"key":"L3NpbG8vcHJpbWFyeQ==",)"
      R"("create_revision":"2","mod_revision":"5","version":"1","value":"cDE=","lease":"9"}],"count":"1"})";
  int64_t revision = 0;
  auto kvs = parse_etcd_range(body, &revision);
  ASSERT_TRUE(kvs.has_value()) << kvs.error();
  EXPECT_EQ(revision, 7);
  ASSERT_EQ(kvs->size(), 1u);
  EXPECT_EQ((*kvs)[0].key, "/silo/primary");
  EXPECT_EQ((*kvs)[0].value, "p1");
  EXPECT_EQ((*kvs)[0].create_revision, 2);
  EXPECT_EQ((*kvs)[0].mod_revision, 5);
  EXPECT_EQ((*kvs)[0].lease, 9);
  // No kvs: an empty range.
  auto none = parse_etcd_range(R"({"header":{"revision":"3"}})", nullptr);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(EtcdJsonTest, BadAnswersAreErrorsNotCrashes) {
  EXPECT_FALSE(parse_etcd_range("<html>", nullptr).has_value());
  EXPECT_FALSE(parse_etcd_range(R"({"kvs":[{"key":"***"}]})", nullptr).has_value());
  EXPECT_FALSE(parse_etcd_lease_grant(R"({"header":{}})").has_value());  // no lease id
  EXPECT_FALSE(parse_etcd_txn("[1,2]").has_value());
}

TEST(EtcdJsonTest, TxnRequestAndAnswer) {
  std::vector<EtcdCompare> compares;
  compares.push_back({"/silo/primary", EtcdCompare::Target::kCreateRevision, 0, ""});
  compares.push_back({"/silo/maps/node", EtcdCompare::Target::kModRevision, 12, ""});
  std::vector<EtcdPut> puts;
  puts.push_back({"/silo/primary", "p2", 77});
  const std::string request = etcd_txn_request(compares, puts);
  EXPECT_NE(request.find(R"("target":"CREATE")"), std::string::npos);
  EXPECT_NE(request.find(R"("create_revision":"0")"), std::string::npos);
  EXPECT_NE(request.find(R"("mod_revision":"12")"), std::string::npos);
  EXPECT_NE(request.find(R"("lease":"77")"), std::string::npos);
  EXPECT_NE(request.find(R"("value":"cDI=")"), std::string::npos);

  auto won = parse_etcd_txn(R"({"header":{"revision":"13"},"succeeded":true})");
  ASSERT_TRUE(won.has_value());
  EXPECT_TRUE(won->succeeded);
  EXPECT_EQ(won->revision, 13);
  auto lost = parse_etcd_txn(R"({"header":{"revision":"13"}})");  // false is left out
  ASSERT_TRUE(lost.has_value());
  EXPECT_FALSE(lost->succeeded);
}

TEST(EtcdJsonTest, LeaseAnswers) {
  auto id = parse_etcd_lease_grant(R"({"ID":"7587899107866070533","TTL":"3"})");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*id, 7587899107866070533);
  EXPECT_EQ(*parse_etcd_keepalive(R"({"result":{"ID":"1","TTL":"3"}})"), 3);
  EXPECT_EQ(*parse_etcd_keepalive(R"({"result":{"ID":"1"}})"), 0);  // expired
  EXPECT_EQ(etcd_lease_request(5), R"({"ID":"5"})");
}

}  // namespace
}  // namespace silo::wire
