#include "s3/conditions.h"

#include "s3/http_time.h"

namespace silo::s3 {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the ETag list `header` ("*", "\"a\", W/\"b\"", or a bare value) names `etag`.
bool matches(std::string_view header, std::string_view etag) {
  size_t start = 0;
  while (start <= header.size()) {
    size_t end = header.find(',', start);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = trim(header.substr(start, end - start));
    start = end + 1;
    if (item == "*") return true;
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') item = item.substr(1, item.size() - 2);
    if (!item.empty() && item == etag) return true;
  }
  return false;
}

struct Evaluated {
  bool match_failed = false;     // If-Match present and false, or If-Unmodified-Since false alone
  bool none_match_hit = false;   // If-None-Match matched, or If-Modified-Since not modified alone
};

Evaluated evaluate(const Conditions& c, std::string_view etag, int64_t last_modified) {
  Evaluated e;
  if (c.if_match) {
    e.match_failed = !matches(*c.if_match, etag);
  } else if (c.if_unmodified_since) {
    if (auto t = parse_http_date(*c.if_unmodified_since)) e.match_failed = last_modified > *t;
  }
  if (c.if_none_match) {
    e.none_match_hit = matches(*c.if_none_match, etag);
  } else if (c.if_modified_since) {
    if (auto t = parse_http_date(*c.if_modified_since)) e.none_match_hit = last_modified <= *t;
  }
  return e;
}

}  // namespace

ConditionResult evaluate_read(const Conditions& c, std::string_view etag, int64_t last_modified) {
  const Evaluated e = evaluate(c, etag, last_modified);
  if (e.match_failed) return ConditionResult::kPreconditionFailed;
  if (e.none_match_hit) return ConditionResult::kNotModified;
  return ConditionResult::kProceed;
}

ConditionResult evaluate_copy_source(const Conditions& c, std::string_view etag, int64_t last_modified) {
  const Evaluated e = evaluate(c, etag, last_modified);
  return e.match_failed || e.none_match_hit ? ConditionResult::kPreconditionFailed : ConditionResult::kProceed;
}

Status evaluate_write(const Conditions& c, const std::string* current_etag) {
  if (c.if_none_match) {
    if (trim(*c.if_none_match) != "*") {
      return Status::unimplemented("If-None-Match on a write only supports *").with_reason("NotImplemented");
    }
    if (current_etag != nullptr) {
      return Status::failed_precondition("At least one of the pre-conditions you specified did not hold")
          .with_reason("PreconditionFailed");
    }
  }
  if (c.if_match) {
    if (current_etag == nullptr) {
      return Status::not_found("The specified key does not exist.").with_reason("NoSuchKey");
    }
    if (!matches(*c.if_match, *current_etag)) {
      return Status::failed_precondition("At least one of the pre-conditions you specified did not hold")
          .with_reason("PreconditionFailed");
    }
  }
  return Status::ok();
}

}  // namespace silo::s3
