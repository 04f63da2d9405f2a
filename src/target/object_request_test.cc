// How native and S3 request heads become one ObjectRequest (object_request.h), and which
// bytes of an object a GET answers with: the object service relies on both front-ends
// filling it alike, and on each keeping its own rules (the native API has no conditions,
// S3 needs the request's checksums and directives).
#include "target/object_request.h"

#include <gtest/gtest.h>

#include "s3api/object_headers.h"

namespace silo::target {
namespace {

constexpr uint64_t kMaxObjectSize = 1000;

http::RequestHead head_of(http::Method method,
                          std::vector<std::pair<std::string, std::string>> headers = {}) {
  http::RequestHead head;
  head.method = method;
  head.method_text = std::string(http::method_name(method));
  for (auto& [name, value] : headers) head.headers.add(name, std::move(value));
  return head;
}

s3api::S3Request s3_of(s3::Op op, std::vector<std::pair<std::string, std::string>> query = {},
                         bool is_signed = true) {
  s3api::S3Request s3;
  s3.route = s3::Route{op, "bucket", "a/b", false};
  s3.query.params = std::move(query);
  if (is_signed) s3.auth = s3::Authenticated{};
  s3.request_id = "id";
  s3.resource = "/bucket/a/b";
  return s3;
}

void expect_error(const Status& s, Code code, std::string_view reason) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_EQ(s.reason(), reason) << s;
}

wire::ObjectRecord record_of(uint64_t size, std::vector<uint64_t> part_sizes = {}) {
  wire::ObjectRecord record;
  record.set_size(size);
  for (uint64_t p : part_sizes) record.add_parts()->set_size(p);
  return record;
}

TEST(NativeRequestTest, PutCarriesAttributesDigestAndLength) {
  auto head = head_of(http::Method::kPut, {{"Content-Type", "text/plain"},
                                           {"x-amz-meta-Color", "blue"},
                                           {s3api::kTagsHeader, "k=v"},
                                           {"x-amz-tagging", "ignored=1"},
                                           {"Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="},
                                           {"If-None-Match", "*"}});
  head.content_length = 10;
  auto request = parse_native_request(head, "bucket", "a/b", kMaxObjectSize);
  ASSERT_TRUE(request.has_value()) << request.status();
  EXPECT_EQ(request->op, ObjectOp::kPut);
  EXPECT_FALSE(request->is_s3());
  EXPECT_EQ(request->bucket, "bucket");
  EXPECT_EQ(request->name, "a/b");
  EXPECT_EQ(request->attributes.content_type(), "text/plain");
  EXPECT_EQ(request->attributes.user_metadata().at("color"), "blue");
  ASSERT_EQ(request->attributes.tags().size(), 1);  // X-Silo-Tagging; x-amz-tagging is S3's
  EXPECT_EQ(request->attributes.tags().at("k"), "v");
  EXPECT_EQ(request->expected_md5_hex, "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(request->expected_size, 10u);
  EXPECT_EQ(request->max_size, kMaxObjectSize);
  // The native API takes no conditions: a PUT never waits for get-from-neighbor.
  EXPECT_EQ(request->conditions, Preconditions{});
  EXPECT_FALSE(request->reads_existing());
  EXPECT_TRUE(request->checksums.empty());
}

TEST(NativeRequestTest, PutPastTheMaximumSizeIsRefused) {
  auto head = head_of(http::Method::kPut);
  head.content_length = kMaxObjectSize + 1;
  expect_error(parse_native_request(head, "bucket", "a", kMaxObjectSize).status(),
               Code::kInvalidArgument, "EntityTooLarge");
  head.content_length = kMaxObjectSize;
  EXPECT_TRUE(parse_native_request(head, "bucket", "a", kMaxObjectSize).has_value());
  head.content_length.reset();  // chunked: checked while receiving
  EXPECT_TRUE(parse_native_request(head, "bucket", "a", kMaxObjectSize).has_value());
}

TEST(NativeRequestTest, BadHeadersAndMethodsAreRefused) {
  expect_error(parse_native_request(head_of(http::Method::kPut, {{"Content-MD5", "not base64"}}),
                                    "b", "a", kMaxObjectSize)
                   .status(),
               Code::kInvalidArgument, "InvalidDigest");
  expect_error(parse_native_request(
                   head_of(http::Method::kPut, {{"x-amz-meta-big", std::string(3000, 'x')}}), "b",
                   "a", kMaxObjectSize)
                   .status(),
               Code::kInvalidArgument, "MetadataTooLarge");
  EXPECT_EQ(
      parse_native_request(head_of(http::Method::kPost), "b", "a", kMaxObjectSize).status().code(),
      Code::kInvalidArgument);
}

TEST(NativeRequestTest, ReadsKeepRangeAndChecksumModeAndIgnoreConditions) {
  auto get = parse_native_request(
      head_of(http::Method::kGet,
              {{"Range", "bytes=1-2"}, {"x-amz-checksum-mode", "yes"}, {"If-Match", "\"x\""}}),
      "b", "a", kMaxObjectSize);
  ASSERT_TRUE(get.has_value()) << get.status();
  EXPECT_EQ(get->op, ObjectOp::kGet);
  EXPECT_EQ(get->range, "bytes=1-2");
  EXPECT_TRUE(get->wants_checksums);  // any value, with a range too: CopyObject reads its source so
  EXPECT_EQ(get->conditions, Preconditions{});
  auto head = parse_native_request(head_of(http::Method::kHead), "b", "a", kMaxObjectSize);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->op, ObjectOp::kHead);
  EXPECT_FALSE(head->wants_checksums);
  EXPECT_FALSE(head->reads_record_only());  // a native HEAD opens the file, as its GET does
  auto remove = parse_native_request(head_of(http::Method::kDelete), "b", "a", kMaxObjectSize);
  ASSERT_TRUE(remove.has_value());
  EXPECT_EQ(remove->op, ObjectOp::kDelete);
}

TEST(S3RequestTest, GetCarriesConditionsChecksumModeAndOverrides) {
  const auto s3 =
      s3_of(s3::Op::kGetObject, {{"response-content-type", "text/csv"}, {"versionId", "null"}});
  auto request = parse_s3_request(
      head_of(http::Method::kGet, {{"If-Match", "\"e\""},
                                   {"If-Modified-Since", "Sun, 22 Nov 2026 13:45:01 GMT"},
                                   {"x-amz-checksum-mode", "ENABLED"}}),
      s3, kMaxObjectSize);
  ASSERT_TRUE(request.has_value()) << request.status();
  EXPECT_EQ(request->op, ObjectOp::kGet);
  EXPECT_EQ(request->s3, &s3);
  EXPECT_EQ(request->bucket, "bucket");
  EXPECT_EQ(request->name, "a/b");
  EXPECT_EQ(request->conditions.if_match, "\"e\"");
  EXPECT_EQ(request->conditions.if_modified_since, "Sun, 22 Nov 2026 13:45:01 GMT");
  EXPECT_FALSE(request->conditions.if_none_match);
  EXPECT_TRUE(request->wants_checksums);
  ASSERT_EQ(request->response_headers.size(), 1u);
  EXPECT_EQ(request->response_headers[0],
            (std::pair<std::string, std::string>{"Content-Type", "text/csv"}));
  EXPECT_FALSE(request->reads_existing());
}

TEST(S3RequestTest, ChecksumsAreShownOnlyForTheWholeObjectWhenEnabled) {
  const auto s3 = s3_of(s3::Op::kGetObject);
  auto ranged = parse_s3_request(
      head_of(http::Method::kGet, {{"x-amz-checksum-mode", "ENABLED"}, {"Range", "bytes=0-1"}}), s3,
      kMaxObjectSize);
  ASSERT_TRUE(ranged.has_value());
  EXPECT_FALSE(ranged->wants_checksums);
  EXPECT_EQ(ranged->range, "bytes=0-1");
  auto other = parse_s3_request(head_of(http::Method::kGet, {{"x-amz-checksum-mode", "yes"}}), s3,
                                kMaxObjectSize);
  ASSERT_TRUE(other.has_value());
  EXPECT_FALSE(other->wants_checksums);
  const auto part = s3_of(s3::Op::kGetObject, {{"partNumber", "2"}});
  auto by_part = parse_s3_request(head_of(http::Method::kGet, {{"x-amz-checksum-mode", "ENABLED"}}),
                                  part, kMaxObjectSize);
  ASSERT_TRUE(by_part.has_value()) << by_part.status();
  EXPECT_FALSE(by_part->wants_checksums);
  EXPECT_EQ(by_part->part_number, 2);
}

TEST(S3RequestTest, BadReadsAreRefused) {
  const auto part = s3_of(s3::Op::kGetObject, {{"partNumber", "1"}});
  expect_error(
      parse_s3_request(head_of(http::Method::kGet, {{"Range", "bytes=0-1"}}), part, kMaxObjectSize)
          .status(),
      Code::kInvalidArgument, "InvalidRequest");
  const auto bad_part = s3_of(s3::Op::kGetObject, {{"partNumber", "10001"}});
  expect_error(parse_s3_request(head_of(http::Method::kGet), bad_part, kMaxObjectSize).status(),
               Code::kInvalidArgument, "InvalidArgument");
  const auto anonymous =
      s3_of(s3::Op::kGetObject, {{"response-expires", "0"}}, /*is_signed=*/false);
  expect_error(parse_s3_request(head_of(http::Method::kGet), anonymous, kMaxObjectSize).status(),
               Code::kInvalidArgument, "InvalidRequest");
}

TEST(S3RequestTest, HeadReadsTheRecordOnly) {
  const auto s3 = s3_of(s3::Op::kHeadObject);
  auto request = parse_s3_request(head_of(http::Method::kHead), s3, kMaxObjectSize);
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->op, ObjectOp::kHead);
  EXPECT_TRUE(request->reads_record_only());
}

