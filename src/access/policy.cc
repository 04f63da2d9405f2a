#include "access/policy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>

namespace silo::access {
namespace {

constexpr std::string_view kArnPrefix = "arn:aws:s3:::";

// The S3 actions Silo decides on (the operations it serves map to these).
constexpr std::array<std::string_view, 26> kActions = {
    "s3:GetObject",           "s3:PutObject",
    "s3:DeleteObject",        "s3:ListBucket",
    "s3:ListBucketVersions",  "s3:ListBucketMultipartUploads",
    "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload",
    "s3:GetObjectTagging",    "s3:PutObjectTagging",
    "s3:DeleteObjectTagging", "s3:GetObjectAcl",
    "s3:PutObjectAcl",        "s3:GetBucketAcl",
    "s3:PutBucketAcl",        "s3:GetBucketLocation",
    "s3:GetBucketVersioning", "s3:PutBucketVersioning",
    "s3:GetBucketCORS",       "s3:PutBucketCORS",
    "s3:GetBucketPolicy",     "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",  "s3:DeleteBucket",
    "s3:CreateBucket",        "s3:ListAllMyBuckets",
};

bool is_policy_action(std::string_view action) {
  return action == "s3:GetBucketPolicy" || action == "s3:PutBucketPolicy" || action == "s3:DeleteBucketPolicy";
}

Status malformed(std::string message) {
  return Status::invalid_argument("{}", message).with_reason("MalformedPolicy");
}

char fold_char(char c, bool fold) {
  return fold ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
}

// The value of a condition key in this request; nullopt when the request has none.
std::optional<std::string> key_value(std::string_view key, const Subject& subject, const Request& request) {
  if (key == "s3:prefix") return request.prefix;
  if (key == "s3:delimiter") return request.delimiter;
  if (key == "aws:SourceIp") {
    if (subject.source_ip.empty()) return std::nullopt;
    return subject.source_ip;
  }
  if (key == "aws:SecureTransport") return std::string(subject.secure_transport ? "true" : "false");
  if (key == "aws:username" || key == "aws:userid") return subject.access_key;
  return std::nullopt;
}

bool is_known_key(std::string_view key) {
  return key == "s3:prefix" || key == "s3:delimiter" || key == "aws:SourceIp" || key == "aws:SecureTransport" ||
         key == "aws:username" || key == "aws:userid";
}

bool is_known_operator(std::string_view op) {
  return op == "StringEquals" || op == "StringNotEquals" || op == "StringEqualsIgnoreCase" ||
         op == "StringNotEqualsIgnoreCase" || op == "StringLike" || op == "StringNotLike" || op == "IpAddress" ||
         op == "NotIpAddress" || op == "Bool";
}

bool is_negated(std::string_view op) {
  return op == "StringNotEquals" || op == "StringNotEqualsIgnoreCase" || op == "StringNotLike" ||
         op == "NotIpAddress";
}

// One condition: true when the request satisfies it. A key the request lacks satisfies
// only the negated operators, as in IAM.
bool holds(const wire::PolicyCondition& c, const Subject& subject, const Request& request) {
  const std::optional<std::string> value = key_value(c.key, subject, request);
  if (!value) return is_negated(c.op);
  const auto any = [&](auto&& match) { return std::any_of(c.values.begin(), c.values.end(), match); };
  const std::string_view v = *value;
  if (c.op == "StringEquals" || c.op == "Bool") return any([&](const std::string& x) { return x == v; });
  if (c.op == "StringNotEquals") return !any([&](const std::string& x) { return x == v; });
  const auto equals_fold = [&](const std::string& x) {
    return x.size() == v.size() && std::equal(x.begin(), x.end(), v.begin(), [](char l, char r) {
             return fold_char(l, true) == fold_char(r, true);
           });
  };
  if (c.op == "StringEqualsIgnoreCase") return any(equals_fold);
  if (c.op == "StringNotEqualsIgnoreCase") return !any(equals_fold);
  if (c.op == "StringLike") return any([&](const std::string& x) { return wildcard_match(x, v); });
  if (c.op == "StringNotLike") return !any([&](const std::string& x) { return wildcard_match(x, v); });
  if (c.op == "IpAddress") return any([&](const std::string& x) { return ip_in_range(v, x); });
  if (c.op == "NotIpAddress") return !any([&](const std::string& x) { return ip_in_range(v, x); });
  return false;  // validate() refuses other operators
}

bool names_subject(const wire::PolicyStatement& st, const Subject& subject) {
  if (st.any_principal) return true;
  return subject.access_key &&
         std::find(st.users.begin(), st.users.end(), *subject.access_key) != st.users.end();
}

bool applies(const wire::PolicyStatement& st, const Subject& subject, const Request& request) {
  if (!names_subject(st, subject)) return false;
  const bool action_listed = std::any_of(st.actions.begin(), st.actions.end(),
                                         [&](const std::string& a) { return wildcard_match(a, request.action, true); });
  if (action_listed == st.not_action) return false;
  const std::string resource = request.resource();
  const bool resource_listed = std::any_of(st.resources.begin(), st.resources.end(),
                                           [&](const std::string& r) { return wildcard_match(r, resource); });
  if (resource_listed == st.not_resource) return false;
  return std::all_of(st.conditions.begin(), st.conditions.end(),
                     [&](const wire::PolicyCondition& c) { return holds(c, subject, request); });
}

// IPv4 "a.b.c.d" or IPv6 text into 16 bytes (IPv4 as ::ffff:a.b.c.d); its bit count
// (32 or 128) in `bits`.
bool parse_ip(std::string_view text, std::array<uint8_t, 16>& out, int& bits) {
  out.fill(0);
  if (constexpr std::string_view kMapped = "::ffff:";  // an IPv4 client of an IPv6 socket
      text.size() > kMapped.size() && text.substr(0, kMapped.size()) == kMapped &&
      text.find('.') != std::string_view::npos) {
    return parse_ip(text.substr(kMapped.size()), out, bits);
  }
  if (text.find(':') == std::string_view::npos) {
    int part = 0;
    size_t pos = 0;
    while (part < 4) {
      const size_t end = text.find('.', pos);
      const std::string_view piece = text.substr(pos, end == std::string_view::npos ? text.size() - pos : end - pos);
      unsigned v = 0;
      const auto [p, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v);
      if (piece.empty() || piece.size() > 3 || ec != std::errc() || p != piece.data() + piece.size() || v > 255) {
        return false;
      }
      out[12 + part] = static_cast<uint8_t>(v);
      ++part;
      if (end == std::string_view::npos) break;
      pos = end + 1;
    }
    if (part != 4 || text.back() == '.') return false;
    out[10] = out[11] = 0xff;
    bits = 32;
    return true;
  }
  // IPv6: groups of up to 4 hex digits, one "::" standing for the zero groups left out.
  std::array<uint16_t, 8> head{}, tail{};
  int nhead = 0, ntail = 0;
  bool gap = false;
  size_t pos = 0;
  if (text.substr(0, 2) == "::") {
    gap = true;
    pos = 2;
  }
  while (pos < text.size()) {
    size_t end = text.find(':', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view piece = text.substr(pos, end - pos);
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v, 16);
    if (piece.empty() || piece.size() > 4 || ec != std::errc() || p != piece.data() + piece.size()) return false;
    if (gap) {
      if (ntail == 8) return false;
      tail[ntail++] = static_cast<uint16_t>(v);
    } else {
      if (nhead == 8) return false;
      head[nhead++] = static_cast<uint16_t>(v);
    }
    pos = end;
    if (pos < text.size()) {
      if (text.substr(pos, 2) == "::") {
        if (gap) return false;
        gap = true;
        pos += 2;
      } else {
        ++pos;
        if (pos == text.size()) return false;
      }
    }
  }
  if (nhead + ntail > 8 || (!gap && nhead != 8) || (gap && nhead + ntail == 8)) return false;
  std::array<uint16_t, 8> groups{};
  for (int i = 0; i < nhead; ++i) groups[i] = head[i];
  for (int i = 0; i < ntail; ++i) groups[8 - ntail + i] = tail[i];
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = static_cast<uint8_t>(groups[i] >> 8);
    out[2 * i + 1] = static_cast<uint8_t>(groups[i] & 0xff);
  }
  bits = 128;
  return true;
}

}  // namespace

