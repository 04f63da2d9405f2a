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

Result<ObjectName> parse_copy_source(std::string_view value) {
  std::string_view text = value;
  if (const size_t q = text.find('?'); q != std::string_view::npos) {
    const std::string_view query = text.substr(q + 1);
    if (query != "versionId=null" && !query.empty()) {
      return Status::invalid_argument("copy source {}: versions are not supported (only versionId=null)", value)
          .with_reason("InvalidArgument");
    }
    text = text.substr(0, q);
  }
  if (!text.empty() && text.front() == '/') text.remove_prefix(1);
  auto decoded = text::percent_decode(text);
  if (!decoded) {
    return Status::invalid_argument("x-amz-copy-source is not URL-encoded correctly").with_reason("InvalidArgument");
  }
  const size_t slash = decoded->find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == decoded->size()) {
    return Status::invalid_argument("x-amz-copy-source must be bucket/key").with_reason("InvalidArgument");
  }
  return ObjectName{decoded->substr(0, slash), decoded->substr(slash + 1)};
}

}  // namespace silo::s3
