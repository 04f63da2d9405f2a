#include "s3/chunked.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "s3/checksum.h"
#include "s3/sigv4.h"

namespace silo::s3 {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kSeed =
    "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

// The signing context of AWS's chunked PUT example ("Signature Calculations for the
// Authorization Header: Transferring Payload in Multiple Chunks").
ChunkSigning aws_signing() {
  return {signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1", "s3"),
          "20130524T000000Z", "20130524/us-east-1/s3/aws4_request", std::string(kSeed)};
}

// The example's body: 65536 and 1024 bytes of 'a', then the final chunk; 66824 bytes.
std::string aws_body() {
  return "10000;chunk-signature="
         "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n" +
         std::string(65536, 'a') +
         "\r\n400;chunk-signature="
         "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n" +
         std::string(1024, 'a') +
         "\r\n0;chunk-signature="
         "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n";
}

// Writes a signed aws-chunked body the way SDKs do (independent of the decoder).
std::string signed_body(const ChunkSigning& s, const std::vector<std::string>& chunks,
                        const Headers* trailers) {
  std::string body;
  std::string previous = s.seed_signature;
  auto add_chunk = [&](const std::string& data) {
    const std::string to_sign = "AWS4-HMAC-SHA256-PAYLOAD\n" + s.amz_date + "\n" + s.scope + "\n" +
                                previous + "\n" + std::string(kEmptySha256) + "\n" +
                                sha256_hex(data);
    previous = to_hex(hmac_sha256(s.signing_key, to_sign));
    body += fmt::format("{:x};chunk-signature={}\r\n{}", data.size(), previous, data);
    if (!data.empty() || trailers == nullptr) body += "\r\n";
  };
  for (const auto& c : chunks) add_chunk(c);
  add_chunk("");
  if (trailers != nullptr) {
    std::string text;
    for (const auto& [n, v] : *trailers) {
      body += n + ":" + v + "\r\n";
      text += n + ":" + v + "\n";
    }
    const std::string to_sign = "AWS4-HMAC-SHA256-TRAILER\n" + s.amz_date + "\n" + s.scope + "\n" +
                                previous + "\n" + sha256_hex(text);
    body += "x-amz-trailer-signature:" + to_hex(hmac_sha256(s.signing_key, to_sign)) + "\r\n\r\n";
  }
  return body;
}

// Feeds `body` in pieces of at most `in_piece` bytes into an output window of `out_size`
// bytes (0 for random sizes from `rng`), as a server loop would.
Result<std::string> decode_all(ChunkedDecoder& d, std::string_view body, size_t in_piece,
                               size_t out_size, std::mt19937* rng = nullptr) {
  std::string decoded;
  std::vector<char> out(std::max<size_t>(out_size, 70000));
  size_t at = 0;
  while (at < body.size() && !d.is_done()) {
    size_t n = in_piece;
    size_t window = out_size;
    if (rng != nullptr) {
      n = 1 + (*rng)() % 300;
      window = 1 + (*rng)() % 500;
      if ((*rng)() % 50 == 0) n = 70000;
    }
    n = std::min(n, body.size() - at);
    ASSIGN_OR_RETURN(const auto step, d.decode(std::span<const char>(body.data() + at, n),
                                               std::span<char>(out.data(), window)));
    if (step.consumed == 0 && step.produced == 0)
      return Status::internal("the decoder made no progress");
    decoded.append(out.data(), step.produced);
    at += step.consumed;
  }
  return decoded;
}

TEST(ChunkedDecoderTest, AwsExampleInOneCall) {
  ChunkedDecoder d(aws_signing(), /*expect_trailer=*/false);
  const std::string body = aws_body();
  ASSERT_EQ(body.size(), 66824u);
  std::vector<char> out(70000);
  auto step = d.decode(body, out);
  ASSERT_TRUE(step.has_value()) << step.status();
  EXPECT_EQ(step->consumed, body.size());
  EXPECT_EQ(step->produced, 66560u);
  EXPECT_EQ(std::string(out.data(), step->produced), std::string(66560, 'a'));
  EXPECT_TRUE(d.is_done());
  EXPECT_TRUE(d.finish().is_ok());
  EXPECT_EQ(d.decoded_bytes(), 66560u);
  EXPECT_TRUE(d.trailers().empty());
}

TEST(ChunkedDecoderTest, AwsExampleByteByByte) {
  ChunkedDecoder d(aws_signing(), false);
  auto decoded = decode_all(d, aws_body(), 1, 1);
  ASSERT_TRUE(decoded.has_value()) << decoded.status();
  EXPECT_EQ(*decoded, std::string(66560, 'a'));
  EXPECT_TRUE(d.is_done());
}

TEST(ChunkedDecoderTest, AwsExampleRandomSplits) {
  const std::string body = aws_body();
  const unsigned seed = std::random_device()();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 10; ++trial) {
    ChunkedDecoder d(aws_signing(), false);
    auto decoded = decode_all(d, body, 0, 0, &rng);
    ASSERT_TRUE(decoded.has_value()) << decoded.status();
    EXPECT_EQ(decoded->size(), 66560u);
    EXPECT_TRUE(d.is_done());
    EXPECT_EQ(d.decoded_bytes(), 66560u);
  }
}

