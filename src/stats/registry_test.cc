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

TEST(RegistryTest, LabelValuesAreEscaped) {
  EXPECT_EQ(label("mountpath", "/mnt/d1"), R"(mountpath="/mnt/d1")");
  EXPECT_EQ(label("p", "a\"b\\c\nd"), R"(p="a\"b\\c\nd")");
}

TEST(RegistryTest, HistogramsAndGaugeFamiliesRenderAsPrometheusReadsThem) {
  Registry r;
  Histogram& gets = r.histogram("silo_http_request_duration_seconds", "Request time.", R"(op="get")");
  gets.observe(0.0005);
  gets.observe(0.02);
  gets.observe(60);
  EXPECT_EQ(&r.histogram("silo_http_request_duration_seconds", "Request time.", R"(op="get")"), &gets);
  r.histogram("silo_http_request_duration_seconds", "Request time.", R"(op="put")").observe(1);
  r.gauge_family("silo_mountpath_available_bytes", "Free bytes.", [] {
    return std::vector<LabeledValue>{{R"(mountpath="/a")", 10}, {R"(mountpath="/b")", 20}};
  });
  const std::string text = r.render();
  EXPECT_NE(text.find("# TYPE silo_http_request_duration_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(text.find("# HELP silo_http_request_duration_seconds"),
            text.rfind("# HELP silo_http_request_duration_seconds"));
  EXPECT_NE(text.find("silo_http_request_duration_seconds_bucket{op=\"get\",le=\"0.001\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("silo_http_request_duration_seconds_bucket{op=\"get\",le=\"0.025\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("silo_http_request_duration_seconds_bucket{op=\"get\",le=\"30\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("silo_http_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("silo_http_request_duration_seconds_count{op=\"get\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("silo_http_request_duration_seconds_sum{op=\"put\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE silo_mountpath_available_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("silo_mountpath_available_bytes{mountpath=\"/b\"} 20\n"), std::string::npos);
}

}  // namespace
}  // namespace silo::stats
