#include "http/route_table.h"

#include <gtest/gtest.h>

namespace silo::http {
namespace {

TEST(PathPatternTest, ExactSubtreeAndPrefix) {
  std::string_view rest = "unset";
  const PathPattern exact("/v1/cluster/map");
  EXPECT_TRUE(exact.matches("/v1/cluster/map", rest));
  EXPECT_EQ(rest, "");
  EXPECT_FALSE(exact.matches("/v1/cluster/map/", rest));
  EXPECT_FALSE(exact.matches("/v1/cluster", rest));

  const PathPattern subtree("/v1/jobs**");
  EXPECT_TRUE(subtree.matches("/v1/jobs", rest));
  EXPECT_EQ(rest, "");
  EXPECT_TRUE(subtree.matches("/v1/jobs/scrub-1/abort", rest));
  EXPECT_EQ(rest, "/scrub-1/abort");
  EXPECT_FALSE(subtree.matches("/v1/jobsx", rest)) << "a sibling is not under it";

  const PathPattern prefix("/v1/internal/objects/*");
  EXPECT_TRUE(prefix.matches("/v1/internal/objects/7/a/b", rest));
  EXPECT_EQ(rest, "7/a/b");
  EXPECT_TRUE(prefix.matches("/v1/internal/objects/", rest));
  EXPECT_EQ(rest, "");
  EXPECT_FALSE(prefix.matches("/v1/internal/objects", rest));
}

TEST(RouteTableTest, FirstMatchingRouteWinsAndMethodsFilter) {
  struct Context {};
  RouteTable<Context> table;
  int called = -1;
  auto handler = [&called](int id) {
    return [&called, id](Exchange&, const Context&, std::string_view) -> Awaitable<void> {
      called = id;
      co_return;
    };
  };
  table.add(Method::kPost, "/v1/keepalive", handler(0));
  table.add(std::nullopt, "/v1/internal/evict/*", handler(1));
  table.add(std::nullopt, "/v1/internal/*", handler(2));
  std::string_view rest;
  EXPECT_EQ(table.find(Method::kGet, "/v1/keepalive", rest), nullptr) << "only POST";
  EXPECT_NE(table.find(Method::kPost, "/v1/keepalive", rest), nullptr);
  const auto* evict = table.find(Method::kPost, "/v1/internal/evict/photos", rest);
  ASSERT_NE(evict, nullptr);
  EXPECT_EQ(rest, "photos");
  const auto* other = table.find(Method::kGet, "/v1/internal/list/photos", rest);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other, evict);
  EXPECT_EQ(rest, "list/photos");
  EXPECT_EQ(table.find(Method::kGet, "/v2/anything", rest), nullptr);
  EXPECT_EQ(called, -1) << "find() calls nothing";
}

TEST(PathPatternDeathTest, StarOnlyEndsAPattern) {
  EXPECT_DEATH(PathPattern("/v1/*/x"), "only ends");
  EXPECT_DEATH(PathPattern("v1/x"), "starts with");
}

}  // namespace
}  // namespace silo::http