TEST(ChunkedDecoderTest, EmptyOutputWindowConsumesOnlyFraming) {
  ChunkedDecoder d(aws_signing(), false);
  const std::string body = aws_body();
  auto step = d.decode(body, std::span<char>());
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->consumed, body.find("\r\n") + 2);
  EXPECT_EQ(step->produced, 0u);
  EXPECT_FALSE(d.is_done());
}

Status decode_status(std::optional<ChunkSigning> signing, bool expect_trailer,
                     std::string_view body, ChunkedDecoder** keep = nullptr) {
  static thread_local std::unique_ptr<ChunkedDecoder> last;
  last = std::make_unique<ChunkedDecoder>(std::move(signing), expect_trailer);
  if (keep != nullptr) *keep = last.get();
  auto decoded = decode_all(*last, body, 7, 5);
  if (!decoded.has_value()) return decoded.error();
  return last->finish();
}

TEST(ChunkedDecoderTest, TamperedDataFailsAtTheEndOfItsChunk) {
  std::string body = aws_body();
  body[200] = 'b';
  ChunkedDecoder d(aws_signing(), false);
  std::vector<char> out(70000);
  auto step = d.decode(std::span<const char>(body.data(), body.find("\r\n") + 2 + 65536), out);
  // The whole chunk is handed out before its signature can be checked.
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->produced, 65536u);
  auto failed = d.decode(std::span<const char>(body).subspan(step->consumed), out);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().reason(), "SignatureDoesNotMatch");
  EXPECT_EQ(failed.error().code(), Code::kPermissionDenied);
  EXPECT_FALSE(d.is_done());
}

TEST(ChunkedDecoderTest, TamperedSignaturesFail) {
  const std::string body = aws_body();
  for (const std::string_view sig : {"ad80c730", "0055627c", "b6c6ea8a"}) {
    std::string tampered = body;
    const size_t at = tampered.find(sig);
    tampered[at + 3] = tampered[at + 3] == '0' ? '1' : '0';
    const Status s = decode_status(aws_signing(), false, tampered);
    EXPECT_EQ(s.reason(), "SignatureDoesNotMatch") << sig << ": " << s;
  }
  // Uppercase hex is not the signature.
  std::string upper = body;
  const size_t at = upper.find("ad80c730");
  for (size_t i = at; i < at + 64; ++i) upper[i] = static_cast<char>(std::toupper(upper[i]));
  EXPECT_EQ(decode_status(aws_signing(), false, upper).reason(), "SignatureDoesNotMatch");
  // A wrong seed breaks the whole chain.
  ChunkSigning other = aws_signing();
  other.seed_signature[0] = '5';
  EXPECT_EQ(decode_status(other, false, body).reason(), "SignatureDoesNotMatch");
  // So does a dropped chunk: the chain no longer links.
  const size_t second = body.find("400;");
  EXPECT_EQ(decode_status(aws_signing(), false, body.substr(second)).reason(),
            "SignatureDoesNotMatch");
}

TEST(ChunkedDecoderTest, EveryTruncationIsIncomplete) {
  const ChunkSigning s = aws_signing();
  const Headers trailers = {{"x-amz-checksum-crc32", "DUoRhQ=="}};
  const std::string bodies[] = {signed_body(s, {"hello", " world"}, nullptr),
                                signed_body(s, {"hello", " world"}, &trailers)};
  for (int i = 0; i < 2; ++i) {
    const std::string& body = bodies[i];
    for (size_t n = 0; n < body.size(); ++n) {
      ChunkedDecoder d(s, i == 1);
      auto decoded = decode_all(d, std::string_view(body).substr(0, n), 3, 4);
      ASSERT_TRUE(decoded.has_value()) << n << ": " << decoded.status();
      EXPECT_FALSE(d.is_done()) << n;
      const Status finished = d.finish();
      EXPECT_EQ(finished.reason(), "IncompleteBody") << n;
      EXPECT_EQ(finished.code(), Code::kInvalidArgument);
    }
    ChunkedDecoder d(s, i == 1);
    auto decoded = decode_all(d, body, 3, 4);
    ASSERT_TRUE(decoded.has_value()) << decoded.status();
    EXPECT_EQ(*decoded, "hello world");
    EXPECT_TRUE(d.finish().is_ok());
  }
}

