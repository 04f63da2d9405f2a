#include "wire/codec.h"

#include <gtest/gtest.h>

namespace silo::wire {
namespace {

TEST(CodecTest, RoundTripsNodeMap) {
  NodeMap map;
  map.set_version(7);
  map.set_primary_id("p1");
  auto* node = map.add_nodes();
  node->set_id("t1");
  node->set_role(NODE_ROLE_TARGET);
  node->set_url("http://127.0.0.1:9001");
  const auto decoded = decode<NodeMap>(encode(map), Source::kDisk);
  ASSERT_TRUE(decoded.has_value()) << decoded.status();
  EXPECT_EQ(decoded->version(), 7u);
  EXPECT_EQ(decoded->nodes(0).url(), "http://127.0.0.1:9001");
  EXPECT_EQ(decoded->format_version(), kFormat<NodeMap>);
}

TEST(CodecTest, RejectsUnknownFormatVersion) {
  ObjectRecord record;
  record.set_format_version(99);
  const auto decoded = decode<ObjectRecord>(record.SerializeAsString(), Source::kDisk);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_EQ(decoded.error().code(), Code::kDataLoss);
}

TEST(CodecTest, RejectsGarbageWithoutCrashing) {
  const std::string garbage = "\xff\xff\xff\xff\x0f garbage";
  const auto decoded = decode<BucketMap>(garbage, Source::kNetwork);
  ASSERT_FALSE(decoded.has_value());
  EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace silo::wire
