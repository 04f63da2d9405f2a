#include "wire/json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace silo::wire {
namespace {

ListEntry entry(std::string name, uint64_t size) {
  ListEntry e;
  e.set_name(std::move(name));
  e.set_size(size);
  e.set_mtime_unix_nanos(1795441725943253063);
  e.set_md5_hex("12c5bf8df38080624cb9fa857d74cf2e");
  return e;
}

TEST(JsonTest, ObjectListIsValidJsonWithEveryField) {
  std::vector<ListEntry> entries = {entry("a/b c", 1), entry("quote\"back\\slash\ttab", 2),
                                    entry("caf\xc3\xa9", 3), entry(std::string("bad\xff", 4), 4)};
  const auto parsed = nlohmann::json::parse(object_list_json(entries, "746f6b"));
  EXPECT_EQ(parsed["next_token"], "746f6b");
  ASSERT_EQ(parsed["objects"].size(), 4u);
  EXPECT_EQ(parsed["objects"][0]["name"], "a/b c");
  EXPECT_EQ(parsed["objects"][0]["size"], 1);
  EXPECT_EQ(parsed["objects"][0]["mtime"], 1795441725943253063);
  EXPECT_EQ(parsed["objects"][0]["etag"], "12c5bf8df38080624cb9fa857d74cf2e");
  EXPECT_EQ(parsed["objects"][1]["name"], "quote\"back\\slash\ttab");
  EXPECT_EQ(parsed["objects"][2]["name"], "caf\xc3\xa9");
  EXPECT_EQ(parsed["objects"][3]["name"], "bad\xef\xbf\xbd");  // invalid UTF-8 replaced
}

TEST(JsonTest, EmptyObjectList) {
  const auto parsed = nlohmann::json::parse(object_list_json({}, ""));
  EXPECT_TRUE(parsed["objects"].empty());
  EXPECT_EQ(parsed["next_token"], "");
}


TEST(JsonTest, BucketPropsNameOneLayout) {
  auto coded = apply_bucket_props_json(R"({"ec": {"data": 4, "parity": 2, "min_size": 65536}})", {});
  ASSERT_TRUE(coded.has_value()) << coded.error();
  EXPECT_TRUE(is_erasure_coded(*coded));
  EXPECT_EQ(holder_count(*coded), 6u);
  EXPECT_EQ(coded->ec().min_size(), 65536u);

  // From copies to ec and back: the property named replaces the other layout.
  BucketProps two;
  two.set_copies(2);
  auto to_ec = apply_bucket_props_json(R"({"ec": {"data": 2, "parity": 1}})", two);
  ASSERT_TRUE(to_ec.has_value()) << to_ec.error();
  EXPECT_EQ(copies_of(*to_ec), 1u);
  EXPECT_EQ(holder_count(*to_ec), 3u);
  auto to_copies = apply_bucket_props_json(R"({"copies": 3})", *to_ec);
  ASSERT_TRUE(to_copies.has_value()) << to_copies.error();
  EXPECT_FALSE(is_erasure_coded(*to_copies));
  EXPECT_EQ(holder_count(*to_copies), 3u);
  auto off = apply_bucket_props_json(R"({"ec": null})", *to_ec);
  ASSERT_TRUE(off.has_value()) << off.error();
  EXPECT_FALSE(is_erasure_coded(*off));

  for (const char* bad : {R"({"ec": {"data": 0, "parity": 1}})", R"({"ec": {"data": 2}})",
                          R"({"ec": {"data": 30, "parity": 3}})", R"({"ec": {"data": 2, "parity": 1, "x": 1}})",
                          R"({"ec": {"data": -2, "parity": 1}})", R"({"ec": "4+2"})",
                          R"({"ec": {"data": 2, "parity": 1}, "copies": 2})"}) {
    auto got = apply_bucket_props_json(bad, {});
    ASSERT_FALSE(got.has_value()) << bad;
    EXPECT_EQ(got.error().code(), Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace silo::wire

namespace silo::wire {
namespace {

TEST(JsonTest, BackendPropsMergeAndNeverShowTheSecret) {
  auto props = apply_bucket_props_json(
      R"({"backend": {"url": "s3://data-1", "endpoint": "https://minio:9000", "access_key": "AK", "secret_key": "SK"}})",
      BucketProps());
  ASSERT_TRUE(props.has_value()) << props.status();
  EXPECT_TRUE(is_remote(*props));
  EXPECT_EQ(props->backend().provider(), "s3");
  EXPECT_EQ(props->backend().bucket(), "data-1");
  Bucket bucket;
  bucket.set_name("b");
  *bucket.mutable_props() = *props;
  const std::string shown = bucket_json(bucket);
  EXPECT_EQ(shown.find("\"SK\""), std::string::npos) << shown;
  EXPECT_NE(shown.find("s3://data-1"), std::string::npos) << shown;
  // Naming one key changes that key only; the mask shown keeps the secret.
  auto changed = apply_bucket_props_json(R"({"backend": {"revalidate": true, "secret_key": "********"}})", *props);
  ASSERT_TRUE(changed.has_value()) << changed.status();
  EXPECT_TRUE(changed->backend().revalidate());
  EXPECT_EQ(changed->backend().secret_key(), "SK");
  EXPECT_EQ(changed->backend().endpoint(), "https://minio:9000");
  for (const char* bad : {R"({"backend": {"url": "http://x"}})", R"({"backend": {"url": "s3://A_B!"}})",
                          R"({"backend": {"endpoint": "minio:9000"}})", R"({"backend": {"region": 5}})",
                          R"({"backend": {"tls": true}})", R"({"backend": "s3://x"})"}) {
    EXPECT_FALSE(apply_bucket_props_json(bad, *props).has_value()) << bad;
  }
  EXPECT_FALSE(apply_bucket_props_json(R"({"backend": {"endpoint": "http://x"}})", BucketProps()).has_value())
      << "a backend needs a url";
}

TEST(JsonTest, EvictAndPrefetchRequestsTakeOneSelection) {
  auto evict = parse_evict_request_json(R"({"template": "a-{0..2}", "keep_props": true})");
  ASSERT_TRUE(evict.has_value()) << evict.status();
  ASSERT_TRUE(selected_names(evict->selection).has_value());
  EXPECT_EQ(*selected_names(evict->selection), (std::vector<std::string>{"a-0", "a-1", "a-2"}));
  auto round_trip = parse_evict_request_json(evict_request_json(*evict));
  ASSERT_TRUE(round_trip.has_value());
  EXPECT_EQ(round_trip->selection.name_template, "a-{0..2}");
  EXPECT_TRUE(parse_evict_request_json("").has_value()) << "empty: the whole bucket";
  for (const char* bad : {R"({"prefix": "a", "names": ["b"]})", R"({"template": "{3..1}"})", R"({"names": [""]})",
                          R"({"keep_props": false, "prefix": "a"})", R"({"bogus": 1})", "[]"}) {
    EXPECT_FALSE(parse_evict_request_json(bad).has_value()) << bad;
  }
  auto prefetch = parse_job_request_json(R"({"kind": "prefetch", "bucket": "b", "names": ["x", "y"], "workers": 4})");
  ASSERT_TRUE(prefetch.has_value()) << prefetch.status();
  EXPECT_EQ(prefetch->selection.names.size(), 2u);
  EXPECT_EQ(prefetch->workers, 4u);
  EXPECT_EQ(parse_job_request_json(R"({"kind": "rebalance"})").value().kind, "rebalance");
  for (const char* bad : {R"({"kind": "prefetch"})", R"({"kind": "prefetch", "bucket": "b", "workers": 0})",
                          R"({"kind": "prefetch", "bucket": "b", "prefix": "p", "template": "t"})",
                          R"({"kind": "nope"})", R"({"kind": "rebalance", "bucket": "b"})"}) {
    EXPECT_FALSE(parse_job_request_json(bad).has_value()) << bad;
  }
}

TEST(JsonTest, ErrorRoundTrip) {
  for (const Status& status : {Status::failed_precondition("bucket b is not empty"),
                               Status::not_found("no \"x\"\n"), Status(Code::kUnauthenticated, "")}) {
    auto decoded = parse_error_json(error_json(status));
    ASSERT_TRUE(decoded.has_value()) << decoded.error();
    EXPECT_EQ(decoded->code, status.code());
    EXPECT_EQ(decoded->message, status.message());
  }
  auto unknown = parse_error_json(R"({"error": {"code": "FROM_THE_FUTURE", "message": "m"}})");
  ASSERT_TRUE(unknown.has_value()) << unknown.error();
  EXPECT_EQ(unknown->code, std::nullopt);
  EXPECT_EQ(unknown->message, "m");
  const std::pair<const char*, const char*> bad[] = {
      {"<html>", "an error answer: not valid JSON"},
      {R"({"code": "NOT_FOUND"})", "an error answer: 'error' is missing"},
      {R"({"error": {"code": 5}})", "an error answer: 'error.code' must be a string"},
  };
  for (const auto& [text, message] : bad) {
    auto decoded = parse_error_json(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().message(), message) << text;
  }
}

TEST(JsonTest, EvictedRoundTrip) {
  EXPECT_EQ(evicted_json(5), R"({"evicted":5})");  // as target/remote.cc writes it
  EXPECT_EQ(evicted_json(5, true), R"({"bucket_kept":true,"evicted":5})");
  for (const uint64_t n : {uint64_t{0}, uint64_t{42}, UINT64_MAX}) {
    EXPECT_EQ(parse_evicted_json(evicted_json(n)).value(), n);
    EXPECT_EQ(parse_evicted_json(evicted_json(n, false)).value(), n);
  }
  auto missing = parse_evicted_json(R"({"bucket_kept": true})");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "an evict answer: 'evicted' is missing");
  EXPECT_FALSE(parse_evicted_json(R"({"evicted": -1})").has_value());
}

TEST(JsonTest, ClientSettings) {
  auto settings = parse_client_settings_json(
      R"({"endpoint": "http://h:1", "access_key": "a", "secret_key": null, "color": true})");
  ASSERT_TRUE(settings.has_value()) << settings.error();
  EXPECT_EQ(*settings, (ClientSettings{"http://h:1", "a", ""}));
  EXPECT_EQ(*parse_client_settings_json("{}"), ClientSettings{});
  auto wrong = parse_client_settings_json(R"({"endpoint": 8080})");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().message(), "the settings: 'endpoint' must be a string");
  EXPECT_FALSE(parse_client_settings_json(R"(["x"])").has_value());
}

TEST(JsonTest, ValueAtWritesCompactJson) {
  const std::string doc = R"({"cluster": {"cache": {"high_wm": 90, "s3": {"region": "a\"b\n"}}, "flag": true,
                               "list": ["x", 2, 0.85], "none": null, "z": {"b": 1, "a": 2}}})";
  EXPECT_EQ(json_value_at(doc, "cluster.cache.high_wm").value(), "90");
  EXPECT_EQ(json_value_at(doc, "cluster.cache.s3").value(), R"({"region":"a\"b\u000a"})");
  EXPECT_EQ(json_value_at(doc, "cluster.flag").value(), "true");
  EXPECT_EQ(json_value_at(doc, "cluster.list").value(), R"(["x",2,0.85])");
  EXPECT_EQ(json_value_at(doc, "cluster.z").value(), R"({"a":2,"b":1})");  // key order
  EXPECT_EQ(json_value_at(doc, "cluster.none").value(), "");
  EXPECT_EQ(json_value_at(doc, "cluster.cache.high_wm.deeper").value(), "");
  EXPECT_EQ(json_value_at(doc, "cluster.missing").value(), "");
  EXPECT_EQ(json_value_at("\"caf\xc3\xa9\"", "").value(), "\"caf\xc3\xa9\"");
  EXPECT_FALSE(json_value_at("{oops", "a").has_value());
  EXPECT_TRUE(is_json("85") && is_json("\"redirect\"") && is_json("[1]") && is_json("null") && is_json(" true "));
  EXPECT_FALSE(is_json("redirect") || is_json("") || is_json("1 2") || is_json("{"));
}

}  // namespace
}  // namespace silo::wire