TEST(ChunkedDecoderTest, SignedTrailer) {
  // Cross-checked with an independent Python implementation: the trailer signature of the
  // AWS example chunks followed by x-amz-checksum-crc32c:sOO8/Q==.
  std::string body = aws_body();
  body.resize(body.size() - 2);  // the final chunk's CRLF makes way for the trailers
  body +=
      "x-amz-checksum-crc32c:sOO8/Q==\r\n"
      "x-amz-trailer-signature:"
      "838d1eeafd0ec086f3e98ef47cfb73e3cf6fea3c489e22a61089fa643e8b4b61\r\n\r\n";
  ChunkedDecoder d(aws_signing(), /*expect_trailer=*/true);
  auto decoded = decode_all(d, body, 1000, 333);
  ASSERT_TRUE(decoded.has_value()) << decoded.status();
  EXPECT_EQ(decoded->size(), 66560u);
  EXPECT_TRUE(d.is_done());
  EXPECT_EQ(d.trailers(), (Headers{{"x-amz-checksum-crc32c", "sOO8/Q=="}}));

  std::string tampered = body;
  tampered.replace(tampered.find("sOO8"), 4, "sOO9");
  EXPECT_EQ(decode_status(aws_signing(), true, tampered).reason(), "SignatureDoesNotMatch");
  tampered = body;
  tampered.replace(tampered.find("838d1eea"), 8, "838d1eeb");
  EXPECT_EQ(decode_status(aws_signing(), true, tampered).reason(), "SignatureDoesNotMatch");
  tampered = body;
  tampered.erase(tampered.find("x-amz-trailer-signature"), 24 + 64 + 2);
  EXPECT_EQ(decode_status(aws_signing(), true, tampered).reason(), "IncompleteBody");
}

TEST(ChunkedDecoderTest, SignedTrailersRoundTrip) {
  const ChunkSigning s = aws_signing();
  const Headers trailers = {
      {"x-amz-checksum-sha256", "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="},
      {"x-amz-checksum-crc64nvme", "jSnVw/bqjr4="}};
  const std::string body = signed_body(s, {std::string(9000, 'x'), "hello world"}, &trailers);
  ChunkedDecoder d(s, true);
  auto decoded = decode_all(d, body, 13, 17);
  ASSERT_TRUE(decoded.has_value()) << decoded.status();
  EXPECT_EQ(*decoded, std::string(9000, 'x') + "hello world");
  EXPECT_EQ(d.trailers(), trailers);
}