TEST(S3RequestTest, PutCarriesTagsConditionsAndChecksums) {
  const auto s3 = s3_of(s3::Op::kPutObject);
  auto request =
      parse_s3_request(head_of(http::Method::kPut, {{"x-amz-tagging", "a=1&b=2"},
                                                    {s3api::kTagsHeader, "ignored=1"},
                                                    {"If-None-Match", "*"},
                                                    {"x-amz-checksum-crc32", "AAAAAA=="},
                                                    {"x-amz-sdk-checksum-algorithm", "CRC32"}}),
                       s3, kMaxObjectSize);
  ASSERT_TRUE(request.has_value()) << request.status();
  EXPECT_EQ(request->op, ObjectOp::kPut);
  EXPECT_EQ(request->attributes.tags().size(), 2);
  EXPECT_EQ(request->conditions.if_none_match, "*");
  EXPECT_TRUE(request->reads_existing());    // a conditional PUT compares with what exists
  ASSERT_EQ(request->checksums.size(), 1u);  // the algorithm named twice is one checksum
  EXPECT_EQ(request->checksums[0],
            (ChecksumSpec{s3::ChecksumAlgorithm::kCrc32, "AAAAAA==", false}));
  EXPECT_EQ(request->max_size, kMaxObjectSize);
  EXPECT_FALSE(request->expected_size);  // an aws-chunked body is checked once decoded
  EXPECT_FALSE(request->part);
}

