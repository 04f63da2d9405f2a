// CORS of the S3 surface: a bucket's configuration (Get/Put/DeleteBucketCors), the
// preflight answer (OPTIONS) and the headers of an allowed cross-origin request, as S3
// documents them (docs/s3-compatibility.md "CORS").
#include "proxy/s3_cors.h"

#include <fmt/format.h>

#include "http/reply.h"
#include "proxy/proxy.h"

namespace silo::proxy {

std::vector<s3::CorsRule> cors_rules_of(const wire::BucketProps& props) {
  std::vector<s3::CorsRule> rules;
  for (const wire::CorsRule& r : props.cors()) {
    s3::CorsRule rule;
    rule.id = r.id();
    rule.allowed_origins.assign(r.allowed_origins().begin(), r.allowed_origins().end());
    rule.allowed_methods.assign(r.allowed_methods().begin(), r.allowed_methods().end());
    rule.allowed_headers.assign(r.allowed_headers().begin(), r.allowed_headers().end());
    rule.expose_headers.assign(r.expose_headers().begin(), r.expose_headers().end());
    if (r.has_max_age_seconds()) rule.max_age_seconds = r.max_age_seconds();
    rules.push_back(std::move(rule));
  }
  return rules;
}

void set_cors_rules(wire::BucketProps& props, const std::vector<s3::CorsRule>& rules) {
  props.clear_cors();
  for (const s3::CorsRule& rule : rules) {
    wire::CorsRule& r = *props.add_cors();
    r.set_id(rule.id);
    for (const auto& v : rule.allowed_origins) r.add_allowed_origins(v);
    for (const auto& v : rule.allowed_methods) r.add_allowed_methods(v);
    for (const auto& v : rule.allowed_headers) r.add_allowed_headers(v);
    for (const auto& v : rule.expose_headers) r.add_expose_headers(v);
    if (rule.max_age_seconds) r.set_max_age_seconds(*rule.max_age_seconds);
  }
}

http::Headers cors_headers(const s3::CorsRule& rule, std::string_view origin,
                           std::optional<std::string_view> requested_headers) {
  http::Headers headers;
  const bool is_any_origin = std::find(rule.allowed_origins.begin(), rule.allowed_origins.end(), "*") !=
                             rule.allowed_origins.end();
  headers.set("Access-Control-Allow-Origin", is_any_origin ? "*" : std::string(origin));
  if (!is_any_origin) headers.set("Access-Control-Allow-Credentials", "true");
  headers.set("Access-Control-Allow-Methods", fmt::format("{}", fmt::join(rule.allowed_methods, ", ")));
  if (requested_headers && !requested_headers->empty()) {
    headers.set("Access-Control-Allow-Headers", std::string(*requested_headers));
  }
  if (!rule.expose_headers.empty()) {
    headers.set("Access-Control-Expose-Headers", fmt::format("{}", fmt::join(rule.expose_headers, ", ")));
  }
  if (rule.max_age_seconds) headers.set("Access-Control-Max-Age", std::to_string(*rule.max_age_seconds));
  headers.set("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
  return headers;
}

namespace detail {

http::Awaitable<Status> WithHeaders::send(http::ResponseHead head, std::string body) {
  add_to(head);
  co_return co_await inner_.response().send(std::move(head), std::move(body));
}

http::Awaitable<Status> WithHeaders::begin(http::ResponseHead head, std::optional<uint64_t> content_length) {
  add_to(head);
  co_return co_await inner_.response().begin(std::move(head), content_length);
}

void WithHeaders::add_to(http::ResponseHead& head) const {
  for (const auto& [name, value] : extra_.fields()) head.headers.set(name, value);
}

}  // namespace detail

http::Awaitable<Status> Proxy::s3_preflight(http::Exchange& exchange, const s3api::S3Request& request,
                                            const wire::Bucket& bucket) {
  const http::Headers& in = exchange.request().headers;
  const auto origin = in.get("Origin");
  if (!origin) {
    co_return Status::invalid_argument("Insufficient information. Origin request header needed.")
        .with_reason("BadRequest");
  }
  const auto method = in.get("Access-Control-Request-Method");
  if (!method) {
    co_return Status::invalid_argument("Invalid Access-Control-Request-Method: null").with_reason("BadRequest");
  }
  const std::vector<s3::CorsRule> rules = cors_rules_of(bucket.props());
  if (rules.empty()) {
    co_return Status::permission_denied("CORSResponse: CORS is not enabled for this bucket.")
        .with_reason("AccessForbidden");
  }
  const auto requested = in.get("Access-Control-Request-Headers");
  const s3::CorsRule* rule = s3::match_cors(rules, *origin, *method, requested.value_or(""));
  if (rule == nullptr) {
    co_return Status::permission_denied(
        "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request "
        "method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the "
        "resource's CORS spec.")
        .with_reason("AccessForbidden");
  }
  http::ResponseHead head = s3api::s3_head(&request);
  const http::Headers allowed = cors_headers(*rule, *origin, requested);  // named: fields() is a reference into it
  for (const auto& [name, value] : allowed.fields()) head.headers.set(name, value);
  co_return co_await exchange.response().send(std::move(head), "");
}

}  // namespace silo::proxy
