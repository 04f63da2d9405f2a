#include "base/text.h"
#include "s3/sigv4.h"

#include <gtest/gtest.h>

#include <string>

#include "s3/checksum.h"

namespace silo::s3 {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kAccessKey = "AKIAIOSFODNN7EXAMPLE";
constexpr std::string_view kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr int64_t kExampleTime = 1369353600;  // 20130524T000000Z, the AWS examples' time
constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// The botocore vectors below were made with botocore 1.43 at 20240102T030405Z.
constexpr std::string_view kBotoAccessKey = "AKIDEXAMPLE";
constexpr std::string_view kBotoSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr int64_t kBotoTime = 1704164645;

std::optional<std::string> secret_of(std::string_view access_key) {
  if (access_key == kAccessKey) return std::string(kSecret);
  if (access_key == kBotoAccessKey) return std::string(kBotoSecret);
  return std::nullopt;
}

// A request that owns its strings; input() views them.
struct Request {
  std::string method = "GET";
  std::string path = "/";
  std::string query;
  Headers headers;
  SigningInput input() const { return {method, path, query, &headers}; }
  void add(const Headers& more) { headers.insert(headers.end(), more.begin(), more.end()); }
  void set(std::string_view name, std::string value) {
    for (auto& [n, v] : headers) {
      if (n == name) {
        v = std::move(value);
        return;
      }
    }
    headers.emplace_back(name, std::move(value));
  }
};

Result<Authenticated> verify_at(const Request& r, int64_t now) {
  return verify(r.input(), secret_of, now);
}

std::string reason_of(const Result<Authenticated>& r) {
  return r.has_value() ? "OK" : r.error().reason();
}

std::string authorization(std::string_view signed_headers, std::string_view signature,
                          std::string_view scope = "20130524/us-east-1/s3/aws4_request") {
  return fmt::format("AWS4-HMAC-SHA256 Credential={}/{},SignedHeaders={},Signature={}", kAccessKey,
                     scope, signed_headers, signature);
}

// What a client computes from a canonical request it built itself (to model clients that
// canonicalize differently from sign()).
std::string manual_signature(std::string_view canonical_request,
                             std::string_view amz_date = "20130524T000000Z") {
  const std::string date(amz_date.substr(0, 8));
  const std::string key = signing_key(kSecret, date, "us-east-1", "s3");
  const std::string string_to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}/us-east-1/s3/aws4_request\n{}", amz_date, date,
                  sha256_hex(canonical_request));
  return to_hex(hmac_sha256(key, string_to_sign));
}

// "Examples: Signature Calculations in AWS Signature Version 4" (S3): GET Object with Range.
Request aws_get_object() {
  Request r;
  r.path = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", std::string(kEmptySha256)},
               {"x-amz-date", "20130524T000000Z"},
               {"Authorization",
                authorization("host;range;x-amz-content-sha256;x-amz-date",
                              "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")}};
  return r;
}

TEST(SigV4Test, AwsExampleGetObject) {
  const Request r = aws_get_object();
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kHeader);
  auto result = verify_at(r, kExampleTime);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_EQ(result->access_key, kAccessKey);
  EXPECT_FALSE(result->is_presigned);
  EXPECT_EQ(result->payload, PayloadKind::kSignedHash);
  EXPECT_EQ(result->payload_sha256_hex, kEmptySha256);
  EXPECT_EQ(result->amz_date, "20130524T000000Z");
  EXPECT_EQ(result->scope, "20130524/us-east-1/s3/aws4_request");
  EXPECT_EQ(result->seed_signature,
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(result->signing_key, signing_key(kSecret, "20130524", "us-east-1", "s3"));
  EXPECT_EQ(result->signing_key.size(), 32u);
}

