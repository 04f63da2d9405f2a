// route, xml, conditions, http_time, names and errors: the pure S3 rules.
#include <gtest/gtest.h>

#include <cerrno>

#include "s3/conditions.h"
#include "s3/cors.h"
#include "s3/encoded_words.h"
#include "s3/errors.h"
#include "s3/http_time.h"
#include "s3/names.h"
#include "s3/route.h"
#include "s3/xml.h"

namespace silo::s3 {
namespace {

Result<Route> route_of(std::string_view method, std::string_view path, std::string_view query,
                       std::string_view host = "127.0.0.1:8080", bool copy = false) {
  static const std::vector<std::string> kDomains = {"localhost", "s3.example.com"};
  auto q = parse_query(query);
  EXPECT_TRUE(q.has_value());
  RouteInput in{method, path, &*q, host, copy, &kDomains};
  return route(in);
}

TEST(RouteTest, PathStyleOperations) {
  struct Case {
    const char* method;
    const char* path;
    const char* query;
    Op op;
    bool copy = false;
  };
  const Case cases[] = {
      {"GET", "/", "", Op::kListBuckets},
      {"PUT", "/b", "", Op::kCreateBucket},
      {"HEAD", "/b", "", Op::kHeadBucket},
      {"DELETE", "/b/", "", Op::kDeleteBucket},
      {"GET", "/b", "location", Op::kGetBucketLocation},
      {"GET", "/b", "versioning", Op::kGetBucketVersioning},
      {"PUT", "/b", "versioning", Op::kPutBucketVersioning},
      {"GET", "/b", "acl", Op::kGetBucketAcl},
      {"GET", "/b", "", Op::kListObjects},
      {"GET", "/b", "list-type=2&prefix=a", Op::kListObjectsV2},
      {"GET", "/b", "versions", Op::kListObjectVersions},
      {"GET", "/b", "uploads", Op::kListMultipartUploads},
      {"POST", "/b", "delete", Op::kDeleteObjects},
      {"PUT", "/b/k", "", Op::kPutObject},
      {"PUT", "/b/k", "", Op::kCopyObject, true},
      {"GET", "/b/a/b/c", "", Op::kGetObject},
      {"HEAD", "/b/k", "", Op::kHeadObject},
      {"DELETE", "/b/k", "", Op::kDeleteObject},
      {"GET", "/b/k", "tagging", Op::kGetObjectTagging},
      {"PUT", "/b/k", "tagging", Op::kPutObjectTagging},
      {"DELETE", "/b/k", "tagging", Op::kDeleteObjectTagging},
      {"GET", "/b/k", "acl", Op::kGetObjectAcl},
      {"POST", "/b/k", "uploads", Op::kCreateMultipartUpload},
      {"PUT", "/b/k", "partNumber=1&uploadId=u", Op::kUploadPart},
      {"PUT", "/b/k", "partNumber=1&uploadId=u", Op::kUploadPartCopy, true},
      {"POST", "/b/k", "uploadId=u", Op::kCompleteMultipartUpload},
      {"DELETE", "/b/k", "uploadId=u", Op::kAbortMultipartUpload},
      {"GET", "/b/k", "uploadId=u", Op::kListParts},
  };
  for (const Case& c : cases) {
    auto r = route_of(c.method, c.path, c.query, "127.0.0.1:8080", c.copy);
    ASSERT_TRUE(r.has_value()) << c.method << " " << c.path << "?" << c.query << ": " << r.error();
    EXPECT_EQ(r->op, c.op) << c.method << " " << c.path << "?" << c.query << " gave " << op_name(r->op);
  }
  auto r = route_of("GET", "/b/dir/key with space", "");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->bucket, "b");
  EXPECT_EQ(r->key, "dir/key with space");
}

TEST(RouteTest, VirtualHostStyle) {
  auto r = route_of("GET", "/dir/key", "", "photos.localhost:8080");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->is_virtual_host);
  EXPECT_EQ(r->bucket, "photos");
  EXPECT_EQ(r->key, "dir/key");
  r = route_of("GET", "/", "list-type=2", "my.bucket.s3.example.com");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->bucket, "my.bucket");
  EXPECT_EQ(r->op, Op::kListObjectsV2);
  r = route_of("GET", "/b/k", "", "localhost:8080");  // the bare domain is path-style
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->is_virtual_host);
  EXPECT_EQ(r->bucket, "b");
}

