#pragma once

// Access decisions (docs/security.md): who may do what to a bucket and its objects. Pure:
// the caller says who asks (Subject), what for (Request) and what the bucket allows
// (BucketAccess); authorize() answers ok or AccessDenied.
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "wire/policy_json.h"

namespace silo::access {

// Who sends a request, as its node authenticated it.
struct Subject {
  std::optional<std::string> access_key;  // nullopt: an anonymous request
  bool is_admin = false;                  // an admin user or another node of the cluster
  std::string source_ip;                  // the client's address as this node sees it
  bool secure_transport = false;          // arrived over TLS
};

// What a request asks: an S3 action name ("s3:GetObject") on a bucket or one of its
// objects, and the request's condition keys.
struct Request {
  std::string action;
  std::string bucket;
  std::optional<std::string> key;  // set: an object (or a prefix of objects)
  std::optional<std::string> prefix;     // s3:prefix (listings)
  std::optional<std::string> delimiter;  // s3:delimiter (listings)
  // "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key".
  std::string resource() const;
};

// What a bucket says about access to it.
struct BucketAccess {
  std::string_view owner;                // the access key that created it; empty: admins only
  const wire::Policy* policy = nullptr;  // its bucket policy; null: none
  bool anonymous_read = false;           // the canned public-read ACL
};

enum class Effect { kNone, kAllow, kDeny };

// The bucket policy's verdict on `request` by `subject`: kDeny when a Deny statement
// applies (it wins), else kAllow when an Allow statement applies, else kNone.
Effect evaluate(const wire::Policy& policy, const Subject& subject, const Request& request);

// The decision, in this order: admins (and the cluster's nodes) may do anything; a Deny
// of the policy refuses (except the owner managing the policy itself, so an owner cannot
// lock itself out); the owner may do anything; an Allow of the policy allows; an
// anonymous read of a public-read bucket is allowed; anything else is refused.
// kPermissionDenied with reason AccessDenied when refused.
Status authorize(const Subject& subject, const BucketAccess& bucket, const Request& request);

// Whether the policy names `action` at all for `subject` with Allow (ListBuckets shows a
// user the buckets it owns and those whose policy grants it something).
bool grants_anything(const wire::Policy& policy, const Subject& subject);

// Checks a parsed policy against the bucket it is for: every action is an S3 action Silo
// knows (wildcards allowed), every resource an arn:aws:s3::: ARN of this bucket or its
// objects, every condition an operator and key Silo evaluates. kInvalidArgument with
// reason MalformedPolicy naming the first problem.
Status validate(const wire::Policy& policy, std::string_view bucket);

// IAM wildcard match: '*' any run of characters, '?' one. Case-insensitive when `fold`.
bool wildcard_match(std::string_view pattern, std::string_view text, bool fold = false);

// Whether `address` (IPv4 or IPv6 text) lies in `cidr` ("10.0.0.0/8", "::1/128", or an
// address alone). False when either does not parse.
bool ip_in_range(std::string_view address, std::string_view cidr);

}  // namespace silo::access
