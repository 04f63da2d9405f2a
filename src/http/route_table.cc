#include "http/route_table.h"

namespace silo::http {

PathPattern::PathPattern(std::string_view pattern) : text_(pattern) {
  SILO_CHECK(!pattern.empty() && pattern.front() == '/') << "a route pattern starts with '/': " << pattern;
  if (pattern.ends_with("**")) {
    kind_ = Kind::kSubtree;
    pattern.remove_suffix(2);
  } else if (pattern.ends_with("/*")) {
    kind_ = Kind::kPrefix;
    pattern.remove_suffix(1);
  }
  SILO_CHECK(pattern.find('*') == std::string_view::npos) << "'*' only ends a route pattern: " << text_;
  base_ = std::string(pattern);
}

bool PathPattern::matches(std::string_view path, std::string_view& rest) const {
  switch (kind_) {
    case Kind::kExact:
      if (path != base_) return false;
      rest = {};
      return true;
    case Kind::kSubtree:
      if (!path.starts_with(base_)) return false;
      rest = path.substr(base_.size());
      return rest.empty() || rest.front() == '/';
    case Kind::kPrefix:
      if (!path.starts_with(base_)) return false;
      rest = path.substr(base_.size());
      return true;
  }
  return false;
}

}  // namespace silo::http
