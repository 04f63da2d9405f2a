#include "s3/checksum.h"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <strings.h>

#include <array>
#include <cstring>
#include <memory>

#include "base/base64.h"

namespace silo::s3 {
namespace {

// Digests fetched once: OpenSSL 3 looks EVP_sha256()'s implementation up again on every
// init, and its one-shot HMAC() builds a MAC context on every call (3.3 us for a
// string to sign against 1.2 us with a fetched digest, one per request's signature).
const EVP_MD* fetched(const char* name, const EVP_MD* fallback) {
  const EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  return md != nullptr ? md : fallback;
}
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = fetched("SHA256", EVP_sha256());
  return md;
}
const EVP_MD* md5_md() {
  static const EVP_MD* const md = fetched("MD5", EVP_md5());
  return md;
}

struct Named {
  ChecksumAlgorithm algorithm;
  std::string_view name;
  std::string_view header;
};

constexpr Named kAlgorithms[] = {
    {ChecksumAlgorithm::kCrc32, "CRC32", "x-amz-checksum-crc32"},
    {ChecksumAlgorithm::kCrc32c, "CRC32C", "x-amz-checksum-crc32c"},
    {ChecksumAlgorithm::kCrc64Nvme, "CRC64NVME", "x-amz-checksum-crc64nvme"},
    {ChecksumAlgorithm::kSha1, "SHA1", "x-amz-checksum-sha1"},
    {ChecksumAlgorithm::kSha256, "SHA256", "x-amz-checksum-sha256"},
};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// CRC-64/NVME: reflected polynomial 0x9a6c9329ac4bc9b5, init and xorout all ones.
const std::array<uint64_t, 256>& crc64_nvme_table() {
  static const std::array<uint64_t, 256> table = [] {
    std::array<uint64_t, 256> t{};
    constexpr uint64_t kPoly = 0x9a6c9329ac4bc9b5ULL;
    for (uint64_t i = 0; i < 256; ++i) {
      uint64_t crc = i;
      for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ kPoly : crc >> 1;
      t[i] = crc;
    }
    return t;
  }();
  return table;
}

std::string big_endian(uint64_t value, int bytes) {
  std::string out(static_cast<size_t>(bytes), '\0');
  for (int i = bytes - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

std::string b64(std::string_view raw) {
  return base64::encode({reinterpret_cast<const unsigned char*>(raw.data()), raw.size()});
}

const EVP_MD* sha_of(ChecksumAlgorithm a) {
  return a == ChecksumAlgorithm::kSha1 ? EVP_sha1() : sha256_md();
}

bool is_sha(ChecksumAlgorithm a) {
  return a == ChecksumAlgorithm::kSha1 || a == ChecksumAlgorithm::kSha256;
}

std::string finish(const EVP_MD_CTX* ctx) {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  EVP_MD_CTX_copy_ex(copy, ctx);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(copy, digest, &length);
  EVP_MD_CTX_free(copy);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

// The width and reflected polynomial of a CRC algorithm; width 0 for the SHAs.
struct CrcShape {
  int width = 0;
  uint64_t polynomial = 0;
};

CrcShape crc_shape(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32: return {32, 0xedb88320ULL};
    case ChecksumAlgorithm::kCrc32c: return {32, 0x82f63b78ULL};
    case ChecksumAlgorithm::kCrc64Nvme: return {64, 0x9a6c9329ac4bc9b5ULL};
    default: return {};
  }
}

// GF(2) matrices over CRC registers (zlib's crc32_combine, for any reflected CRC whose
// init and xorout are equal): row n is the image of bit n.
using Gf2Matrix = std::array<uint64_t, 64>;

uint64_t gf2_times(const Gf2Matrix& matrix, uint64_t vector) {
  uint64_t sum = 0;
  for (size_t i = 0; vector != 0; vector >>= 1, ++i) {
    if (vector & 1) sum ^= matrix[i];
  }
  return sum;
}

void gf2_square(Gf2Matrix& square, const Gf2Matrix& matrix, int width) {
  for (int n = 0; n < width; ++n) square[static_cast<size_t>(n)] = gf2_times(matrix, matrix[static_cast<size_t>(n)]);
}

// The CRC of A then B from crc(A), crc(B) and B's length.
uint64_t crc_combine(CrcShape shape, uint64_t crc_a, uint64_t crc_b, uint64_t length_b) {
  if (length_b == 0) return crc_a;
  Gf2Matrix odd{};
  Gf2Matrix even{};
  odd[0] = shape.polynomial;  // the operator for one zero bit
  for (int n = 1; n < shape.width; ++n) odd[static_cast<size_t>(n)] = uint64_t{1} << (n - 1);
  gf2_square(even, odd, shape.width);  // two zero bits
  gf2_square(odd, even, shape.width);  // four
  while (true) {
    gf2_square(even, odd, shape.width);  // one zero byte, then 4, 16...
    if (length_b & 1) crc_a = gf2_times(even, crc_a);
    length_b >>= 1;
    if (length_b == 0) break;
    gf2_square(odd, even, shape.width);
    if (length_b & 1) crc_a = gf2_times(odd, crc_a);
    length_b >>= 1;
    if (length_b == 0) break;
  }
  return crc_a ^ crc_b;
}

size_t digest_bytes(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kCrc32:
    case ChecksumAlgorithm::kCrc32c: return 4;
    case ChecksumAlgorithm::kCrc64Nvme: return 8;
    case ChecksumAlgorithm::kSha1: return 20;
    case ChecksumAlgorithm::kSha256: return 32;
  }
  return 0;
}

}  // namespace

std::optional<std::string> multipart_checksum(ChecksumAlgorithm a, bool is_full_object,
                                              const std::vector<PartChecksum>& parts) {
  if (parts.empty()) return std::nullopt;
  std::vector<std::string> raw;
  for (const PartChecksum& part : parts) {
    auto decoded = base64::decode(part.base64);
    if (!decoded || decoded->size() != digest_bytes(a)) return std::nullopt;
    raw.push_back(std::move(*decoded));
  }
  if (!is_full_object) {
    if (a == ChecksumAlgorithm::kCrc64Nvme) return std::nullopt;  // S3 has no composite CRC64NVME
    Checksum composite(a);
    for (const std::string& r : raw) composite.update(r);
    return composite.base64() + "-" + std::to_string(parts.size());
  }
  const CrcShape shape = crc_shape(a);
  if (shape.width == 0) return std::nullopt;
  uint64_t crc = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    uint64_t value = 0;
    for (const char c : raw[i]) value = (value << 8) | static_cast<unsigned char>(c);
    crc = i == 0 ? value : crc_combine(shape, crc, value, parts[i].size);
  }
  return b64(big_endian(crc, shape.width / 8));
}

