#include "cluster/names.h"

#include <gtest/gtest.h>

namespace silo::cluster {
namespace {

TEST(NamesTest, BucketNames) {
  for (const std::string& good : {std::string("abc"), std::string("my-bucket.v2"), std::string("0ab"),
                                 std::string(63, 'a')}) {
    EXPECT_TRUE(validate_bucket_name(good).is_ok()) << good;
  }
  for (const char* bad : {"ab", "Abc", "a_b", "-ab", "ab-", "a..b", "192.168.0.1", "a b", ""}) {
    EXPECT_FALSE(validate_bucket_name(bad).is_ok()) << bad;
  }
  EXPECT_FALSE(validate_bucket_name(std::string(64, 'a')).is_ok());
}

TEST(NamesTest, ObjectNames) {
  for (const char* good : {"a", "a/b", "../../etc/passwd", "with space", "100%", "ünï/cødé"}) {
    EXPECT_TRUE(validate_object_name(good).is_ok()) << good;
  }
  EXPECT_TRUE(validate_object_name(std::string(1024, 'x')).is_ok());
  EXPECT_FALSE(validate_object_name(std::string(1025, 'x')).is_ok());
  EXPECT_FALSE(validate_object_name("").is_ok());
  EXPECT_FALSE(validate_object_name(std::string("a\0b", 3)).is_ok());
}

}  // namespace
}  // namespace silo::cluster
