#include "s3/cors.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "s3/xml.h"

namespace silo::s3 {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// `pattern` with at most one '*' (any run of characters) against `text`.
bool wildcard_match(std::string_view pattern, std::string_view text) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  const std::string_view head = pattern.substr(0, star);
  const std::string_view tail = pattern.substr(star + 1);
  return text.size() >= head.size() + tail.size() && text.starts_with(head) && text.ends_with(tail);
}

bool has_one_star_at_most(std::string_view text) { return std::count(text.begin(), text.end(), '*') <= 1; }

}  // namespace

Result<std::vector<CorsRule>> parse_cors(std::string_view body) {
  ASSIGN_OR_RETURN(const XmlNode root, parse_xml(body));
  if (root.name != "CORSConfiguration") return malformed_xml("the root element must be CORSConfiguration");
  std::vector<CorsRule> rules;
  for (const XmlNode& node : root.children) {
    if (node.name != "CORSRule") continue;
    CorsRule rule;
    for (const XmlNode& c : node.children) {
      const std::string value(trimmed(c.text));
      if (c.name == "ID") {
        rule.id = value;
      } else if (c.name == "AllowedOrigin" || c.name == "AllowedHeader") {
        if (!has_one_star_at_most(value)) {
          return Status::invalid_argument("{} \"{}\" can not have more than one wildcard.", c.name, value)
              .with_reason("InvalidRequest");
        }
        (c.name == "AllowedOrigin" ? rule.allowed_origins : rule.allowed_headers).push_back(value);
      } else if (c.name == "AllowedMethod") {
        static constexpr std::string_view kMethods[] = {"GET", "PUT", "POST", "DELETE", "HEAD"};
        if (std::find(std::begin(kMethods), std::end(kMethods), value) == std::end(kMethods)) {
          return Status::invalid_argument("Found unsupported HTTP method in CORS config. Unsupported method is {}",
                                          value)
              .with_reason("InvalidRequest");
        }
        rule.allowed_methods.push_back(value);
      } else if (c.name == "ExposeHeader") {
        rule.expose_headers.push_back(value);
      } else if (c.name == "MaxAgeSeconds") {
        int seconds = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
        if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
          return malformed_xml("MaxAgeSeconds must be an integer");
        }
        if (seconds < 0) {
          return Status::invalid_argument("MaxAgeSeconds must not be negative").with_reason("InvalidRequest");
        }
        rule.max_age_seconds = seconds;
      }
    }
    if (rule.allowed_origins.empty() || rule.allowed_methods.empty()) {
      return malformed_xml("each CORSRule needs an AllowedOrigin and an AllowedMethod");
    }
    rules.push_back(std::move(rule));
  }
  if (rules.empty() || rules.size() > kMaxCorsRules) return malformed_xml("a CORSConfiguration has 1 to 100 CORSRules");
  return rules;
}

std::string cors_xml(const std::vector<CorsRule>& rules) {
  XmlWriter xml;
  xml.open("CORSConfiguration", kS3Xmlns);
  for (const CorsRule& rule : rules) {
    xml.open("CORSRule");
    if (!rule.id.empty()) xml.element("ID", rule.id);
    for (const auto& v : rule.allowed_headers) xml.element("AllowedHeader", v);
    for (const auto& v : rule.allowed_methods) xml.element("AllowedMethod", v);
    for (const auto& v : rule.allowed_origins) xml.element("AllowedOrigin", v);
    for (const auto& v : rule.expose_headers) xml.element("ExposeHeader", v);
    if (rule.max_age_seconds) xml.element("MaxAgeSeconds", std::to_string(*rule.max_age_seconds));
    xml.close();
  }
  xml.close();
  return xml.finish();
}

const CorsRule* match_cors(const std::vector<CorsRule>& rules, std::string_view origin, std::string_view method,
                           std::string_view request_headers) {
  std::vector<std::string> wanted;
  for (size_t start = 0; start <= request_headers.size();) {
    size_t end = request_headers.find(',', start);
    if (end == std::string_view::npos) end = request_headers.size();
    const std::string_view header = trimmed(request_headers.substr(start, end - start));
    if (!header.empty()) wanted.push_back(lower(header));
    start = end + 1;
  }
  for (const CorsRule& rule : rules) {
    const bool origin_ok = std::any_of(rule.allowed_origins.begin(), rule.allowed_origins.end(),
                                       [&](const std::string& o) { return wildcard_match(o, origin); });
    const bool method_ok = std::find(rule.allowed_methods.begin(), rule.allowed_methods.end(), method) !=
                           rule.allowed_methods.end();
    const bool headers_ok = std::all_of(wanted.begin(), wanted.end(), [&](const std::string& h) {
      return std::any_of(rule.allowed_headers.begin(), rule.allowed_headers.end(),
                         [&](const std::string& allowed) { return wildcard_match(lower(allowed), h); });
    });
    if (origin_ok && method_ok && headers_ok) return &rule;
  }
  return nullptr;
}

}  // namespace silo::s3
