#include "s3/checksum.h"

#include "base/base64.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace silo::s3 {
namespace {

std::span<const char> bytes(std::string_view s) { return {s.data(), s.size()}; }

std::string checksum_of(ChecksumAlgorithm a, std::string_view data) {
  Checksum c(a);
  c.update(bytes(data));
  return c.base64();
}

// Expected values computed with Python's zlib/hashlib and bitwise CRC-32C / CRC-64/NVME.
struct Vector {
  std::string input;
  std::string crc32, crc32c, crc64nvme, sha1, sha256;
};

const Vector kVectors[] = {
    {"", "AAAAAA==", "AAAAAA==", "AAAAAAAAAAA=", "2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
     "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
    {"123456789", "y/Q5Jg==", "4waSgw==", "rosUhgp5mIg=", "98O8HYCOBHMq32eZZczDTKeuNEE=",
     "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU="},
    {"hello world", "DUoRhQ==", "yZRlqg==", "jSnVw/bqjr4=", "Kq5sNclPz7QV2+lfQIuc6R7oRu0=",
     "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="},
    {std::string(1000, 'a'), "mjjaAw==", "nxnvag==", "6rMjKymX9eU=", "KR6abGaZSUm1e6XmUDYemPw2sbo=",
     "Qe3s5C1j6Nm/UVqbppMuHCDLyfWl0TRkWttdsblzfqM="},
};

TEST(ChecksumTest, MatchesKnownVectors) {
  for (const Vector& v : kVectors) {
    SCOPED_TRACE(v.input.substr(0, 16));
    EXPECT_EQ(checksum_of(ChecksumAlgorithm::kCrc32, v.input), v.crc32);
    EXPECT_EQ(checksum_of(ChecksumAlgorithm::kCrc32c, v.input), v.crc32c);
    EXPECT_EQ(checksum_of(ChecksumAlgorithm::kCrc64Nvme, v.input), v.crc64nvme);
    EXPECT_EQ(checksum_of(ChecksumAlgorithm::kSha1, v.input), v.sha1);
    EXPECT_EQ(checksum_of(ChecksumAlgorithm::kSha256, v.input), v.sha256);
  }
}

TEST(ChecksumTest, Crc64NvmeCheckValue) {
  // The catalogue check value of CRC-64/NVME, 0xae8b14860a799888, big-endian in base64.
  EXPECT_EQ(checksum_of(ChecksumAlgorithm::kCrc64Nvme, "123456789"), "rosUhgp5mIg=");
}

TEST(ChecksumTest, StreamingEqualsOneShotForEverySplit) {
  std::mt19937 rng(20240102);
  std::string data(5000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (const auto a :
       {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme,
        ChecksumAlgorithm::kSha1, ChecksumAlgorithm::kSha256}) {
    SCOPED_TRACE(checksum_name(a));
    const std::string whole = checksum_of(a, data);
    for (int trial = 0; trial < 20; ++trial) {
      Checksum c(a);
      size_t at = 0;
      while (at < data.size()) {
        const size_t n = std::min<size_t>(data.size() - at, rng() % 700);
        c.update(std::span<const char>(data.data() + at, n));
        at += n;
      }
      EXPECT_EQ(c.base64(), whole);
    }
  }
}

TEST(ChecksumTest, Base64DoesNotEndTheStream) {
  Checksum c(ChecksumAlgorithm::kSha256);
  c.update(bytes("hello "));
  EXPECT_EQ(c.base64(), checksum_of(ChecksumAlgorithm::kSha256, "hello "));
  c.update(bytes("world"));
  EXPECT_EQ(c.base64(), "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=");
  EXPECT_EQ(c.algorithm(), ChecksumAlgorithm::kSha256);
}

TEST(ChecksumTest, MovedChecksumKeepsItsState) {
  Checksum a(ChecksumAlgorithm::kSha1);
  a.update(bytes("hello "));
  Checksum b(std::move(a));
  b.update(bytes("world"));
  EXPECT_EQ(b.base64(), "Kq5sNclPz7QV2+lfQIuc6R7oRu0=");
  Checksum c(ChecksumAlgorithm::kCrc32);
  c = std::move(b);
  EXPECT_EQ(c.algorithm(), ChecksumAlgorithm::kSha1);
  EXPECT_EQ(c.base64(), "Kq5sNclPz7QV2+lfQIuc6R7oRu0=");
}

TEST(ChecksumTest, NamesAndHeaders) {
  EXPECT_EQ(checksum_name(ChecksumAlgorithm::kCrc32), "CRC32");
  EXPECT_EQ(checksum_name(ChecksumAlgorithm::kCrc32c), "CRC32C");
  EXPECT_EQ(checksum_name(ChecksumAlgorithm::kCrc64Nvme), "CRC64NVME");
  EXPECT_EQ(checksum_name(ChecksumAlgorithm::kSha1), "SHA1");
  EXPECT_EQ(checksum_name(ChecksumAlgorithm::kSha256), "SHA256");
  EXPECT_EQ(checksum_header(ChecksumAlgorithm::kCrc32), "x-amz-checksum-crc32");
  EXPECT_EQ(checksum_header(ChecksumAlgorithm::kCrc32c), "x-amz-checksum-crc32c");
  EXPECT_EQ(checksum_header(ChecksumAlgorithm::kCrc64Nvme), "x-amz-checksum-crc64nvme");
  EXPECT_EQ(checksum_header(ChecksumAlgorithm::kSha1), "x-amz-checksum-sha1");
  EXPECT_EQ(checksum_header(ChecksumAlgorithm::kSha256), "x-amz-checksum-sha256");

  EXPECT_EQ(checksum_from_name("crc32"), ChecksumAlgorithm::kCrc32);
  EXPECT_EQ(checksum_from_name("CRC32C"), ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(checksum_from_name("Crc64Nvme"), ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_EQ(checksum_from_name("sha1"), ChecksumAlgorithm::kSha1);
  EXPECT_EQ(checksum_from_name("SHA256"), ChecksumAlgorithm::kSha256);
  EXPECT_EQ(checksum_from_name("md5"), std::nullopt);
  EXPECT_EQ(checksum_from_name(""), std::nullopt);
  EXPECT_EQ(checksum_from_name("crc3"), std::nullopt);

  EXPECT_EQ(checksum_from_header("X-Amz-Checksum-CRC32"), ChecksumAlgorithm::kCrc32);
  EXPECT_EQ(checksum_from_header("x-amz-checksum-crc32c"), ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(checksum_from_header("x-amz-checksum-crc64nvme"), ChecksumAlgorithm::kCrc64Nvme);
  EXPECT_EQ(checksum_from_header("x-amz-checksum-sha256"), ChecksumAlgorithm::kSha256);
  EXPECT_EQ(checksum_from_header("x-amz-checksum-algorithm"), std::nullopt);
  EXPECT_EQ(checksum_from_header("crc32"), std::nullopt);
}

// The full-object CRC of parts equals the CRC of their bytes, whatever the split; the
// composite is the checksum of the raw part checksums with "-N".
TEST(ChecksumTest, MultipartChecksumsFromParts) {
  std::mt19937 random(7);
  std::string data(300000, '\0');
  for (char& c : data) c = static_cast<char>(random());
  const std::vector<std::vector<size_t>> splits = {{300000}, {1, 299999}, {100000, 100000, 100000}, {0, 5, 299995}};
  for (const ChecksumAlgorithm a : {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme}) {
    for (const auto& split : splits) {
      std::vector<PartChecksum> parts;
      size_t at = 0;
      for (const size_t size : split) {
        parts.push_back({checksum_of(a, std::string_view(data).substr(at, size)), size});
        at += size;
      }
      EXPECT_EQ(multipart_checksum(a, true, parts), checksum_of(a, data)) << checksum_name(a) << " " << split.size();
    }
  }
  for (const ChecksumAlgorithm a : {ChecksumAlgorithm::kCrc32, ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kSha1,
                                    ChecksumAlgorithm::kSha256}) {
    const std::string first = checksum_of(a, "part one");
    const std::string second = checksum_of(a, "part two");
    Checksum expected(a);
    for (const std::string& part : {first, second}) {
      auto raw = base64::decode(part);
      ASSERT_TRUE(raw);
      expected.update(bytes(*raw));
    }
    EXPECT_EQ(multipart_checksum(a, false, {{first, 8}, {second, 8}}), expected.base64() + "-2") << checksum_name(a);
  }
  // AWS's composite of CRC32 over parts "a" and "b" (the CRC32 of their two CRCs' bytes).
  EXPECT_EQ(multipart_checksum(ChecksumAlgorithm::kCrc32, false,
                               {{checksum_of(ChecksumAlgorithm::kCrc32, "a"), 1}, {checksum_of(ChecksumAlgorithm::kCrc32, "b"), 1}}),
            checksum_of(ChecksumAlgorithm::kCrc32, std::string("\xe8\xb7\xbe\x43\x71\xbe\xef\xf9", 8)) + "-2");
  EXPECT_EQ(multipart_checksum(ChecksumAlgorithm::kSha256, true, {{checksum_of(ChecksumAlgorithm::kSha256, "x"), 1}}),
            std::nullopt);
  EXPECT_EQ(multipart_checksum(ChecksumAlgorithm::kCrc64Nvme, false, {{checksum_of(ChecksumAlgorithm::kCrc64Nvme, "x"), 1}}),
            std::nullopt);
  EXPECT_EQ(multipart_checksum(ChecksumAlgorithm::kCrc32, true, {{"not base64", 1}}), std::nullopt);
  EXPECT_EQ(multipart_checksum(ChecksumAlgorithm::kCrc32, true, {{checksum_of(ChecksumAlgorithm::kSha1, "x"), 1}}),
            std::nullopt);
  EXPECT_EQ(multipart_checksum(ChecksumAlgorithm::kCrc32, true, {}), std::nullopt);
}

TEST(DigestTest, Md5AndSha256) {
  Md5 md5;
  EXPECT_EQ(md5.hex(), "d41d8cd98f00b204e9800998ecf8427e");
  md5.update(bytes("hello "));
  md5.update(bytes("world"));
  EXPECT_EQ(md5.hex(), "5eb63bbbe01eeed093cb22bb8f5acdc3");
  EXPECT_EQ(md5.raw().size(), 16u);
  EXPECT_EQ(to_hex(md5.raw()), md5.hex());

  Sha256 sha;
  sha.update(std::string_view("123456789"));
  EXPECT_EQ(sha.hex(), "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225");
  EXPECT_EQ(sha.raw().size(), 32u);

  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("hello world"),
            "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
}

TEST(DigestTest, HmacSha256) {
  // RFC 4231 test case 2 and the common "quick brown fox" vector.
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(to_hex(hmac_sha256("key", "The quick brown fox jumps over the lazy dog")),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
  EXPECT_EQ(hmac_sha256("", "").size(), 32u);
  // RFC 4231 test cases 6 and 7: keys longer than a block are hashed first.
  const std::string long_key(131, '\xaa');
  EXPECT_EQ(to_hex(hmac_sha256(long_key, "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(to_hex(hmac_sha256(long_key, "This is a test using a larger than block-size key and a larger than "
                                         "block-size data. The key needs to be hashed before being used by the "
                                         "HMAC algorithm.")),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // A key of exactly one block is used as it is; one byte more is hashed (Python's hmac).
  EXPECT_EQ(to_hex(hmac_sha256(std::string(64, 'k'), "data")),
            "93244b031118b8060c6619e5900fcf916faefb2d8d020fecb22ae0f62275db08");
  EXPECT_EQ(to_hex(hmac_sha256(std::string(65, 'k'), "data")),
            "a79b53d0bf1cb4bb00c301979e6e60ef792a435cafabd76ab9e8989bbdef2dff");
}

TEST(DigestTest, ToHex) {
  EXPECT_EQ(to_hex(std::string("\x00\x0f\xf0\xff", 4)), "000ff0ff");
  EXPECT_EQ(to_hex(""), "");
}

}  // namespace
}  // namespace silo::s3
