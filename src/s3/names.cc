#include "s3/names.h"

#include <fmt/format.h>

namespace silo::s3 {
namespace {

bool is_ipv4(std::string_view s) {
  int parts = 0;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('.', start);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view p = s.substr(start, end - start);
    if (p.empty() || p.size() > 3) return false;
    for (char c : p) {
      if (c < '0' || c > '9') return false;
    }
    ++parts;
    start = end + 1;
  }
  return parts == 4;
}

bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (next & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

Status bad_bucket(std::string_view name, std::string_view why) {
  return Status::invalid_argument("The specified bucket is not valid: '{}' {}", name, why).with_reason("InvalidBucketName");
}

}  // namespace

Status validate_bucket_name(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return bad_bucket(name, "must be 3 to 63 characters long");
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
      return bad_bucket(name, "may hold only lowercase letters, digits, '.' and '-'");
    }
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return bad_bucket(name, "must begin and end with a letter or digit");
  if (name.find("..") != std::string_view::npos) return bad_bucket(name, "must not hold two adjacent periods");
  if (is_ipv4(name)) return bad_bucket(name, "must not be formatted as an IP address");
  for (std::string_view prefix : {"xn--", "sthree-", "amzn-s3-demo-"}) {
    if (name.substr(0, prefix.size()) == prefix) return bad_bucket(name, fmt::format("must not start with {}", prefix));
  }
  for (std::string_view suffix : {"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      return bad_bucket(name, fmt::format("must not end with {}", suffix));
    }
  }
  return Status::ok();
}

Status validate_object_key(std::string_view key) {
  if (key.empty()) return Status::invalid_argument("the object key is empty").with_reason("InvalidArgument");
  if (key.size() > 1024) {
    return Status::invalid_argument("Your key is too long: {} bytes, at most 1024", key.size())
        .with_reason("KeyTooLongError");
  }
  if (!is_utf8(key)) return Status::invalid_argument("the object key is not valid UTF-8").with_reason("InvalidArgument");
  return Status::ok();
}

}  // namespace silo::s3
