#include "stats/registry.h"

#include <gtest/gtest.h>

namespace silo::stats {
namespace {

TEST(RegistryTest, RendersPrometheusText) {
  Registry r;
  r.counter("silo_requests_total", "Requests served.", R"(op="get")").add(3);
  r.counter("silo_requests_total", "Requests served.", R"(op="put")").add();
  r.counter("silo_requests_total", "Requests served.", R"(op="get")").add();
  r.gauge("silo_connections", "Open connections.", [] { return 2.0; });
  const std::string text = r.render();
  EXPECT_NE(text.find("# TYPE silo_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("silo_requests_total{op=\"get\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("silo_requests_total{op=\"put\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("silo_connections 2\n"), std::string::npos);
  EXPECT_EQ(text.find("# HELP silo_requests_total"), text.rfind("# HELP silo_requests_total"));
}

}  // namespace
}  // namespace silo::stats
