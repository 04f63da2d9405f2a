#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

// A bucket's CORS configuration (PutBucketCors / GetBucketCors) and the rule that answers
// a cross-origin request, as S3 documents them.
namespace silo::s3 {

struct CorsRule {
  std::string id;
  std::vector<std::string> allowed_origins;  // each may hold one '*'
  std::vector<std::string> allowed_methods;  // GET, PUT, POST, DELETE, HEAD
  std::vector<std::string> allowed_headers;  // each may hold one '*'; matched case-insensitively
  std::vector<std::string> expose_headers;
  std::optional<int> max_age_seconds;
  bool operator==(const CorsRule&) const = default;
};

inline constexpr size_t kMaxCorsRules = 100;

// <CORSConfiguration><CORSRule>...: 1..100 rules, each with an AllowedOrigin and an
// AllowedMethod. Errors: MalformedXML; InvalidRequest for an unsupported method, an
// origin or header with more than one '*', or a negative MaxAgeSeconds.
Result<std::vector<CorsRule>> parse_cors(std::string_view body);
std::string cors_xml(const std::vector<CorsRule>& rules);

// The first rule that allows `method` from `origin` with every header of
// `request_headers` (a comma-separated Access-Control-Request-Headers value); null if none.
const CorsRule* match_cors(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
                           std::string_view request_headers);

}  // namespace silo::s3