std::string Request::resource() const {
  std::string out = std::string(kArnPrefix) + bucket;
  if (key) out += "/" + *key;
  return out;
}

bool wildcard_match(std::string_view pattern, std::string_view text, bool fold) {
  // Iterative glob match with one backtrack point (the last '*').
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || fold_char(pattern[p], fold) == fold_char(text[t], fold))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool ip_in_range(std::string_view address, std::string_view cidr) {
  std::array<uint8_t, 16> a{}, net{};
  int abits = 0, nbits = 0;
  const size_t slash = cidr.find('/');
  if (!parse_ip(address, a, abits) || !parse_ip(cidr.substr(0, slash), net, nbits)) return false;
  if (abits != nbits) return false;
  int prefix = nbits;
  if (slash != std::string_view::npos) {
    const std::string_view len = cidr.substr(slash + 1);
    const auto [p, ec] = std::from_chars(len.data(), len.data() + len.size(), prefix);
    if (len.empty() || ec != std::errc() || p != len.data() + len.size() || prefix < 0 || prefix > nbits) return false;
  }
  const int skip = 128 - nbits;  // IPv4 lives in the last 32 bits
  for (int bit = 0; bit < prefix; ++bit) {
    const int i = skip + bit;
    const uint8_t mask = static_cast<uint8_t>(0x80 >> (i % 8));
    if ((a[i / 8] & mask) != (net[i / 8] & mask)) return false;
  }
  return true;
}