TEST(SigV4Test, AwsExamplePutObject) {
  Request r;
  r.method = "PUT";
  r.path = "/test$file.text";  // canonical URI: /test%24file.text
  r.headers = {
      {"Host", "examplebucket.s3.amazonaws.com"},
      {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
      {"Authorization",
       authorization("date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                     "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")}};
  auto result = verify_at(r, kExampleTime);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_EQ(result->payload, PayloadKind::kSignedHash);
  EXPECT_EQ(result->payload_sha256_hex, sha256_hex("Welcome to Amazon S3."));
  // The same request with the '$' escaped by the client.
  r.path = "/test%24file.text";
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
}

TEST(SigV4Test, AwsExampleGetBucketLifecycle) {
  Request r;
  r.query = "lifecycle";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-content-sha256", std::string(kEmptySha256)},
               {"Authorization",
                authorization("host;x-amz-content-sha256;x-amz-date",
                              "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")}};
  auto result = verify_at(r, kExampleTime);
  EXPECT_TRUE(result.has_value()) << result.status();
}

TEST(SigV4Test, AwsExampleListObjects) {
  Request r;
  r.query = "max-keys=2&prefix=J";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-content-sha256", std::string(kEmptySha256)},
               {"Authorization",
                authorization("host;x-amz-content-sha256;x-amz-date",
                              "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")}};
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
  // Query order does not matter: the canonical query is sorted.
  r.query = "prefix=J&max-keys=2";
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
  r.query = "prefix=K&max-keys=2";
  EXPECT_EQ(reason_of(verify_at(r, kExampleTime)), "SignatureDoesNotMatch");
}

// "Signature Calculations for the Authorization Header: Transferring Payload in Multiple
// Chunks": the seed signature of the chunked PUT example.
TEST(SigV4Test, AwsExampleStreamingSeedSignature) {
  Request r;
  r.method = "PUT";
  r.path = "/examplebucket/chunkObject.txt";
  r.headers = {
      {"Host", "s3.amazonaws.com"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"Authorization",
       authorization("content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
                     "x-amz-decoded-content-length;x-amz-storage-class",
                     "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")},
      {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
      {"Content-Encoding", "aws-chunked"},
      {"x-amz-decoded-content-length", "66560"},
      {"Content-Length", "66824"}};
  auto result = verify_at(r, kExampleTime);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_EQ(result->payload, PayloadKind::kStreamingSigned);
  EXPECT_EQ(result->payload_sha256_hex, "");
  EXPECT_EQ(result->seed_signature,
            "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
  EXPECT_EQ(result->scope, "20130524/us-east-1/s3/aws4_request");
  EXPECT_EQ(result->amz_date, "20130524T000000Z");
}

// "Authenticating Requests: Using Query Parameters": the presigned GET example.
Request aws_presigned() {
  Request r;
  r.path = "/test.txt";
  r.query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-"
      "1%2Fs3%2Faws4_"
      "request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-"
      "Signature="
      "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  return r;
}

TEST(SigV4Test, AwsExamplePresigned) {
  const Request r = aws_presigned();
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kPresigned);
  auto result = verify_at(r, kExampleTime + 10);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_TRUE(result->is_presigned);
  EXPECT_EQ(result->access_key, kAccessKey);
  EXPECT_EQ(result->payload, PayloadKind::kUnsigned);
  // The signature's parameter may come anywhere in the query.
  Request moved = r;
  moved.query =
      "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404&" +
      r.query.substr(0, r.query.find("&X-Amz-Signature"));
  EXPECT_TRUE(verify_at(moved, kExampleTime).has_value());
}

TEST(SigV4Test, PresignedExpiryBoundaries) {
  const Request r = aws_presigned();
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
  EXPECT_TRUE(verify_at(r, kExampleTime + 86400).has_value());
  auto expired = verify_at(r, kExampleTime + 86401);
  ASSERT_FALSE(expired.has_value());
  EXPECT_EQ(expired.error().reason(), "AccessDenied");
  EXPECT_EQ(expired.error().code(), Code::kPermissionDenied);
  EXPECT_EQ(expired.error().message(), "Request has expired");
  // Signed in the future, beyond the clock skew allowed.
  EXPECT_TRUE(verify_at(r, kExampleTime - 900).has_value());
  EXPECT_EQ(reason_of(verify_at(r, kExampleTime - 901)), "AccessDenied");
}

TEST(SigV4Test, PresignedParameterErrors) {
  const Request base = aws_presigned();
  auto with_query = [&](std::string from, std::string to) {
    Request r = base;
    const size_t at = r.query.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    r.query.replace(at, from.size(), to);
    return verify_at(r, kExampleTime);
  };
  for (const char* expires : {"X-Amz-Expires=abc", "X-Amz-Expires="}) {
    auto result = with_query("X-Amz-Expires=86400", expires);
    EXPECT_EQ(reason_of(result), "AuthorizationQueryParametersError") << expires;
    if (!result.has_value()) {
      EXPECT_EQ(result.error().code(), Code::kInvalidArgument);
    }
  }
  // An expiry out of range is a URL that is never valid: 403 AccessDenied, as AWS answers.
  for (const char* expires : {"X-Amz-Expires=0", "X-Amz-Expires=604801", "X-Amz-Expires=-5"}) {
    auto result = with_query("X-Amz-Expires=86400", expires);
    EXPECT_EQ(reason_of(result), "AccessDenied") << expires;
    if (!result.has_value()) {
      EXPECT_EQ(result.error().code(), Code::kPermissionDenied);
    }
  }
  // 604800 parses; the signature then fails since it was made for 86400.
  EXPECT_EQ(reason_of(with_query("X-Amz-Expires=86400", "X-Amz-Expires=604800")),
            "SignatureDoesNotMatch");
  EXPECT_EQ(
      reason_of(with_query("X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Algorithm=AWS4-HMAC-SHA1")),
      "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("X-Amz-SignedHeaders=host&", "")),
            "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("X-Amz-Date=20130524T000000Z&", "")),
            "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("X-Amz-Date=20130524T000000Z", "X-Amz-Date=2013-05-24")),
            "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("X-Amz-Date=20130524T000000Z", "X-Amz-Date=20130525T000000Z")),
            "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("%2Fus-east-1%2Fs3", "%2Fus-east-1")),
            "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("%2Fs3%2F", "%2Fec2%2F")), "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=range")),
            "AuthorizationQueryParametersError");
  EXPECT_EQ(reason_of(with_query("AKIAIOSFODNN7EXAMPLE", "AKIAUNKNOWN")), "InvalidAccessKeyId");
  EXPECT_EQ(reason_of(with_query("aeeed9bb", "aeeed9bc")), "SignatureDoesNotMatch");
  // Signed for one object, used for another.
  Request other = base;
  other.path = "/test2.txt";
  EXPECT_EQ(reason_of(verify_at(other, kExampleTime)), "SignatureDoesNotMatch");
}

TEST(SigV4Test, PresignQueryReproducesAwsExample) {
  Request r;
  r.path = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  const SigningKey key{std::string(kAccessKey), std::string(kSecret)};
  EXPECT_EQ(presign_query(r.input(), key, kExampleTime, 86400), aws_presigned().query);
}

TEST(SigV4Test, SignReproducesAwsExample) {
  Request r;
  r.path = "/test.txt";
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
  const SigningKey key{std::string(kAccessKey), std::string(kSecret)};
  const Headers added = sign(r.input(), key, kExampleTime, kEmptySha256);
  ASSERT_EQ(added.size(), 3u);
  EXPECT_EQ(added[0].first, "Authorization");
  EXPECT_EQ(added[0].second,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(added[1], (std::pair<std::string, std::string>("x-amz-date", "20130524T000000Z")));
  EXPECT_EQ(added[2], (std::pair<std::string, std::string>("x-amz-content-sha256",
                                                           std::string(kEmptySha256))));
}

TEST(SigV4Test, SignIgnoresStaleAuthHeaders) {
  Request r;
  r.path = "/b/k";
  r.headers = {{"host", "h"}, {"X-Amz-Date", "19990101T000000Z"}, {"Authorization", "old"}};
  const SigningKey key{std::string(kAccessKey), std::string(kSecret)};
  const Headers added = sign(r.input(), key, kExampleTime, "UNSIGNED-PAYLOAD");
  Request sent;
  sent.path = r.path;
  sent.headers = {{"host", "h"}};
  sent.add(added);
  EXPECT_TRUE(verify_at(sent, kExampleTime).has_value()) << verify_at(sent, kExampleTime).status();
}

// Requests signed by botocore (aws-cli, boto3), with keys it escapes its own way.
TEST(SigV4Test, BotocoreVectors) {
  Request r;
  r.path = "/a%20b/c%3Dd%2Ce%21f%2B%25g%C3%A9h";
  r.query = "tagging&x=1%2B2&y=a%20b";
  r.headers = {{"Host", "bkt.s3.amazonaws.com"},
               {"X-Amz-Date", "20240102T030405Z"},
               {"X-Amz-Content-SHA256", std::string(kEmptySha256)},
               {"Authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240102/eu-west-1/s3/aws4_request, "
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                "Signature=4f4707590bc32e6e3e78c088c568932cbfc41d94f1ac740078184794e57084e0"}};
  auto result = verify_at(r, kBotoTime);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_EQ(result->access_key, kBotoAccessKey);
  EXPECT_EQ(result->scope, "20240102/eu-west-1/s3/aws4_request");

  // Characters botocore leaves raw on the request line but escapes when signing.
  r.path = "/odd=,!key+name(1)*'";
  r.query = "list-type=2&prefix=a/b&delimiter=/";
  r.set("Authorization",
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240102/eu-west-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=318f3087ab35e29e6af52f04f8b1cc6c60eafc7d7ee3caf8287049352ff7ea8f");
  result = verify_at(r, kBotoTime);
  EXPECT_TRUE(result.has_value()) << result.status();

  Request presigned;
  presigned.method = "PUT";
  presigned.path = "/dir/k%20%2B1.txt";
  presigned.query =
      "uploadId=xyz&partNumber=3&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%"
      "2F20240102%2Fus-"
      "west-2%2Fs3%2Faws4_request&X-Amz-Date=20240102T030405Z&X-Amz-Expires=3600&X-Amz-"
      "SignedHeaders=host&X-Amz-"
      "Signature=02d7b6c2cef8b1718b5752b1ce4588780b764e97333988a1abcf84cef8347641";
  presigned.headers = {{"Host", "bkt.s3.amazonaws.com"}};
  result = verify_at(presigned, kBotoTime + 3600);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_TRUE(result->is_presigned);
  EXPECT_EQ(reason_of(verify_at(presigned, kBotoTime + 3601)), "AccessDenied");
}

TEST(SigV4Test, RoundTripsOddObjectNames) {
  const SigningKey key{std::string(kAccessKey), std::string(kSecret), "eu-central-1"};
  const std::string names[] = {"a b",       "\xC3\xBCn\xC3\xAF/\xE6\x97\xA5\xE6\x9C\xAC",
                               "a+b=c",     "100%",
                               "x,y!z*'()", "dir//double/",
                               "tilde~._-", "semi;colon:at@&amp?hash#",
                               "%2F",       "  spaces  "};
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    for (const bool escape_all : {true, false}) {
      Request r;
      r.method = "PUT";
      // Either fully escaped, or escaped only where the request line needs it (as some clients do).
      r.path = "/bucket/" + (escape_all ? text::percent_encode_path(name) : name);
      if (!escape_all) {
        std::string minimal;
        for (const char c : r.path) {
          if (c == ' ' || c == '%' || c == '?' || c == '#' ||
              static_cast<unsigned char>(c) >= 0x80) {
            minimal += text::percent_encode(std::string(1, c));
          } else {
            minimal += c;
          }
        }
        r.path = minimal;
      }
      r.query = "x-id=PutObject&note=" + text::percent_encode(name);
      r.headers = {{"Host", "localhost:9000"}, {"x-amz-meta-name", text::percent_encode(name)}};
      r.add(sign(r.input(), key, kExampleTime, "UNSIGNED-PAYLOAD"));
      auto result = verify_at(r, kExampleTime + 1);
      ASSERT_TRUE(result.has_value()) << r.path << ": " << result.status();
      EXPECT_EQ(result->scope, "20130524/eu-central-1/s3/aws4_request");
      EXPECT_EQ(result->payload, PayloadKind::kUnsigned);

      Request url;
      url.method = "GET";
      url.path = r.path;
      url.query = "versionId=v%201";
      url.headers = {{"host", "localhost:9000"}};
      url.query = presign_query(url.input(), key, kExampleTime, 60);
      result = verify_at(url, kExampleTime + 60);
      ASSERT_TRUE(result.has_value()) << url.path << "?" << url.query << ": " << result.status();
      EXPECT_EQ(reason_of(verify_at(url, kExampleTime + 61)), "AccessDenied");
    }
  }
}

TEST(SigV4Test, ClientThatSignsThePathAsSent) {
  // A client that sends lowercase escapes and signs them verbatim: the server's first
  // canonical URI (/b/a%2Cb) differs, the path as sent matches.
  const std::string canonical =
      "GET\n/b/"
      "a%2cb\n\nhost:h\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20130524T000000Z\n\n"
      "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD";
  Request r;
  r.path = "/b/a%2cb";
  r.headers = {{"host", "h"},
               {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
               {"x-amz-date", "20130524T000000Z"},
               {"authorization", authorization("host;x-amz-content-sha256;x-amz-date",
                                               manual_signature(canonical))}};
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value()) << verify_at(r, kExampleTime).status();
  // The normalized form signed by a well-behaved client also verifies.
  const std::string normalized =
      "GET\n/b/"
      "a%2Cb\n\nhost:h\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20130524T000000Z\n\n"
      "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD";
  r.set("authorization",
        authorization("host;x-amz-content-sha256;x-amz-date", manual_signature(normalized)));
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
}

TEST(SigV4Test, CanonicalHeadersTrimCollapseAndJoin) {
  // The client's canonical form: names lowercased, values trimmed, runs of spaces
  // collapsed, repeated headers joined with ','.
  const std::string unsorted =
      "GET\n/\nb=&a=1\n"
      "host:h\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20130524T000000Z\nx-amz-meta-a:x "
      "y z\n"
      "x-amz-meta-r:one,two\n\n"
      "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-r\nUNSIGNED-PAYLOAD";
  const std::string sorted =
      "GET\n/\na=1&b=\n"
      "host:h\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20130524T000000Z\nx-amz-meta-a:x "
      "y z\n"
      "x-amz-meta-r:one,two\n\n"
      "host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-r\nUNSIGNED-PAYLOAD";
  Request r;
  r.query = "b&a=1";
  r.headers = {{"X-Amz-Meta-R", "one"},
               {"HOST", "h"},
               {"X-AMZ-META-A", "  x   y  z  "},
               {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
               {"X-Amz-Date", "20130524T000000Z"},
               {"x-amz-meta-r", " two "},
               {"Authorization",
                authorization("host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-r",
                              manual_signature(sorted))}};
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value()) << verify_at(r, kExampleTime).status();
  r.set("Authorization",
        authorization("host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-meta-r",
                      manual_signature(unsorted)));
  EXPECT_EQ(reason_of(verify_at(r, kExampleTime)), "SignatureDoesNotMatch");
}

TEST(SigV4Test, QueryPlusIsALiteralPlus) {
  // S3 reads a raw '+' in the query as '+', canonical %2B (not a space, %20).
  const std::string plus =
      "GET\n/"
      "\nq=a%2Bb\nhost:h\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20130524T000000Z\n\n"
      "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD";
  Request r;
  r.query = "q=a+b";
  r.headers = {{"host", "h"},
               {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
               {"x-amz-date", "20130524T000000Z"},
               {"authorization",
                authorization("host;x-amz-content-sha256;x-amz-date", manual_signature(plus))}};
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
  r.query = "q=a%2Bb";
  EXPECT_TRUE(verify_at(r, kExampleTime).has_value());
  r.query = "q=a%20b";
  EXPECT_EQ(reason_of(verify_at(r, kExampleTime)), "SignatureDoesNotMatch");
}

TEST(SigV4Test, AuthorizationHeaderLayoutVariants) {
  const std::string sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
  const std::string cred = "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
  const std::string signed_headers = "host;range;x-amz-content-sha256;x-amz-date";
  for (const std::string& value : {
           fmt::format("AWS4-HMAC-SHA256 Credential={},SignedHeaders={},Signature={}", cred,
                       signed_headers, sig),
           fmt::format("AWS4-HMAC-SHA256 Credential={}, SignedHeaders={}, Signature={}", cred,
                       signed_headers, sig),
           fmt::format("  AWS4-HMAC-SHA256   Credential = {} ,  SignedHeaders={} ,Signature={}  ",
                       cred, signed_headers, sig),
           fmt::format("AWS4-HMAC-SHA256 Signature={}, Credential={}, SignedHeaders={}", sig, cred,
                       signed_headers),
       }) {
    Request r = aws_get_object();
    r.set("Authorization", value);
    EXPECT_TRUE(verify_at(r, kExampleTime).has_value())
        << value << ": " << verify_at(r, kExampleTime).status();
  }
}

TEST(SigV4Test, MalformedAuthorizationHeader) {
  const std::string sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
  for (const std::string& value : std::vector<std::string>{
           std::string("AWS4-HMAC-SHA256"),
           std::string("AWS4-HMAC-SHA256 "),
           std::string("Bearer abc"),
           std::string("AWS4-HMAC-SHA256Credential=x"),
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date",
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request/x, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2013052/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws5_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           "AWS4-HMAC-SHA256 Credential AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           // The wrong service.
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           // host not signed.
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
           "SignedHeaders=range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
           // The credential's date is not the request's.
           "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130523/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=" +
               sig,
       }) {
    Request r = aws_get_object();
    r.set("Authorization", value);
    EXPECT_EQ(auth_kind(r.input()), AuthKind::kHeader) << value;
    auto result = verify_at(r, kExampleTime);
    ASSERT_FALSE(result.has_value()) << value;
    EXPECT_EQ(result.error().reason(), "AuthorizationHeaderMalformed")
        << value << ": " << result.status();
    EXPECT_EQ(result.error().code(), Code::kInvalidArgument);
  }
}

TEST(SigV4Test, AnyRegionIsAccepted) {
  Request r;
  r.path = "/b/k";
  r.headers = {{"host", "h"}};
  for (const char* region : {"us-east-1", "eu-west-3", "silo-local", "x"}) {
    Request signed_request = r;
    signed_request.add(sign(r.input(), {std::string(kAccessKey), std::string(kSecret), region},
                            kExampleTime, kEmptySha256));
    auto result = verify_at(signed_request, kExampleTime);
    ASSERT_TRUE(result.has_value()) << region << ": " << result.status();
    EXPECT_EQ(result->scope, fmt::format("20130524/{}/s3/aws4_request", region));
  }
}

TEST(SigV4Test, UnknownAccessKey) {
  Request r = aws_get_object();
  r.set("Authorization",
        "AWS4-HMAC-SHA256 Credential=AKIANOBODY/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  auto result = verify_at(r, kExampleTime);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().reason(), "InvalidAccessKeyId");
  EXPECT_EQ(result.error().code(), Code::kPermissionDenied);
}

TEST(SigV4Test, TamperingBreaksTheSignature) {
  auto expect_mismatch = [](const Request& r) {
    auto result = verify_at(r, kExampleTime);
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error().reason(), "SignatureDoesNotMatch") << result.status();
    EXPECT_EQ(result.error().code(), Code::kPermissionDenied);
  };
  Request r = aws_get_object();
  r.set("Range", "bytes=0-10");
  expect_mismatch(r);
  r = aws_get_object();
  r.method = "DELETE";
  expect_mismatch(r);
  r = aws_get_object();
  r.path = "/test.txt2";
  expect_mismatch(r);
  r = aws_get_object();
  r.query = "acl";
  expect_mismatch(r);
  r = aws_get_object();
  r.set("Host", "otherbucket.s3.amazonaws.com");
  expect_mismatch(r);
  r = aws_get_object();
  r.set("x-amz-content-sha256", sha256_hex("x"));
  expect_mismatch(r);
  r = aws_get_object();
  r.set("Authorization",
        authorization("host;range;x-amz-content-sha256;x-amz-date",
                      "F0E8BDB87C964420E857BD35B5D6ED310BD44F0170ABA48DD91039C6036BDB41"));
  expect_mismatch(r);
  r.set("Authorization", authorization("host;range;x-amz-content-sha256;x-amz-date", "f0e8"));
  expect_mismatch(r);
  r.set("Authorization", authorization("host;range;x-amz-content-sha256;x-amz-date", ""));
  expect_mismatch(r);
  // A signed header that the request lacks.
  r = aws_get_object();
  r.headers.erase(r.headers.begin() + 1);
  expect_mismatch(r);
  // A different secret for the same key.
  r = aws_get_object();
  auto wrong_secret = [](std::string_view) -> std::optional<std::string> {
    return "not-the-secret";
  };
  EXPECT_EQ(verify(r.input(), wrong_secret, kExampleTime).error().reason(),
            "SignatureDoesNotMatch");
}

TEST(SigV4Test, ClockSkewBoundaries) {
  const Request r = aws_get_object();
  EXPECT_TRUE(verify_at(r, kExampleTime + 900).has_value());
  EXPECT_TRUE(verify_at(r, kExampleTime - 900).has_value());
  for (const int64_t now : {kExampleTime + 901, kExampleTime - 901, kExampleTime + 86400 * 365}) {
    auto result = verify_at(r, now);
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error().reason(), "RequestTimeTooSkewed");
    EXPECT_EQ(result.error().code(), Code::kPermissionDenied);
  }
}

TEST(SigV4Test, DateHeaderWhenNoAmzDate) {
  const std::string canonical =
      "GET\n/k\n\ndate:Fri, 24 May 2013 00:00:00 "
      "GMT\nhost:h\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n\n"
      "date;host;x-amz-content-sha256\nUNSIGNED-PAYLOAD";
  Request r;
  r.path = "/k";
  r.headers = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"host", "h"},
               {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
               {"Authorization",
                authorization("date;host;x-amz-content-sha256", manual_signature(canonical))}};
  auto result = verify_at(r, kExampleTime + 5);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_EQ(result->amz_date, "20130524T000000Z");
  EXPECT_EQ(reason_of(verify_at(r, kExampleTime + 901)), "RequestTimeTooSkewed");

  Request no_date = aws_get_object();
  no_date.headers.erase(no_date.headers.begin() + 3);  // x-amz-date
  EXPECT_EQ(reason_of(verify_at(no_date, kExampleTime)), "AccessDenied");
  Request bad_date = aws_get_object();
  bad_date.set("x-amz-date", "yesterday");
  EXPECT_EQ(reason_of(verify_at(bad_date, kExampleTime)), "AccessDenied");
}

TEST(SigV4Test, PayloadKinds) {
  const SigningKey key{std::string(kAccessKey), std::string(kSecret)};
  const std::pair<std::string, PayloadKind> kinds[] = {
      {std::string(kEmptySha256), PayloadKind::kSignedHash},
      {"UNSIGNED-PAYLOAD", PayloadKind::kUnsigned},
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", PayloadKind::kStreamingSigned},
      {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", PayloadKind::kStreamingSignedTrailer},
      {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", PayloadKind::kStreamingUnsignedTrailer},
  };
  for (const auto& [value, kind] : kinds) {
    Request r;
    r.method = "PUT";
    r.path = "/b/k";
    r.headers = {{"host", "h"}};
    r.add(sign(r.input(), key, kExampleTime, value));
    auto result = verify_at(r, kExampleTime);
    ASSERT_TRUE(result.has_value()) << value << ": " << result.status();
    EXPECT_EQ(result->payload, kind) << value;
    EXPECT_EQ(result->payload_sha256_hex, kind == PayloadKind::kSignedHash ? value : "");
  }
  for (const std::string& value : std::vector<std::string>{
           "STREAMING-AWS4-HMAC-SHA256-EVENTS", "unsigned-payload", "abc",
           std::string(kEmptySha256).substr(1), std::string(63, 'a') + "g", std::string()}) {
    Request r;
    r.path = "/b/k";
    r.headers = {{"host", "h"}};
    r.add(sign(r.input(), key, kExampleTime, value));
    auto result = verify_at(r, kExampleTime);
    ASSERT_FALSE(result.has_value()) << value;
    EXPECT_EQ(result.error().reason(), "InvalidArgument") << value;
    EXPECT_EQ(result.error().code(), Code::kInvalidArgument);
    if (!value.empty()) {
      EXPECT_NE(result.error().message().find(value), std::string::npos);
    }
  }
  // Without x-amz-content-sha256 a request with a body cannot be checked (its signature
  // covers the body's hash): InvalidRequest. (Without a body the hash is that of "", as
  // curl --aws-sigv4 signs: test/e2e covers it.)
  Request missing = aws_get_object();
  missing.headers.erase(missing.headers.begin() + 2);
  missing.headers.emplace_back("Content-Length", "5");
  auto result = verify_at(missing, kExampleTime);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().reason(), "InvalidRequest");
  EXPECT_EQ(result.error().code(), Code::kInvalidArgument);
}

TEST(SigV4Test, PresignedWithContentSha256) {
  // A presigned URL may sign a payload hash with X-Amz-Content-Sha256.
  const std::string hash = sha256_hex("body");
  const std::string query_without_signature =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Content-Sha256=" + hash +
      "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-"
      "Date=20130524T000000Z"
      "&X-Amz-Expires=60&X-Amz-SignedHeaders=host";
  const std::string canonical =
      "PUT\n/b/k\n" + query_without_signature + "\nhost:h\n\nhost\n" + hash;
  Request r;
  r.method = "PUT";
  r.path = "/b/k";
  r.query = query_without_signature + "&X-Amz-Signature=" + manual_signature(canonical);
  r.headers = {{"host", "h"}};
  auto result = verify_at(r, kExampleTime);
  ASSERT_TRUE(result.has_value()) << result.status();
  EXPECT_EQ(result->payload, PayloadKind::kSignedHash);
  EXPECT_EQ(result->payload_sha256_hex, hash);
}

TEST(SigV4Test, AuthKinds) {
  Request r;
  r.headers = {{"host", "h"}};
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kNone);
  r.query = "list-type=2&prefix=X-Amz-Signature";
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kNone);
  r.query = "AWSAccessKeyId=AK&Expires=1&Signature=abc%3D";
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kSigV2);
  r.query = "X-Amz-Algorithm=AWS4-HMAC-SHA256";
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kPresigned);
  r.query = "";
  r.headers.emplace_back("authorization", "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=");
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kSigV2);
  r.headers.back().second = "AWS4-HMAC-SHA256 Credential=x";
  EXPECT_EQ(auth_kind(r.input()), AuthKind::kHeader);
  const SigningInput no_headers{"GET", "/", "", nullptr};
  EXPECT_EQ(auth_kind(no_headers), AuthKind::kNone);
  EXPECT_EQ(verify(no_headers, secret_of, kExampleTime).error().reason(), "AccessDenied");
}

