// Bucket operations of the native API through the primary proxy.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "base/text.h"

namespace silo::integration {
namespace {

bool has_bucket(const std::vector<client::BucketEntry>& buckets, std::string_view name) {
  return std::any_of(buckets.begin(), buckets.end(), [&](const auto& b) { return b.name == name; });
}

TEST(BucketTest, CreateListPropsAndDelete) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  client::Client& c = cluster->client();

  ASSERT_OK(c.create_bucket("photos"));
  ASSERT_OK(c.create_bucket("logs-2024.v1", R"({"durability":"page_cache"})"));
  EXPECT_CODE(c.create_bucket("photos"), Code::kAlreadyExists);
  ASSERT_OK_AND_ASSIGN(const client::Response dup, c.request(http::Method::kPut, "/v1/buckets/photos"));
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_NE(dup.body.find("\"error\""), std::string::npos) << "errors are JSON: " << dup.body;

  const std::string too_long(64, 'a');
  for (const std::string& bad : {std::string("ab"), std::string("Photos"), std::string("a_b"), std::string("-abc"),
                                 std::string("abc-"), std::string("a..b"), std::string("192.168.1.1"),
                                 std::string("sp ace"), too_long}) {
    EXPECT_CODE(c.create_bucket(bad), Code::kInvalidArgument);
    auto raw = c.request(http::Method::kPut, "/v1/buckets/" + text::percent_encode(bad));
    ASSERT_OK(raw);
    EXPECT_EQ(raw->status, 400) << "bucket name '" << bad << "': " << raw->body;
  }

  ASSERT_OK_AND_ASSIGN(const auto buckets, c.list_buckets());
  EXPECT_EQ(buckets.size(), 2u);
  EXPECT_TRUE(has_bucket(buckets, "photos"));
  EXPECT_TRUE(has_bucket(buckets, "logs-2024.v1"));
  EXPECT_OK(c.head_bucket("photos"));
  EXPECT_CODE(c.head_bucket("nothing-here"), Code::kNotFound);

  // Properties: as created, then changed, and bad bodies refused without a change.
  ASSERT_OK_AND_ASSIGN(const client::BucketEntry logs, c.bucket_props("logs-2024.v1"));
  EXPECT_EQ(logs.durability, "page_cache");
  ASSERT_OK_AND_ASSIGN(const client::BucketEntry photos, c.bucket_props("photos"));
  EXPECT_EQ(photos.name, "photos");
  EXPECT_NE(photos.durability, "page_cache");
  ASSERT_OK(c.set_bucket_props("photos", R"({"durability":"page_cache"})"));
  ASSERT_OK_AND_ASSIGN(const client::BucketEntry changed, c.bucket_props("photos"));
  EXPECT_EQ(changed.durability, "page_cache");
  for (const char* bad : {R"({"durability":"never"})", R"({"colour":"red"})", "not json", R"(["fsync"])"}) {
    EXPECT_CODE(c.set_bucket_props("photos", bad), Code::kInvalidArgument);
  }
  EXPECT_CODE(c.create_bucket("bad-props", R"({"durability":42})"), Code::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(const client::BucketEntry unchanged, c.bucket_props("photos"));
  EXPECT_EQ(unchanged.durability, "page_cache") << "a refused props body changed the bucket";
  EXPECT_CODE(c.bucket_props("nothing-here"), Code::kNotFound);
  EXPECT_CODE(c.set_bucket_props("nothing-here", R"({"durability":"fsync"})"), Code::kNotFound);

  // Delete: refused while an object is in it, 204 once empty, 404 after.
  ASSERT_OK(c.put("photos", "cat.jpg", "meow"));
  EXPECT_CODE(c.delete_bucket("photos"), Code::kFailedPrecondition);
  ASSERT_OK_AND_ASSIGN(const client::Response busy, c.request(http::Method::kDelete, "/v1/buckets/photos"));
  EXPECT_EQ(busy.status, 409) << busy.body;
  ASSERT_OK(c.remove("photos", "cat.jpg"));
  EXPECT_CODE(c.remove("photos", "cat.jpg"), Code::kNotFound);
  ASSERT_OK_AND_ASSIGN(const client::Response deleted, c.request(http::Method::kDelete, "/v1/buckets/photos"));
  EXPECT_EQ(deleted.status, 204) << deleted.body;
  EXPECT_CODE(c.delete_bucket("photos"), Code::kNotFound);
  EXPECT_CODE(c.head_bucket("photos"), Code::kNotFound);
  EXPECT_CODE(c.get("photos", "cat.jpg"), Code::kNotFound);
  EXPECT_CODE(c.put("photos", "cat.jpg", "meow"), Code::kNotFound);
  EXPECT_CODE(c.list("photos"), Code::kNotFound);
  ASSERT_OK_AND_ASSIGN(const auto remaining, c.list_buckets());
  EXPECT_FALSE(has_bucket(remaining, "photos"));
  EXPECT_TRUE(has_bucket(remaining, "logs-2024.v1"));

  // A name that is free again can be reused, and starts empty.
  ASSERT_OK(c.create_bucket("photos"));
  ASSERT_OK_AND_ASSIGN(const client::ListPage page, c.list("photos"));
  EXPECT_TRUE(page.objects.empty()) << "a re-created bucket shows " << page.objects.size() << " old objects";
}

}  // namespace
}  // namespace silo::integration