Effect evaluate(const wire::Policy& policy, const Subject& subject, const Request& request) {
  Effect effect = Effect::kNone;
  for (const auto& st : policy.statements) {
    if (!applies(st, subject, request)) continue;
    if (!st.allow) return Effect::kDeny;
    effect = Effect::kAllow;
  }
  return effect;
}

Status authorize(const Subject& subject, const BucketAccess& bucket, const Request& request) {
  if (subject.is_admin) return Status::ok();
  const bool is_owner = subject.access_key && !bucket.owner.empty() && *subject.access_key == bucket.owner;
  const Effect effect = bucket.policy ? evaluate(*bucket.policy, subject, request) : Effect::kNone;
  if (effect == Effect::kDeny && !(is_owner && is_policy_action(request.action))) {
    return Status::permission_denied("Access Denied: the bucket policy of {} denies {}", request.bucket,
                                     request.action)
        .with_reason("AccessDenied");
  }
  if (is_owner || effect == Effect::kAllow) return Status::ok();
  if (!subject.access_key && bucket.anonymous_read &&
      (request.action == "s3:GetObject" || request.action == "s3:ListBucket")) {
    return Status::ok();
  }
  return Status::permission_denied("Access Denied: {} may not {} on {}",
                                   subject.access_key ? *subject.access_key : std::string("an anonymous client"),
                                   request.action, request.resource())
      .with_reason("AccessDenied");
}

bool grants_anything(const wire::Policy& policy, const Subject& subject) {
  return std::any_of(policy.statements.begin(), policy.statements.end(), [&](const wire::PolicyStatement& st) {
    return st.allow && names_subject(st, subject) && (!st.any_principal || subject.access_key);
  });
}

Status validate(const wire::Policy& policy, std::string_view bucket) {
  for (const auto& st : policy.statements) {
    for (const auto& action : st.actions) {
      const bool known = action == "*" || std::any_of(kActions.begin(), kActions.end(), [&](std::string_view a) {
                           return wildcard_match(action, a, true);
                         });
      if (!known) return malformed(fmt::format("Policy has invalid action: {}", action));
    }
    for (const auto& resource : st.resources) {
      if (resource == "*") continue;
      if (resource.rfind(kArnPrefix, 0) != 0) {
        return malformed(fmt::format("Policy has invalid resource: {} (expected arn:aws:s3:::{}[/KEY])", resource, bucket));
      }
      const std::string_view rest = std::string_view(resource).substr(kArnPrefix.size());
      const std::string_view name = rest.substr(0, rest.find('/'));
      if (!wildcard_match(name, bucket)) {
        return malformed(fmt::format("Policy has invalid resource: {} is not bucket {} or its objects", resource, bucket));
      }
    }
    for (const auto& c : st.conditions) {
      if (!is_known_operator(c.op)) return malformed(fmt::format("Policy has an invalid condition operator: {}", c.op));
      if (!is_known_key(c.key)) return malformed(fmt::format("Policy has an invalid condition key: {}", c.key));
      if (c.op == "IpAddress" || c.op == "NotIpAddress") {
        for (const auto& v : c.values) {
          std::array<uint8_t, 16> ip{};
          int bits = 0;
          const std::string_view addr = std::string_view(v).substr(0, v.find('/'));
          if (!parse_ip(addr, ip, bits) || !ip_in_range(addr, v)) {
            return malformed(fmt::format("Policy has an invalid IP range: {}", v));
          }
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace silo::access
