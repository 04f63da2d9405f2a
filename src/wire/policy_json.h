#pragma once

// A bucket policy document as S3's PutBucketPolicy takes it (IAM policy grammar, the parts
// Silo evaluates): read here, where the JSON library lives; what it means (which actions
// and resources are valid for a bucket, and the decision for a request) is access/.
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

// One condition of a statement: operator, key, values ({"StringLike": {"s3:prefix":
// ["a/*", "b/*"]}} is one PolicyCondition with two values).
struct PolicyCondition {
  std::string op;   // "StringLike", "IpAddress", ...
  std::string key;  // "s3:prefix", "aws:SourceIp", ...
  std::vector<std::string> values;
  bool operator==(const PolicyCondition&) const = default;
};

struct PolicyStatement {
  std::string sid;
  bool allow = false;              // Effect: Allow, else Deny
  bool any_principal = false;      // Principal "*" or {"AWS": "*"}: anyone, anonymous too
  std::vector<std::string> users;  // access keys (from "KEY" or "arn:aws:iam::*:user/KEY")
  std::vector<std::string> actions;
  bool not_action = false;  // the statement has NotAction: every action but these
  std::vector<std::string> resources;
  bool not_resource = false;
  std::vector<PolicyCondition> conditions;
  bool operator==(const PolicyStatement&) const = default;
};

struct Policy {
  std::string version;  // "2012-10-17" or "2008-10-17"
  std::string id;
  std::vector<PolicyStatement> statements;
  bool operator==(const Policy&) const = default;
};

// Parses a policy document. Errors are kInvalidArgument with reason "MalformedPolicy" and
// a message naming the part that is wrong. Checks the grammar only; access::validate
// checks the actions and resources against the bucket.
Result<Policy> parse_policy_json(std::string_view text);

}  // namespace silo::wire