TEST(S3RequestTest, ChecksumHeadersAndTrailers) {
  auto specs =
      checksum_specs(head_of(http::Method::kPut, {{"x-amz-trailer", "x-amz-checksum-sha256"},
                                                  {"x-amz-sdk-checksum-algorithm", "crc32c"}})
                         .headers);
  ASSERT_TRUE(specs.has_value()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0], (ChecksumSpec{s3::ChecksumAlgorithm::kSha256, std::nullopt, true}));
  EXPECT_EQ((*specs)[1], (ChecksumSpec{s3::ChecksumAlgorithm::kCrc32c, std::nullopt, false}));
  const auto s3 = s3_of(s3::Op::kPutObject);
  expect_error(parse_s3_request(head_of(http::Method::kPut, {{"x-amz-checksum-crc32", "AAAAAA=="},
                                                             {"x-amz-checksum-sha1", "AAAAAA=="}}),
                                s3, kMaxObjectSize)
                   .status(),
               Code::kInvalidArgument, "InvalidRequest");
  expect_error(parse_s3_request(head_of(http::Method::kPut, {{"x-amz-trailer", "x-amz-meta-no"}}),
                                s3, kMaxObjectSize)
                   .status(),
               Code::kInvalidArgument, "InvalidRequest");
  expect_error(
      parse_s3_request(head_of(http::Method::kPut, {{"x-amz-sdk-checksum-algorithm", "md4"}}), s3,
                       kMaxObjectSize)
          .status(),
      Code::kInvalidArgument, "InvalidRequest");
  expect_error(parse_s3_request(head_of(http::Method::kPut, {{"x-amz-tagging", "a=1&a=2"}}), s3,
                                kMaxObjectSize)
                   .status(),
               Code::kInvalidArgument, "InvalidTag");
}

