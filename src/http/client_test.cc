#include "http/client.h"

#include <gtest/gtest.h>

namespace silo::http {
namespace {

TEST(EndpointTest, ParsesHostAndPort) {
  Result<Endpoint> e = Endpoint::parse("http://127.0.0.1:9000");
  ASSERT_TRUE(e) << e.status();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 9000);
  EXPECT_EQ(e->to_string(), "127.0.0.1:9000");
  EXPECT_EQ(Endpoint::parse("http://node-1.local/")->port, 80);
  EXPECT_EQ(Endpoint::parse("http://[::1]:8080")->to_string(), "[::1]:8080");
}

TEST(EndpointTest, HttpsMeansTlsOnPort443ByDefault) {
  Result<Endpoint> e = Endpoint::parse("https://s3.example.com");
  ASSERT_TRUE(e) << e.status();
  EXPECT_TRUE(e->is_tls);
  EXPECT_EQ(e->port, 443);
  EXPECT_EQ(e->to_string(), "s3.example.com:443");
  Result<Endpoint> local = Endpoint::parse("https://127.0.0.1:9443");
  ASSERT_TRUE(local) << local.status();
  EXPECT_TRUE(local->is_tls);
  EXPECT_EQ(local->port, 9443);
  EXPECT_FALSE(Endpoint::parse("http://127.0.0.1:9000")->is_tls);
}

TEST(EndpointTest, RejectsGarbage) {
  for (const std::string_view url : {"", "127.0.0.1:9000", "http://", "http://:80", "http://h:",
                                     "http://h:0", "http://h:70000", "http://h:12x", "ftp://h",
                                     "http://a b:1", "http://h:1/path", "http://[::1"}) {
    Result<Endpoint> e = Endpoint::parse(url);
    ASSERT_FALSE(e) << url;
    EXPECT_EQ(e.error().code(), Code::kInvalidArgument) << url;
  }
}

}  // namespace
}  // namespace silo::http