TEST(RouteTest, UnsupportedFeaturesAnswerAtOnce) {
  EXPECT_EQ(route_of("GET", "/b", "policy")->op, Op::kGetBucketPolicy);
  EXPECT_EQ(route_of("DELETE", "/b", "policy")->op, Op::kDeleteBucketPolicy);
  EXPECT_EQ(route_of("GET", "/b", "lifecycle").error().reason(), "NoSuchLifecycleConfiguration");
  EXPECT_EQ(route_of("PUT", "/b", "lifecycle").error().reason(), "NotImplemented");
  EXPECT_EQ(route_of("PUT", "/b", "website").error().reason(), "NotImplemented");
  EXPECT_EQ(route_of("GET", "/b/k", "retention").error().reason(), "NotImplemented");
  EXPECT_EQ(route_of("POST", "/b/k", "").error().reason(), "MethodNotAllowed");
  EXPECT_EQ(route_of("PATCH", "/b/k", "").error().reason(), "MethodNotAllowed");
  EXPECT_EQ(route_of("PUT", "/", "").error().reason(), "MethodNotAllowed");
  EXPECT_EQ(route_of("PUT", "/b/k", "uploadId=u").error().reason(), "InvalidArgument");
  EXPECT_EQ(http_status_of("MethodNotAllowed"), 405);
}

TEST(QueryTest, DecodesAndKeepsOrder) {
  auto q = parse_query("a=1&b&c=%2F%20x+y&a=2");
  ASSERT_TRUE(q.has_value());
  ASSERT_EQ(q->params.size(), 4u);
  EXPECT_EQ(q->get("a"), "1");
  EXPECT_TRUE(q->has("b"));
  EXPECT_EQ(q->get("b"), "");
  EXPECT_EQ(q->get("c"), "/ x+y");
  EXPECT_FALSE(q->has("d"));
  EXPECT_FALSE(parse_query("a=%zz").has_value());
}

TEST(XmlTest, WriterEscapesAndNeverEmitsInvalidXml) {
  XmlWriter xml;
  xml.open("Root", kS3Xmlns).element("Key", "a<b>&\"'\x01\xff").close();
  const std::string out = xml.finish();
  EXPECT_EQ(out, R"(<?xml version="1.0" encoding="UTF-8"?><Root xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
                 "<Key>a&lt;b&gt;&amp;&quot;&apos;\xef\xbf\xbd\xef\xbf\xbd</Key></Root>");
  EXPECT_TRUE(parse_xml(out).has_value());
}

TEST(XmlTest, ParsesClientBodies) {
  auto parts = parse_complete_multipart(
      R"(<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>"abc"</ETag>)"
      R"(<PartNumber>1</PartNumber><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>)"
      R"(<Part><PartNumber>2</PartNumber><ETag>def</ETag></Part></CompleteMultipartUpload>)");
  ASSERT_TRUE(parts.has_value()) << parts.error();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].etag, "abc");
  EXPECT_EQ((*parts)[0].checksums[0].first, "CRC32");
  EXPECT_EQ((*parts)[1].part_number, 2);
  EXPECT_EQ(parse_complete_multipart("<CompleteMultipartUpload/>").error().reason(), "MalformedXML");
  EXPECT_EQ(parse_complete_multipart("<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>x</ETag>"
                                     "</Part></CompleteMultipartUpload>")
                .error()
                .reason(),
            "InvalidArgument");

  auto del = parse_delete("<Delete><Quiet>true</Quiet><Object><Key>a &amp; b</Key></Object>"
                          "<Object><Key>c</Key><VersionId>null</VersionId></Object></Delete>");
  ASSERT_TRUE(del.has_value());
  EXPECT_TRUE(del->quiet);
  EXPECT_EQ(del->objects[0].first, "a & b");
  EXPECT_EQ(del->objects[1].second, "null");
  EXPECT_EQ(parse_delete("<Delete></Delete>").error().reason(), "MalformedXML");

  EXPECT_EQ(parse_create_bucket("").value(), "");
  EXPECT_EQ(parse_create_bucket("<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>"
                                "</CreateBucketConfiguration>")
                .value(),
            "eu-west-1");
  EXPECT_EQ(parse_versioning("<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>").value(),
            "Suspended");
  EXPECT_EQ(parse_versioning("<VersioningConfiguration><Status>On</Status></VersioningConfiguration>").error().reason(),
            "MalformedXML");
}