TEST(S3RequestTest, UploadPartWritesAPartUpToFiveGiB) {
  const auto s3 = s3_of(s3::Op::kUploadPart, {{"partNumber", "3"}, {"uploadId", "u1"}});
  // A part takes no attributes and no conditions: those belong to the upload.
  auto request = parse_s3_request(
      head_of(http::Method::kPut,
              {{"x-amz-meta-big", std::string(3000, 'x')}, {"If-None-Match", "*"}}),
      s3, kMaxObjectSize);
  ASSERT_TRUE(request.has_value()) << request.status();
  EXPECT_EQ(request->op, ObjectOp::kPut);
  EXPECT_EQ(request->part, (PartTarget{"u1", 3}));
  EXPECT_EQ(request->max_size, 5ULL << 30);
  EXPECT_FALSE(request->reads_existing());
  const auto bad = s3_of(s3::Op::kUploadPart, {{"partNumber", "0"}, {"uploadId", "u1"}});
  expect_error(parse_s3_request(head_of(http::Method::kPut), bad, kMaxObjectSize).status(),
               Code::kInvalidArgument, "InvalidArgument");
}

TEST(S3RequestTest, CopyCarriesSourceDirectivesAndConditions) {
  const auto s3 = s3_of(s3::Op::kCopyObject);
  auto request = parse_s3_request(
      head_of(http::Method::kPut, {{"x-amz-copy-source", "/src/x%20y?versionId=null"},
                                   {"x-amz-metadata-directive", "REPLACE"},
                                   {"x-amz-copy-source-if-none-match", "\"e\""},
                                   {"x-amz-tagging", "t=1"},
                                   {"If-Match", "\"d\""}}),
      s3, kMaxObjectSize);
  ASSERT_TRUE(request.has_value()) << request.status();
  EXPECT_EQ(request->op, ObjectOp::kCopy);
  ASSERT_TRUE(request->copy_source);
  EXPECT_EQ(request->copy_source->bucket, "src");
  EXPECT_EQ(request->copy_source->name, "x y");
  EXPECT_EQ(request->copy_source->metadata, Directive::kReplace);
  EXPECT_EQ(request->copy_source->tagging, Directive::kCopy);
  EXPECT_EQ(request->copy_source->conditions.if_none_match, "\"e\"");
  EXPECT_FALSE(request->copy_source->conditions.if_match);
  EXPECT_EQ(request->conditions.if_match, "\"d\"");  // of the destination, at commit
  EXPECT_EQ(request->attributes.tags().at("t"), "1");
  EXPECT_TRUE(request->reads_existing());
  EXPECT_EQ(request->max_size, kMaxObjectSize);
}

TEST(S3RequestTest, BadCopiesAreRefused) {
  const auto copy = s3_of(s3::Op::kCopyObject);
  auto refuse = [&](std::vector<std::pair<std::string, std::string>> headers,
                    const s3api::S3Request& s3, std::string_view reason) {
    expect_error(
        parse_s3_request(head_of(http::Method::kPut, std::move(headers)), s3, kMaxObjectSize)
            .status(),
        Code::kInvalidArgument, reason);
  };
  refuse({{"x-amz-copy-source", "src/x?versionId=3"}}, copy, "InvalidArgument");
  refuse({{"x-amz-copy-source", "src"}}, copy, "InvalidArgument");
  refuse({{"x-amz-copy-source", "src/%zz"}}, copy, "InvalidArgument");
  refuse({{"x-amz-copy-source", "src/x"}, {"x-amz-tagging-directive", "MERGE"}}, copy,
         "InvalidArgument");
  refuse({{"x-amz-copy-source", "bucket/a/b"}}, copy,
         "InvalidRequest");  // to itself, nothing changed
  refuse({{"x-amz-copy-source", "src/x"}, {"x-amz-copy-source-range", "bytes=0-1"}}, copy,
         "InvalidArgument");
  // A part may copy itself and a range.
  const auto part = s3_of(s3::Op::kUploadPartCopy, {{"partNumber", "1"}, {"uploadId", "u"}});
  auto request = parse_s3_request(
      head_of(http::Method::kPut,
              {{"x-amz-copy-source", "bucket/a/b"}, {"x-amz-copy-source-range", "bytes=0-1"}}),
      part, kMaxObjectSize);
  ASSERT_TRUE(request.has_value()) << request.status();
  EXPECT_EQ(request->copy_source->range, "bytes=0-1");
  EXPECT_EQ(request->part, (PartTarget{"u", 1}));
  EXPECT_EQ(request->max_size, 5ULL << 30);
}