TEST(SigV4Test, NoAuthIsDeniedAndSigV2IsVerified) {
  Request r;
  r.headers = {{"host", "h"}};
  auto result = verify_at(r, kExampleTime);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().reason(), "AccessDenied");
  EXPECT_EQ(result.error().code(), Code::kPermissionDenied);
  // AWS's SigV2 query-string example ("Signing and authenticating REST requests"), path-style.
  Request v2;
  v2.path = "/johnsmith/photos/puppy.jpg";
  v2.headers = {{"host", "s3.amazonaws.com"}};
  v2.query = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620";
  auto accepted = verify_at(v2, 1175139000);
  ASSERT_TRUE(accepted.has_value()) << accepted.error();
  EXPECT_TRUE(accepted->is_presigned);
  EXPECT_EQ(reason_of(verify_at(v2, 1175139621)), "AccessDenied");  // expired
  v2.path = "/johnsmith/photos/kitten.jpg";
  EXPECT_EQ(reason_of(verify_at(v2, 1175139000)), "SignatureDoesNotMatch");
}

TEST(SigV4Test, HeaderAndQueryAuthTogetherIsRejected) {
  Request r = aws_get_object();
  r.query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc";
  auto result = verify_at(r, kExampleTime);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().reason(), "InvalidArgument");
  EXPECT_EQ(result.error().code(), Code::kInvalidArgument);
}

TEST(SigningKeyTest, AwsDocumentedDerivation) {
  // From "Examples of how to derive a signing key" (secret
  // wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, 20120215, us-east-1, iam).
  EXPECT_EQ(to_hex(signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1",
                               "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

}  // namespace
}  // namespace silo::s3