TEST(XmlTest, RefusesHostileDocuments) {
  EXPECT_EQ(parse_xml(R"(<!DOCTYPE d [<!ENTITY a "aaaa">]><d>&a;</d>)").error().reason(), "MalformedXML");
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "<a>";
  for (int i = 0; i < 40; ++i) deep += "</a>";
  EXPECT_EQ(parse_xml(deep).error().reason(), "MalformedXML");
  EXPECT_EQ(parse_xml("<a><b></a>").error().reason(), "MalformedXML");
  EXPECT_EQ(parse_xml("").error().reason(), "MalformedXML");
}

TEST(XmlTest, TaggingLimits) {
  auto tags = parse_tagging("<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>");
  ASSERT_TRUE(tags.has_value());
  EXPECT_EQ(tags->at("k"), "v");
  EXPECT_EQ(parse_tagging("<Tagging><TagSet><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2"
                          "</Value></Tag></TagSet></Tagging>")
                .error()
                .reason(),
            "InvalidTag");
  EXPECT_EQ(parse_tagging_header("a=1&b=x%20y&c=p+q").value().at("c"), "p q");
  std::string eleven;
  for (int i = 0; i < 11; ++i) eleven += "k" + std::to_string(i) + "=v&";
  EXPECT_EQ(parse_tagging_header(eleven).error().reason(), "InvalidTag");
  EXPECT_EQ(parse_tagging_header(std::string(129, 'k') + "=v").error().reason(), "InvalidTag");
}

