#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace silo::s3 {

// The x-amz-checksum-* algorithms of S3 (flexible checksums).
enum class ChecksumAlgorithm { kCrc32, kCrc32c, kCrc64Nvme, kSha1, kSha256 };

std::string_view checksum_name(
    ChecksumAlgorithm a);  // "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"
std::string_view checksum_header(ChecksumAlgorithm a);  // "x-amz-checksum-crc32", ...
// Case-insensitive: "crc32" or "CRC32".
std::optional<ChecksumAlgorithm> checksum_from_name(std::string_view name);
// Case-insensitive header name: "x-amz-checksum-crc32" -> kCrc32.
std::optional<ChecksumAlgorithm> checksum_from_header(std::string_view header_name);

// A streaming checksum whose value is what AWS puts in x-amz-checksum-*: the base64 of
// the big-endian digest. CRCs come from ISA-L (CRC64/NVME by table), SHAs from OpenSSL.
class Checksum {
 public:
  explicit Checksum(ChecksumAlgorithm a);
  ~Checksum();
  Checksum(Checksum&& other) noexcept;
  Checksum& operator=(Checksum&& other) noexcept;
  void update(std::span<const char> data);
  std::string base64() const;
  ChecksumAlgorithm algorithm() const { return algorithm_; }

 private:
  ChecksumAlgorithm algorithm_;
  uint64_t crc_ = 0;
  void* sha_ = nullptr;  // EVP_MD_CTX for the SHA algorithms
};

// One part of a multipart object: its checksum (base64, as stored) and size.
struct PartChecksum {
  std::string base64;
  uint64_t size = 0;
};

// The checksum of a multipart object from its parts', in order, as S3 makes it:
// - composite: the algorithm's checksum of the parts' raw checksums, "-N" appended
//   (CRC32, CRC32C, SHA1, SHA256);
// - full object (CRC32, CRC32C, CRC64NVME): the CRC of the whole object, the parts' CRCs
//   combined over their sizes (no byte is read again).
// nullopt for a part value that is not a base64 checksum of the algorithm, no parts, or a
// type the algorithm does not have.
std::optional<std::string> multipart_checksum(ChecksumAlgorithm a, bool is_full_object,
                                              const std::vector<PartChecksum>& parts);

// Streaming digests over OpenSSL's EVP.
class Digest {
 public:
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  ~Digest();
  void update(std::span<const char> data);
  std::string raw() const;  // the digest of what came so far (the stream may go on)
  std::string hex() const;

 protected:
  explicit Digest(const void* md);

 private:
  void* ctx_;
};

class Md5 : public Digest {
 public:
  Md5();
};

class Sha256 : public Digest {
 public:
  Sha256();
};

std::string sha256_hex(std::string_view data);
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw 32 bytes
std::string to_hex(std::string_view raw);

}  // namespace silo::s3