std::string_view checksum_name(ChecksumAlgorithm a) {
  for (const auto& n : kAlgorithms) {
    if (n.algorithm == a) return n.name;
  }
  return "";
}

std::string_view checksum_header(ChecksumAlgorithm a) {
  for (const auto& n : kAlgorithms) {
    if (n.algorithm == a) return n.header;
  }
  return "";
}

std::optional<ChecksumAlgorithm> checksum_from_name(std::string_view name) {
  for (const auto& n : kAlgorithms) {
    if (iequals(n.name, name)) return n.algorithm;
  }
  return std::nullopt;
}

std::optional<ChecksumAlgorithm> checksum_from_header(std::string_view header_name) {
  for (const auto& n : kAlgorithms) {
    if (iequals(n.header, header_name)) return n.algorithm;
  }
  return std::nullopt;
}

Checksum::Checksum(ChecksumAlgorithm a) : algorithm_(a) {
  if (is_sha(a)) {
    auto* ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, sha_of(a), nullptr);
    sha_ = ctx;
  }
}

Checksum::~Checksum() {
  if (sha_ != nullptr) EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(sha_));
}

Checksum::Checksum(Checksum&& other) noexcept
    : algorithm_(other.algorithm_), crc_(other.crc_), sha_(std::exchange(other.sha_, nullptr)) {}