TEST(S3RequestTest, DeleteAndOtherOperations) {
  const auto remove = s3_of(s3::Op::kDeleteObject);
  auto request = parse_s3_request(head_of(http::Method::kDelete), remove, kMaxObjectSize);
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->op, ObjectOp::kDelete);
  const auto tagging = s3_of(s3::Op::kGetObjectTagging);
  EXPECT_EQ(parse_s3_request(head_of(http::Method::kGet), tagging, kMaxObjectSize).status().code(),
            Code::kUnimplemented);
}

TEST(ParseDecimalTest, DigitsOnly) {
  EXPECT_EQ(parse_decimal("0"), 0u);
  EXPECT_EQ(parse_decimal("10000"), 10000u);
  EXPECT_EQ(parse_decimal("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_decimal("18446744073709551616"));
  EXPECT_FALSE(parse_decimal(""));
  EXPECT_FALSE(parse_decimal("-1"));
  EXPECT_FALSE(parse_decimal("1 "));
  EXPECT_FALSE(parse_decimal("0x10"));
}

TEST(SelectBytesTest, Ranges) {
  ObjectRequest request;
  EXPECT_EQ(select_bytes(request, record_of(10)).value(),
            (ByteSelection{0, 10, false, std::nullopt}));
  request.range = "bytes=2-4";
  EXPECT_EQ(select_bytes(request, record_of(10)).value(),
            (ByteSelection{2, 3, true, std::nullopt}));
  request.range = "bytes=-4";
  EXPECT_EQ(select_bytes(request, record_of(10)).value(),
            (ByteSelection{6, 4, true, std::nullopt}));
  request.range = "bytes=5-100";
  EXPECT_EQ(select_bytes(request, record_of(10)).value(),
            (ByteSelection{5, 5, true, std::nullopt}));
  request.range = "items=0-1";  // not understood: the whole object
  EXPECT_EQ(select_bytes(request, record_of(10)).value(),
            (ByteSelection{0, 10, false, std::nullopt}));
  request.range = "bytes=10-";
  expect_error(select_bytes(request, record_of(10)).status(), Code::kOutOfRange, "InvalidRange");
  request.range = "bytes=-1";
  expect_error(select_bytes(request, record_of(0)).status(), Code::kOutOfRange, "InvalidRange");
}

TEST(SelectBytesTest, Parts) {
  ObjectRequest request;
  request.part_number = 2;
  EXPECT_EQ(select_bytes(request, record_of(12, {5, 4, 3})).value(),
            (ByteSelection{5, 4, true, 3}));
  request.part_number = 4;
  expect_error(select_bytes(request, record_of(12, {5, 4, 3})).status(), Code::kOutOfRange,
               "InvalidPartNumber");
  // A single-part object has part 1 only: all of it.
  request.part_number = 1;
  EXPECT_EQ(select_bytes(request, record_of(7)).value(), (ByteSelection{0, 7, true, std::nullopt}));
  request.part_number = 2;
  expect_error(select_bytes(request, record_of(7)).status(), Code::kOutOfRange,
               "InvalidPartNumber");
}

TEST(CopyAttributesTest, DirectivesPickSourceOrRequest) {
  http::Headers source;
  source.add("Content-Type", "image/png");
  source.add(s3api::kTagsHeader, "from=source");
  source.add("x-amz-checksum-crc32", "AAAAAA==");
  ObjectRequest request;
  request.attributes.set_content_type("text/plain");
  (*request.attributes.mutable_tags())["from"] = "request";
  request.copy_source = CopySource{};
  auto kept = copy_attributes(request, source);
  ASSERT_TRUE(kept.has_value()) << kept.status();
  EXPECT_EQ(kept->content_type(), "image/png");
  EXPECT_EQ(kept->tags().at("from"), "source");
  EXPECT_EQ(kept->checksums().at("CRC32"), "AAAAAA==");
  request.copy_source->metadata = Directive::kReplace;
  request.copy_source->tagging = Directive::kReplace;
  auto replaced = copy_attributes(request, source);
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->content_type(), "text/plain");
  EXPECT_EQ(replaced->tags().at("from"), "request");
  EXPECT_EQ(replaced->checksums().at("CRC32"), "AAAAAA==");  // the bytes are the source's
}

}  // namespace
}  // namespace silo::target