TEST(ChunkedDecoderTest, UnsignedTrailerAsSdksSendIt) {
  // boto3 / aws-cli with STREAMING-UNSIGNED-PAYLOAD-TRAILER.
  std::string data(8192, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  Checksum crc(ChecksumAlgorithm::kCrc32);
  crc.update(data);
  const std::string body =
      "2000\r\n" + data + "\r\n0\r\nx-amz-checksum-crc32:" + crc.base64() + "\r\n\r\n";
  ChunkedDecoder d(std::nullopt, /*expect_trailer=*/true);
  auto decoded = decode_all(d, body, 100, 1000);
  ASSERT_TRUE(decoded.has_value()) << decoded.status();
  EXPECT_EQ(*decoded, data);
  EXPECT_TRUE(d.finish().is_ok());
  EXPECT_EQ(d.trailers(), (Headers{{"x-amz-checksum-crc32", crc.base64()}}));
  EXPECT_EQ(d.decoded_bytes(), 8192u);

  ChunkedDecoder byte_by_byte(std::nullopt, true);
  decoded = decode_all(byte_by_byte, body, 1, 1);
  ASSERT_TRUE(decoded.has_value()) << decoded.status();
  EXPECT_EQ(*decoded, data);
}

TEST(ChunkedDecoderTest, UnsignedTrailerVariants) {
  ChunkedDecoder* d = nullptr;
  // The brief's minimal example, an uppercase name and spaces around the value.
  EXPECT_TRUE(decode_status(std::nullopt, true,
                            "2\r\nab\r\n0\r\nX-Amz-Checksum-CRC32C: AAAAAA== \r\n\r\n", &d)
                  .is_ok());
  EXPECT_EQ(d->trailers(), (Headers{{"x-amz-checksum-crc32c", "AAAAAA=="}}));
  // No trailers at all; several chunks; uppercase hex sizes; chunk extensions ignored.
  EXPECT_TRUE(decode_status(std::nullopt, true, "0\r\n\r\n", &d).is_ok());
  EXPECT_TRUE(d->trailers().empty());
  EXPECT_TRUE(decode_status(std::nullopt, true,
                            "A\r\n0123456789\r\n1;ext=1\r\nx\r\n0\r\na:b\r\nc:\r\n\r\n", &d)
                  .is_ok());
  EXPECT_EQ(d->decoded_bytes(), 11u);
  EXPECT_EQ(d->trailers(), (Headers{{"a", "b"}, {"c", ""}}));
  // Without trailers expected, the final chunk ends with an empty line.
  EXPECT_TRUE(decode_status(std::nullopt, false, "3\r\nabc\r\n0\r\n\r\n").is_ok());
}

TEST(ChunkedDecoderTest, MalformedFraming) {
  const std::string sig = "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648";
  struct Case {
    bool is_signed;
    bool expect_trailer;
    std::string body;
  };
  const Case cases[] = {
      {false, true, "zz\r\nab\r\n0\r\n\r\n"},            // not hex
      {false, true, "\r\n"},                             // empty size
      {false, true, "0x2\r\nab\r\n0\r\n\r\n"},           // no 0x prefix
      {false, true, "-2\r\nab\r\n0\r\n\r\n"},            // sign
      {false, true, "fffffffffffffffff\r\n"},            // over 64 bits
      {false, true, "2\nab\r\n0\r\n\r\n"},               // LF without CR
      {false, true, "2\r\nabc\r\n0\r\n\r\n"},            // data longer than its size
      {false, true, "2\r\nab\n0\r\n\r\n"},               // chunk data without CRLF
      {false, true, "2\r\nab\r\n0\r\nnocolon\r\n\r\n"},  // trailer without ':'
      {false, true, "2\r\nab\r\n0\r\n:value\r\n\r\n"},   // trailer without a name
      {false, false,
       "2\r\nab\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"},       // trailers not expected
      {false, false, "0\r\n\rX"},                                      // junk after the final chunk
      {false, true, std::string(5000, '1') + "\r\n"},                  // size line over 4 KiB
      {false, true, "1;" + std::string(5000, 'e') + "\r\n"},           // extension over 4 KiB
      {false, true, "0\r\nx:" + std::string(5000, 'v') + "\r\n\r\n"},  // trailer over 4 KiB
      {true, false, "2\r\nab\r\n"},                                    // no chunk-signature
      {true, false, "2;chunk-sig=" + sig + "\r\nab\r\n"},              // wrong extension
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.substr(0, 60));
    const Status s =
        decode_status(c.is_signed ? std::optional<ChunkSigning>(aws_signing()) : std::nullopt,
                      c.expect_trailer, c.body);
    EXPECT_EQ(s.reason(), "IncompleteBody") << s;
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
  }
}

TEST(ChunkedDecoderTest, OverlongLineFailsWithinBoundedInput) {
  ChunkedDecoder d(std::nullopt, true);
  const std::string ones(4097, '1');
  std::vector<char> out(16);
  auto step = d.decode(std::span<const char>(ones.data(), 4096), out);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->consumed, 4096u);
  EXPECT_EQ(d.decode(std::span<const char>(ones.data(), 1), out).error().reason(),
            "IncompleteBody");
}

TEST(ChunkedDecoderTest, TrailersAreBounded) {
  std::string body = "0\r\n";
  for (int i = 0; i < 1000; ++i)
    body += fmt::format("x-amz-meta-{}:{}\r\n", i, std::string(20, 'v'));
  body += "\r\n";
  EXPECT_EQ(decode_status(std::nullopt, true, body).reason(), "IncompleteBody");
}

TEST(ChunkedDecoderTest, BytesAfterTheBodyAreLeft) {
  const std::string body = "3\r\nabc\r\n0\r\n\r\n";
  ChunkedDecoder d(std::nullopt, false);
  const std::string with_extra = body + "GET / HTTP/1.1\r\n";
  std::vector<char> out(64);
  auto step = d.decode(with_extra, out);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->consumed, body.size());
  EXPECT_EQ(step->produced, 3u);
  EXPECT_TRUE(d.is_done());
  step = d.decode(with_extra, out);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->consumed, 0u);
}

}  // namespace
}  // namespace silo::s3
