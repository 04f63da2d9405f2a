#include "http/route_table.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace silo::http {
namespace {

// An exchange that only has a request head: enough to call a route's handler.
class PathOnlyExchange : public Exchange {
 public:
  PathOnlyExchange(boost::asio::any_io_executor executor, Method method, std::string path)
      : executor_(std::move(executor)) {
    request_.method = method;
    request_.path = std::move(path);
  }
  const RequestHead& request() const override { return request_; }
  BodyReader& body() override { std::abort(); }
  ResponseWriter& response() override { std::abort(); }
  boost::asio::any_io_executor executor() override { return executor_; }

 private:
  boost::asio::any_io_executor executor_;
  RequestHead request_;
};

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

TEST(PathPatternTest, ParametersAreWholeNonEmptySegments) {
  std::string_view rest = "unset";
  PathParams params;
  const PathPattern wait("/v1/jobs/{id}/wait");
  ASSERT_TRUE(wait.matches("/v1/jobs/scrub-7/wait", rest, params));
  EXPECT_EQ(params.size(), 1u);
  EXPECT_EQ(params.get("id"), "scrub-7");
  EXPECT_EQ(rest, "");
  EXPECT_FALSE(wait.matches("/v1/jobs//wait", rest, params)) << "an empty segment is no id";
  EXPECT_FALSE(wait.matches("/v1/jobs/a/b/wait", rest, params)) << "an id is one segment";
  EXPECT_FALSE(wait.matches("/v1/jobs/a/wait/", rest, params)) << "exact: nothing may follow";
  EXPECT_FALSE(wait.matches("/v1/jobs/a", rest, params));

  const PathPattern two("/v1/buckets/{bucket}/objects/{name}");
  ASSERT_TRUE(two.matches("/v1/buckets/photos/objects/cat.jpg", rest, params));
  EXPECT_EQ(params.get("bucket"), "photos");
  EXPECT_EQ(params.get("name"), "cat.jpg");

  const PathPattern under("/v1/buckets/{bucket}**");
  ASSERT_TRUE(under.matches("/v1/buckets/photos/props", rest, params));
  EXPECT_EQ(params.get("bucket"), "photos");
  EXPECT_EQ(rest, "/props");
}

TEST(PathPatternTest, TailCapturesTheRestSlashesIncluded) {
  std::string_view rest;
  PathParams params;
  const PathPattern object("/v1/objects/{bucket}/{name...}");
  ASSERT_TRUE(object.matches("/v1/objects/photos/2024/a b/c.jpg", rest, params));
  EXPECT_EQ(params.get("bucket"), "photos");
  EXPECT_EQ(params.get("name"), "2024/a b/c.jpg");
  EXPECT_EQ(rest, "2024/a b/c.jpg");
  ASSERT_TRUE(object.matches("/v1/objects/photos/", rest, params))
      << "like '/*', the tail may be empty";
  EXPECT_EQ(params.get("name"), "");
  EXPECT_FALSE(object.matches("/v1/objects/photos", rest, params));

  const PathPattern any("/v1/users/{path...}");
  ASSERT_TRUE(any.matches("/v1/users/a/b", rest, params));
  EXPECT_EQ(params.get("path"), "a/b");
}

TEST(RouteTableTest, ParamHandlerGetsItsParametersSplit) {
  struct Context {
    int caller = 0;
  };
  RouteTable<Context> table;
  std::string seen;
  table.add(Method::kGet, "/v1/jobs/{id}/wait",
            RouteTable<Context>::ParamHandler([&seen](Exchange&, const Context& context,
                                                      const PathParams& params) -> Awaitable<void> {
              seen = std::string(params.get("id")) + " by " + std::to_string(context.caller);
              co_return;
            }));
  table.add(std::nullopt, "/v1/jobs/{path...}",
            RouteTable<Context>::ParamHandler(
                [&seen](Exchange&, const Context&, const PathParams& params) -> Awaitable<void> {
                  seen = "unknown " + std::string(params.get("path"));
                  co_return;
                }));
  const auto call = [&](Method method, const std::string& path) {
    std::string_view rest;
    const auto* handler = table.find(method, path, rest);
    if (handler == nullptr) return std::string("no route");
    boost::asio::io_context io;
    PathOnlyExchange exchange(io.get_executor(), method, path);
    const Context context{7};  // outlives the handler's coroutine, as the dispatcher's does
    boost::asio::co_spawn(io, (*handler)(exchange, context, rest), boost::asio::detached);
    io.run();
    return seen;
  };
  EXPECT_EQ(call(Method::kGet, "/v1/jobs/scrub-1/wait"), "scrub-1 by 7");
  EXPECT_EQ(call(Method::kPost, "/v1/jobs/scrub-1/wait"), "unknown scrub-1/wait")
      << "only GET waits";
  EXPECT_EQ(call(Method::kGet, "/v1/jobs/scrub-1/wait/x"), "unknown scrub-1/wait/x");
  EXPECT_EQ(call(Method::kGet, "/v1/jobsx"), "no route");
  ASSERT_NE(table.find_pattern(Method::kGet, "/v1/jobs/a/wait"), nullptr);
  EXPECT_EQ(table.find_pattern(Method::kGet, "/v1/jobs/a/wait")->text(), "/v1/jobs/{id}/wait");
  EXPECT_EQ(table.find_pattern(Method::kGet, "/v1/other"), nullptr);
}

TEST(PathPatternDeathTest, ParametersAreWholeSegmentsWithNames) {
  EXPECT_DEATH(PathPattern("/v1/jobs-{id}"), "whole segment");
  EXPECT_DEATH(PathPattern("/v1/{id}x/wait"), "whole segment");
  EXPECT_DEATH(PathPattern("/v1/{}/wait"), "without a name");
  EXPECT_DEATH(PathPattern("/v1/x}/wait"), "without '\\{'");
  EXPECT_DEATH(PathPattern("/{a}/{b}/{c}/{d}/{e}"), "too many");
  EXPECT_DEATH(PathPattern("/v1/x{rest...}"), "whole last segment");
  PathParams params;
  std::string_view rest;
  ASSERT_TRUE(PathPattern("/v1/{id}").matches("/v1/x", rest, params));
  EXPECT_DEATH(std::ignore = params.get("name"), "no path parameter");
}

TEST(PathPatternDeathTest, StarOnlyEndsAPattern) {
  EXPECT_DEATH(PathPattern("/v1/*/x"), "only ends");
  EXPECT_DEATH(PathPattern("v1/x"), "starts with");
}

}  // namespace
}  // namespace silo::http