TEST(ConditionsTest, ReadFollowsRfc9110AsS3Applies) {
  const int64_t mtime = 1000000000;  // Sun, 09 Sep 2001 01:46:40 GMT
  const std::string before = format_http_date(mtime - 10);
  const std::string after = format_http_date(mtime + 10);
  using R = ConditionResult;
  EXPECT_EQ(evaluate_read({}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({"\"e\"", {}, {}, {}}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({"\"x\", W/\"e\"", {}, {}, {}}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({"*", {}, {}, {}}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({"\"x\"", {}, {}, {}}, "e", mtime), R::kPreconditionFailed);
  EXPECT_EQ(evaluate_read({{}, "\"e\"", {}, {}}, "e", mtime), R::kNotModified);
  EXPECT_EQ(evaluate_read({{}, {}, after, {}}, "e", mtime), R::kNotModified);
  EXPECT_EQ(evaluate_read({{}, {}, before, {}}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({{}, {}, {}, before}, "e", mtime), R::kPreconditionFailed);
  EXPECT_EQ(evaluate_read({{}, {}, {}, after}, "e", mtime), R::kProceed);
  // If-Match true overrides If-Unmodified-Since false; If-None-Match false overrides If-Modified-Since.
  EXPECT_EQ(evaluate_read({"\"e\"", {}, {}, before}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({{}, "\"x\"", after, {}}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_read({{}, {}, "not a date", {}}, "e", mtime), R::kProceed);
  EXPECT_EQ(evaluate_copy_source({{}, "\"e\"", {}, {}}, "e", mtime), R::kPreconditionFailed);
}

TEST(ConditionsTest, Writes) {
  const std::string etag = "e";
  EXPECT_TRUE(evaluate_write({{}, "*", {}, {}}, nullptr).is_ok());
  EXPECT_EQ(evaluate_write({{}, "*", {}, {}}, &etag).reason(), "PreconditionFailed");
  EXPECT_TRUE(evaluate_write({"\"e\"", {}, {}, {}}, &etag).is_ok());
  EXPECT_EQ(evaluate_write({"\"x\"", {}, {}, {}}, &etag).reason(), "PreconditionFailed");
  EXPECT_EQ(evaluate_write({"\"e\"", {}, {}, {}}, nullptr).reason(), "NoSuchKey");
}

TEST(HttpTimeTest, FormatsAndParsesEveryHttpDateForm) {
  EXPECT_EQ(format_http_date(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), 784111777);
  EXPECT_EQ(parse_http_date("yesterday"), std::nullopt);
  // RFC 2822, as Python's email.utils.formatdate and mail libraries write it.
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 -0000"), 784111777);
  EXPECT_EQ(parse_http_date("Sun, 6 Nov 1994 08:49:37 +0000"), 784111777);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 09:49:37 +0100"), 784111777);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 03:19:37 -0530"), 784111777);
  EXPECT_EQ(parse_http_date("6 Nov 1994 08:49:37 UT"), 784111777);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49 GMT"), 784111740);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 +01"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 EST"), std::nullopt);
  EXPECT_EQ(parse_http_date("Xyz, 06 Nov 1994 08:49:37 -0000"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 94 08:49:37 -0000"), std::nullopt);
  EXPECT_EQ(format_iso8601(784111777123456789), "1994-11-06T08:49:37.123Z");
  EXPECT_EQ(parse_iso8601("1994-11-06T08:49:37.123Z"), 784111777);
  EXPECT_EQ(format_amz_date(1369353600), "20130524T000000Z");
  EXPECT_EQ(parse_amz_date("20130524T000000Z"), 1369353600);
  EXPECT_EQ(parse_amz_date("20130524T000000"), std::nullopt);
  for (int64_t t : {int64_t{0}, int64_t{951782400}, int64_t{4102444800}, int64_t{1795379817}}) {
    EXPECT_EQ(parse_http_date(format_http_date(t)), t);
    EXPECT_EQ(parse_amz_date(format_amz_date(t)), t);
  }
}

TEST(NamesTest, BucketRulesOfAws) {
  for (const char* good : {"abc", "my-bucket.data", "a1b", "0-0"}) EXPECT_TRUE(validate_bucket_name(good).is_ok()) << good;
  for (const char* bad : {"ab", "Abc", "a_b", "-ab", "ab-", "a..b", "192.168.5.4", "xn--abc", "abc-s3alias",
                          "sthree-x"}) {
    EXPECT_EQ(validate_bucket_name(bad).reason(), "InvalidBucketName") << bad;
  }
  EXPECT_EQ(validate_bucket_name(std::string(64, 'a')).reason(), "InvalidBucketName");
  EXPECT_TRUE(validate_object_name(std::string(1024, 'k')).is_ok());
  EXPECT_EQ(validate_object_name(std::string(1025, 'k')).reason(), "KeyTooLongError");
  EXPECT_EQ(validate_object_name("bad\xff").reason(), "InvalidArgument");
  for (const char* bad : {"Abc", "a_b", "-ab", "ab-", "a..b", "192.168.0.1", "a b", "", "xn--ab"}) {
    EXPECT_EQ(validate_bucket_name(bad).reason(), "InvalidBucketName") << bad;
  }
  for (const char* good : {"a", "a/b", "../../etc/passwd", "with space", "100%", "ünï/cødé"}) {
    EXPECT_TRUE(validate_object_name(good).is_ok()) << good;
  }
  EXPECT_EQ(validate_object_name("").reason(), "InvalidArgument");
  EXPECT_EQ(validate_object_name(std::string("a\0b", 3)).reason(), "InvalidArgument");
}

TEST(ErrorsTest, StatusBecomesTheRightS3Error) {
  EXPECT_EQ(to_s3_error(Status::not_found("x"), Subject::kObject).code, "NoSuchKey");
  EXPECT_EQ(to_s3_error(Status::not_found("x"), Subject::kBucket).code, "NoSuchBucket");
  EXPECT_EQ(to_s3_error(Status::not_found("x"), Subject::kUpload).code, "NoSuchUpload");
  EXPECT_EQ(to_s3_error(Status::not_found("x").with_reason("NoSuchBucket"), Subject::kObject).code, "NoSuchBucket");
  const S3Error internal = to_s3_error(Status::internal("secret detail"), Subject::kObject);
  EXPECT_EQ(internal.http_status, 500);
  EXPECT_EQ(internal.message.find("secret"), std::string::npos);
  EXPECT_EQ(to_s3_error(Status::unavailable("down"), Subject::kObject).http_status, 503);
  // A store write that hit ENOSPC (kResourceExhausted, no reason) is a 507 on PUT.
  const S3Error full =
      to_s3_error(Status::from_errno(ENOSPC, "write /mp/work/0123"), Subject::kObject);
  EXPECT_EQ(full.code, "InsufficientStorage");
  EXPECT_EQ(full.http_status, 507);
  // Lost bytes are said as they are, never "please try again".
  const S3Error lost = to_s3_error(Status::data_loss("every copy of k is corrupt"), Subject::kObject);
  EXPECT_EQ(lost.code, "DataLoss");
  EXPECT_EQ(lost.http_status, 500);
  EXPECT_EQ(lost.message, "every copy of k is corrupt");
  const std::string xml = error_xml({"NoSuchKey", "gone", 404}, "/b/k", "RID", {{"Key", "k"}});
  EXPECT_NE(xml.find("<Code>NoSuchKey</Code><Message>gone</Message><Key>k</Key><Resource>/b/k</Resource>"),
            std::string::npos);
}

TEST(EncodedWordsTest, DecodesWordsOfKnownCharsets) {
  EXPECT_EQ(decode_encoded_words("plain value"), "plain value");
  EXPECT_EQ(decode_encoded_words("=?UTF-8?B?aMOpbGxv?="), "h\xc3\xa9llo");
  EXPECT_EQ(decode_encoded_words("=?utf-8?q?h=C3=A9llo_w?="), "h\xc3\xa9llo w");
  EXPECT_EQ(decode_encoded_words("=?ISO-8859-1?Q?caf=E9?="), "caf\xc3\xa9");
  // Whitespace between two words goes; between a word and text it stays.
  EXPECT_EQ(decode_encoded_words("=?UTF-8?Q?a?= =?UTF-8?Q?b?="), "ab");
  EXPECT_EQ(decode_encoded_words("x =?UTF-8?Q?a?= y"), "x a y");
  // Not a word of a known charset, or malformed: kept as sent.
  for (const char* kept : {"=?KOI8-R?Q?a?=", "=?UTF-8?X?a?=", "=?UTF-8?B?***?=", "=?UTF-8?Q?=Z1?=", "=?UTF-8?Q?a",
                           "=?", "a=?b"}) {
    EXPECT_EQ(decode_encoded_words(kept), kept);
  }
}

TEST(EncodedWordsTest, EncodesWhatAHeaderCannotCarry) {
  EXPECT_EQ(encode_header_value("plain\tvalue ~"), "plain\tvalue ~");
  EXPECT_EQ(encode_header_value("h\xc3\xa9llo"), "=?UTF-8?B?aMOpbGxv?=");
  EXPECT_EQ(encode_header_value("a\nb"), "=?UTF-8?B?YQpi?=");
  for (const char* value : {"h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93", "", "=?UTF-8?B?x?="}) {
    EXPECT_EQ(decode_encoded_words(encode_header_value(value)), value);
  }
}

TEST(CorsTest, ParsesMatchesAndWritesRules) {
  const auto rules = parse_cors(
      "<CORSConfiguration><CORSRule><ID>web</ID><AllowedOrigin>https://*.example.com</AllowedOrigin>"
      "<AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader>"
      "<AllowedHeader>Content-Type</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds>"
      "</CORSRule><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule>"
      "</CORSConfiguration>");
  ASSERT_TRUE(rules) << rules.status();
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].max_age_seconds, 600);
  EXPECT_EQ(match_cors(*rules, "https://a.example.com", "PUT", "X-Amz-Date, content-type"), &(*rules)[0]);
  EXPECT_EQ(match_cors(*rules, "https://a.example.com", "PUT", "authorization"), nullptr);
  EXPECT_EQ(match_cors(*rules, "https://example.org", "GET", ""), nullptr);
  EXPECT_EQ(match_cors(*rules, "https://example.org", "HEAD", ""), &(*rules)[1]);
  EXPECT_EQ(match_cors(*rules, "http://a.example.com", "GET", ""), nullptr);
  EXPECT_EQ(parse_cors(cors_xml(*rules)).value(), *rules);
  for (const char* bad : {"<CORSConfiguration></CORSConfiguration>", "<Other/>",
                          "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
                          "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
                          "<MaxAgeSeconds>x</MaxAgeSeconds></CORSRule></CORSConfiguration>"}) {
    EXPECT_EQ(parse_cors(bad).error().reason(), "MalformedXML") << bad;
  }
  for (const char* bad : {"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH"
                          "</AllowedMethod></CORSRule></CORSConfiguration>",
                          "<CORSConfiguration><CORSRule><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET"
                          "</AllowedMethod></CORSRule></CORSConfiguration>"}) {
    EXPECT_EQ(parse_cors(bad).error().reason(), "InvalidRequest") << bad;
  }
}

TEST(RouteTest, CorsAclAndPreflight) {
  EXPECT_EQ(route_of("GET", "/b", "cors").value().op, Op::kGetBucketCors);
  EXPECT_EQ(route_of("PUT", "/b", "cors").value().op, Op::kPutBucketCors);
  EXPECT_EQ(route_of("DELETE", "/b", "cors").value().op, Op::kDeleteBucketCors);
  EXPECT_EQ(route_of("PUT", "/b", "acl").value().op, Op::kPutBucketAcl);
  EXPECT_EQ(route_of("PUT", "/b/k", "acl").value().op, Op::kPutObjectAcl);
  EXPECT_EQ(route_of("OPTIONS", "/b/k", "").value().op, Op::kPreflight);
  EXPECT_EQ(route_of("OPTIONS", "/b", "").value().op, Op::kPreflight);
  EXPECT_EQ(route_of("OPTIONS", "/", "").error().reason(), "MethodNotAllowed");
}

}  // namespace
}  // namespace silo::s3
