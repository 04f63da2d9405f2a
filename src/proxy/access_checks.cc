// Access decisions at the proxy (docs/security.md): the action of each request, the
// bucket's owner and policy handed to access::authorize, ListBuckets filtered, and the
// bucket policy's own endpoints (S3 ?policy, native /v1/buckets/{b}/policy).
#include <string>

#include "access/policy.h"
#include "base/log.h"
#include "http/reply.h"
#include "proxy/proxy.h"
#include "s3/names.h"
#include "wire/policy_json.h"

namespace silo::proxy {
namespace {

constexpr size_t kMaxPolicyBytes = 20 * 1024;  // as S3

}  // namespace

Status Proxy::authorize(const access::Subject& subject, const wire::Bucket& bucket, access::Request request) const {
  if (subject.is_admin) return Status::ok();
  request.bucket = bucket.name();
  std::optional<wire::Policy> policy;
  if (!bucket.props().policy().empty()) {
    auto parsed = wire::parse_policy_json(bucket.props().policy());
    if (!parsed) {  // stored only once valid: a policy that no longer parses refuses all
      SILO_LOG_ERROR("bucket {}: its stored policy does not parse: {}", bucket.name(), parsed.error());
      return Status::permission_denied("Access Denied: the policy of bucket {} is unreadable", bucket.name())
          .with_reason("AccessDenied");
    }
    policy = std::move(*parsed);
  }
  const access::BucketAccess access{bucket.props().owner(), policy ? &*policy : nullptr,
                                    bucket.props().anonymous_read()};
  return access::authorize(subject, access, request);
}

bool Proxy::may_see(const access::Subject& subject, const wire::Bucket& bucket) const {
  if (subject.is_admin) return true;
  if (!subject.access_key) return false;
  if (bucket.props().owner() == *subject.access_key) return true;
  if (bucket.props().policy().empty()) return false;
  const auto policy = wire::parse_policy_json(bucket.props().policy());
  return policy && access::grants_anything(*policy, subject);
}

wire::BucketMap Proxy::visible_buckets(const access::Subject& subject) const {
  wire::BucketMap map = *maps_.bucket_map();
  if (subject.is_admin) return map;
  auto* buckets = map.mutable_buckets();
  for (int i = buckets->size() - 1; i >= 0; --i) {
    if (!may_see(subject, buckets->Get(i))) buckets->DeleteSubrange(i, 1);
  }
  return map;
}

Result<std::string> Proxy::checked_policy(std::string_view bucket, std::string_view text) {
  if (text.size() > kMaxPolicyBytes) {
    return Status::invalid_argument("Policies must be at most {} bytes", kMaxPolicyBytes).with_reason("MalformedPolicy");
  }
  ASSIGN_OR_RETURN(const wire::Policy policy, wire::parse_policy_json(text));
  RETURN_IF_ERROR(access::validate(policy, bucket));
  return std::string(text);
}

http::Awaitable<Status> Proxy::set_policy(std::string name, std::string policy) {
  const auto bucket = maps_.find_bucket(name);
  if (!bucket) co_return Status::not_found("The specified bucket does not exist: {}", name).with_reason("NoSuchBucket");
  wire::BucketProps props = bucket->props();
  props.set_policy(std::move(policy));
  CO_RETURN_IF_ERROR((co_await primary_->set_bucket_props(name, props)).status());
  co_return Status::ok();
}

// Native: GET|PUT|DELETE /v1/buckets/{bucket}/policy, changes on the primary.
http::Awaitable<Status> Proxy::bucket_policy(http::Exchange& exchange, const std::string& name) {
  const http::Method method = exchange.request().method;
  if (method == http::Method::kGet) {
    const auto bucket = maps_.find_bucket(name);
    if (!bucket) co_return Status::not_found("bucket {} does not exist", name);
    if (bucket->props().policy().empty()) {
      co_return Status::not_found("bucket {} has no policy", name).with_reason("NoSuchBucketPolicy");
    }
    http::ResponseHead head;
    head.headers.set("Content-Type", "application/json");
    std::ignore = co_await exchange.response().send(std::move(head), bucket->props().policy());  // client gone
    co_return Status::ok();
  }
  if (!is_primary()) co_return co_await relay_to_primary(exchange);
  std::string policy;
  if (method == http::Method::kPut) {
    CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxPolicyBytes + 1));
    CO_ASSIGN_OR_RETURN(policy, checked_policy(name, body));
  }
  CO_RETURN_IF_ERROR(co_await set_policy(name, std::move(policy)));
  http::ResponseHead head;
  head.status = 204;
  std::ignore = co_await exchange.response().send(std::move(head), "");  // client gone
  co_return Status::ok();
}

}  // namespace silo::proxy
