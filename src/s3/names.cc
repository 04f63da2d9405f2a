#include "s3/names.h"

#include <fmt/format.h>

#include "base/text.h"

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

Status validate_object_name(std::string_view name) {
  if (name.empty()) return Status::invalid_argument("the object name is empty").with_reason("InvalidArgument");
  if (name.size() > kMaxObjectNameBytes) {
    return Status::invalid_argument("Your key is too long: {} bytes, at most {}", name.size(), kMaxObjectNameBytes)
        .with_reason("KeyTooLongError");
  }
  if (!text::is_utf8(name)) {
    return Status::invalid_argument("the object name is not valid UTF-8").with_reason("InvalidArgument");
  }
  if (name.find('\0') != std::string_view::npos) {
    return Status::invalid_argument("the object name holds a NUL byte").with_reason("InvalidArgument");
  }
  return Status::ok();
}

}  // namespace silo::s3
