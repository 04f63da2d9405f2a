#include "http/route_table.h"

#include <algorithm>

namespace silo::http {

std::string_view PathParams::get(std::string_view name) const {
  for (size_t i = 0; i < size_; ++i) {
    if (values_[i].first == name) return values_[i].second;
  }
  SILO_CHECK(false) << "no path parameter {" << name << "} in the matched route";
  return {};
}

PathPattern::PathPattern(std::string_view pattern) : text_(pattern) {
  SILO_CHECK(!pattern.empty() && pattern.front() == '/') << "a route pattern starts with '/': " << pattern;
  if (pattern.ends_with("...}")) {
    const size_t open = pattern.rfind('{');
    SILO_CHECK(open != std::string_view::npos && open > 0 && pattern[open - 1] == '/' &&
               open + 5 < pattern.size())
        << "{name...} is a whole last segment with a name: " << text_;
    tail_name_ = std::string(pattern.substr(open + 1, pattern.size() - open - 5));
    kind_ = Kind::kPrefix;
    pattern.remove_suffix(pattern.size() - open);
  } else if (pattern.ends_with("**")) {
    kind_ = Kind::kSubtree;
    pattern.remove_suffix(2);
  } else if (pattern.ends_with("/*")) {
    kind_ = Kind::kPrefix;
    pattern.remove_suffix(1);
  }
  SILO_CHECK(pattern.find('*') == std::string_view::npos) << "'*' only ends a route pattern: " << text_;
  size_t params = 0;
  while (!pattern.empty()) {
    const size_t open = pattern.find('{');
    if (open != 0) {
      const std::string_view literal = pattern.substr(0, open);
      SILO_CHECK(literal.find('}') == std::string_view::npos) << "'}' without '{': " << text_;
      pieces_.push_back({std::string(literal), false});
      if (open == std::string_view::npos) break;
      pattern.remove_prefix(open);
      continue;
    }
    const size_t close = pattern.find('}');
    SILO_CHECK(close != std::string_view::npos && close > 1)
        << "'{' without a name and '}': " << text_;
    const std::string_view name = pattern.substr(1, close - 1);
    SILO_CHECK(name.find_first_of("{/") == std::string_view::npos)
        << "a parameter's name is one word: " << text_;
    const bool is_segment = pieces_.back().text.ends_with('/') &&
                            (close + 1 == pattern.size() || pattern[close + 1] == '/');
    SILO_CHECK(is_segment) << "a parameter is a whole segment: " << text_;
    SILO_CHECK(++params + (tail_name_.empty() ? 0 : 1) <= PathParams::kMaxParams)
        << "too many parameters: " << text_;
    pieces_.push_back({std::string(name), true});
    pattern.remove_prefix(close + 1);
  }
}

bool PathPattern::matches(std::string_view path, std::string_view& rest) const {
  PathParams unused;
  return matches(path, rest, unused);
}

bool PathPattern::matches(std::string_view path, std::string_view& rest, PathParams& params) const {
  params.clear();
  size_t at = 0;
  for (const Piece& piece : pieces_) {
    if (!piece.is_param) {
      if (path.substr(at, piece.text.size()) != piece.text) return false;
      at += piece.text.size();
      continue;
    }
    const size_t end = std::min(path.find('/', at), path.size());
    if (end == at) return false;  // an empty segment is no value
    params.add(piece.text, path.substr(at, end - at));
    at = end;
  }
  rest = path.substr(at);
  if (!tail_name_.empty()) params.add(tail_name_, rest);
  switch (kind_) {
    case Kind::kExact:
      return rest.empty();
    case Kind::kSubtree:
      return rest.empty() || rest.front() == '/';
    case Kind::kPrefix:
      return true;
  }
  return false;
}

}  // namespace silo::http
