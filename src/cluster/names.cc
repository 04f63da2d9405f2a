#include "cluster/names.h"

#include <cctype>

namespace silo::cluster {

Status validate_bucket_name(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) {
    return Status::invalid_argument("bucket name '{}' must be 3 to 63 characters long", name);
  }
  for (char c : name) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '.' || c == '-')) {
      return Status::invalid_argument(
          "bucket name '{}' may hold only lowercase letters, digits, '.' and '-'", name);
    }
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) {
    return Status::invalid_argument("bucket name '{}' must start and end with a letter or digit", name);
  }
  if (name.find("..") != std::string_view::npos) {
    return Status::invalid_argument("bucket name '{}' must not contain '..'", name);
  }
  int dots = 0;
  bool all_digits_or_dots = true;
  for (char c : name) {
    dots += c == '.';
    all_digits_or_dots &= std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  }
  if (dots == 3 && all_digits_or_dots) {
    return Status::invalid_argument("bucket name '{}' must not look like an IP address", name);
  }
  return Status::ok();
}

Status validate_object_name(std::string_view name) {
  if (name.empty()) return Status::invalid_argument("object name must not be empty");
  if (name.size() > kMaxObjectNameBytes) {
    return Status::invalid_argument("object name is {} bytes; the limit is {}", name.size(), kMaxObjectNameBytes);
  }
  if (name.find('\0') != std::string_view::npos) {
    return Status::invalid_argument("object name must not contain a NUL byte");
  }
  return Status::ok();
}

}  // namespace silo::cluster