Checksum& Checksum::operator=(Checksum&& other) noexcept {
  if (this != &other) {
    if (sha_ != nullptr) EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(sha_));
    algorithm_ = other.algorithm_;
    crc_ = other.crc_;
    sha_ = std::exchange(other.sha_, nullptr);
  }
  return *this;
}

void Checksum::update(std::span<const char> data) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
      // crc32_gzip_refl takes and returns the finished CRC (it inverts inside).
      crc_ = crc32_gzip_refl(static_cast<uint32_t>(crc_), bytes, data.size());
      break;
    case ChecksumAlgorithm::kCrc32c:
      // crc32_iscsi neither pre- nor post-inverts: keep the raw register.
      crc_ = crc32_iscsi(const_cast<unsigned char*>(bytes), static_cast<int>(data.size()),
                         static_cast<unsigned int>(crc_ ^ 0xffffffffULL)) ^
             0xffffffffULL;
      break;
    case ChecksumAlgorithm::kCrc64Nvme: {
      const auto& table = crc64_nvme_table();
      uint64_t crc = ~crc_;
      for (size_t i = 0; i < data.size(); ++i) crc = table[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
      crc_ = ~crc;
      break;
    }
    case ChecksumAlgorithm::kSha1:
    case ChecksumAlgorithm::kSha256:
      EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(sha_), bytes, data.size());
      break;
  }
}

std::string Checksum::base64() const {
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32:
    case ChecksumAlgorithm::kCrc32c:
      return b64(big_endian(crc_ & 0xffffffffULL, 4));
    case ChecksumAlgorithm::kCrc64Nvme:
      return b64(big_endian(crc_, 8));
    case ChecksumAlgorithm::kSha1:
    case ChecksumAlgorithm::kSha256:
      return b64(finish(static_cast<EVP_MD_CTX*>(sha_)));
  }
  return "";
}

Digest::Digest(const void* md) : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), static_cast<const EVP_MD*>(md), nullptr);
}

Digest::~Digest() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Digest::update(std::span<const char> data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size());
}

std::string Digest::raw() const { return finish(static_cast<EVP_MD_CTX*>(ctx_)); }

std::string Digest::hex() const { return to_hex(raw()); }

Md5::Md5() : Digest(md5_md()) {}

Sha256::Sha256() : Digest(sha256_md()) {}

std::string sha256_hex(std::string_view data) {
  Sha256 sha;
  sha.update(data);
  return sha.hex();
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  // RFC 2104 over the fetched SHA-256, with a context this thread keeps.
  constexpr size_t kBlock = 64;
  constexpr size_t kSize = 32;
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  const auto digest = [c = ctx.get()](std::string_view first, std::string_view second, unsigned char* out) {
    unsigned int length = 0;
    EVP_DigestInit_ex(c, sha256_md(), nullptr);
    EVP_DigestUpdate(c, first.data(), first.size());
    EVP_DigestUpdate(c, second.data(), second.size());
    EVP_DigestFinal_ex(c, out, &length);
  };
  std::array<unsigned char, kBlock> block{};  // the key, hashed first when longer than a block
  if (key.size() > kBlock) {
    digest(key, {}, block.data());
  } else {
    std::memcpy(block.data(), key.data(), key.size());
  }
  std::array<char, kBlock> pad{};
  for (size_t i = 0; i < kBlock; ++i) pad[i] = static_cast<char>(block[i] ^ 0x36);
  std::array<unsigned char, kSize> inner{};
  digest({pad.data(), kBlock}, data, inner.data());
  for (size_t i = 0; i < kBlock; ++i) pad[i] = static_cast<char>(block[i] ^ 0x5c);
  std::string out(kSize, '\0');
  digest({pad.data(), kBlock}, {reinterpret_cast<const char*>(inner.data()), kSize},
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string to_hex(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (const unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

}  // namespace silo::s3
