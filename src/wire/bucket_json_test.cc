#include "wire/bucket_json.h"

#include <gtest/gtest.h>

#include "wire/codec.h"
#include "wire/json.h"

namespace silo::wire {
namespace {

Bucket plain_bucket() {
  Bucket b;
  b.set_name("photos");
  b.set_id(17);
  b.set_created_unix_nanos(1'700'000'000'000'000'000);
  b.mutable_props()->set_durability(DURABILITY_PAGE_CACHE);
  b.mutable_props()->set_copies(3);
  b.mutable_props()->set_write_mode(WRITE_MODE_ASYNC);
  b.mutable_props()->set_skip_read_verify(true);
  b.mutable_props()->set_anonymous_read(true);
  b.mutable_props()->set_versioning("Suspended");
  return b;
}

Bucket remote_ec_bucket() {
  Bucket b;
  b.set_name("cache");
  b.set_id(18);
  BucketProps& p = *b.mutable_props();
  p.mutable_ec()->set_data(4);
  p.mutable_ec()->set_parity(2);
  p.mutable_ec()->set_min_size(65536);
  BackendProps& backend = *p.mutable_backend();
  backend.set_provider("s3");
  backend.set_bucket("upstream");
  backend.set_endpoint("http://127.0.0.1:9000");
  backend.set_region("eu-west-1");
  backend.set_access_key("AK");
  backend.set_secret_key("the secret");
  backend.set_revalidate(true);
  return b;
}

TEST(BucketJsonTest, DecodesWhatTheProxyEncodes) {
  auto plain = parse_bucket_json(bucket_json(plain_bucket()));
  ASSERT_TRUE(plain.has_value()) << plain.error();
  BucketEntry want;
  want.name = "photos";
  want.id = 17;
  want.created_unix_nanos = 1'700'000'000'000'000'000;
  want.durability = "page_cache";
  want.anonymous_read = true;
  want.versioning = "Suspended";
  want.copies = 3;
  want.write = "async";
  want.verify_reads = true;  // skip_read_verify is ignored: every read is verified
  EXPECT_EQ(*plain, want);
  EXPECT_FALSE(plain->is_remote());

  auto remote = parse_bucket_json(bucket_json(remote_ec_bucket()));
  ASSERT_TRUE(remote.has_value()) << remote.error();
  EXPECT_EQ(remote->durability, "default");
  EXPECT_EQ(remote->copies, 1u);
  EXPECT_EQ(remote->write, "sync");
  EXPECT_TRUE(remote->verify_reads);
  EXPECT_EQ(remote->ec_data, 4u);
  EXPECT_EQ(remote->ec_parity, 2u);
  EXPECT_EQ(remote->ec_min_size, 65536u);
  EXPECT_TRUE(remote->is_remote());
  EXPECT_EQ(remote->backend_url, "s3://upstream");
  EXPECT_EQ(remote->backend_endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(remote->backend_region, "eu-west-1");
  EXPECT_EQ(remote->backend_access_key, "AK");
  EXPECT_EQ(remote->backend_secret_key, kMaskedSecret);  // never the secret
  EXPECT_TRUE(remote->backend_revalidate);
}

TEST(BucketJsonTest, ListRoundTrip) {
  BucketMap map;
  map.set_version(9);
  *map.add_buckets() = plain_bucket();
  *map.add_buckets() = remote_ec_bucket();
  auto decoded = parse_bucket_list_json(bucket_list_json(map));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[0], *parse_bucket_json(bucket_json(map.buckets(0))));
  EXPECT_EQ((*decoded)[1], *parse_bucket_json(bucket_json(map.buckets(1))));
}

TEST(BucketJsonTest, MalformedNamesTheDocumentAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "a bucket: not valid JSON"},
      {R"({"name": "b", "id": 1})", "a bucket: 'props' is missing"},
      {R"({"name": "b", "id": 1, "props": {"durability": "fsync", "write": "sync"}})",
       "a bucket: 'props.copies' is missing"},
      {R"({"name": "b", "id": 1, "props": {"durability": "fsync", "write": "sync", "copies": 4294967296}})",
       "a bucket: 'props.copies' is out of range"},
      {R"({"name": "b", "id": 1, "props": {"durability": "fsync", "write": "sync", "copies": 1, "ec": 3}})",
       "a bucket: 'props.ec' must be an object"},
      {R"({"name": "b", "id": 1, "props": {"durability": "fsync", "write": "sync", "copies": 1,)"
       R"( "backend": {"url": "s3://x", "revalidate": "yes"}}})",
       "a bucket: 'props.backend.revalidate' must be true or false"},
      {R"({"name": "b", "id": "1"})", "a bucket: 'id' must be a non-negative integer"},
  };
  for (const auto& [text, message] : cases) {
    auto decoded = parse_bucket_json(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument) << text;
    EXPECT_EQ(decoded.error().message(), message) << text;
  }
  auto list = parse_bucket_list_json(R"({"version": 1, "buckets": {}})");
  ASSERT_FALSE(list.has_value());
  EXPECT_EQ(list.error().message(), "the bucket list: 'buckets' must be an array");
}

}  // namespace
}  // namespace silo::wire
