#include "base/text.h"
#include "s3/route.h"

#include <strings.h>

#include "s3/sigv4.h"

namespace silo::s3 {
namespace {

struct Named {
  Op op;
  std::string_view name;
};

constexpr Named kNames[] = {
    {Op::kListBuckets, "ListBuckets"}, {Op::kCreateBucket, "CreateBucket"}, {Op::kHeadBucket, "HeadBucket"},
    {Op::kDeleteBucket, "DeleteBucket"}, {Op::kGetBucketLocation, "GetBucketLocation"},
    {Op::kGetBucketVersioning, "GetBucketVersioning"}, {Op::kPutBucketVersioning, "PutBucketVersioning"},
    {Op::kGetBucketAcl, "GetBucketAcl"}, {Op::kListObjects, "ListObjects"}, {Op::kListObjectsV2, "ListObjectsV2"},
    {Op::kListObjectVersions, "ListObjectVersions"}, {Op::kListMultipartUploads, "ListMultipartUploads"},
    {Op::kDeleteObjects, "DeleteObjects"}, {Op::kPutObject, "PutObject"}, {Op::kCopyObject, "CopyObject"},
    {Op::kGetObject, "GetObject"}, {Op::kHeadObject, "HeadObject"}, {Op::kDeleteObject, "DeleteObject"},
    {Op::kGetObjectTagging, "GetObjectTagging"}, {Op::kPutObjectTagging, "PutObjectTagging"},
    {Op::kDeleteObjectTagging, "DeleteObjectTagging"}, {Op::kGetObjectAcl, "GetObjectAcl"},
    {Op::kCreateMultipartUpload, "CreateMultipartUpload"}, {Op::kUploadPart, "UploadPart"},
    {Op::kUploadPartCopy, "UploadPartCopy"}, {Op::kCompleteMultipartUpload, "CompleteMultipartUpload"},
    {Op::kAbortMultipartUpload, "AbortMultipartUpload"}, {Op::kListParts, "ListParts"},
    {Op::kGetBucketCors, "GetBucketCors"}, {Op::kPutBucketCors, "PutBucketCors"},
    {Op::kDeleteBucketCors, "DeleteBucketCors"}, {Op::kPutBucketAcl, "PutBucketAcl"},
    {Op::kPutObjectAcl, "PutObjectAcl"}, {Op::kPreflight, "PreflightRequest"},
    {Op::kGetBucketPolicy, "GetBucketPolicy"}, {Op::kPutBucketPolicy, "PutBucketPolicy"},
    {Op::kDeleteBucketPolicy, "DeleteBucketPolicy"},
};

// Bucket subresources Silo does not implement, and the error a GET of each gets from AWS
// when the bucket has none ("" = NotImplemented).
struct Unsupported {
  std::string_view param;
  std::string_view get_error;
};

constexpr Unsupported kBucketUnsupported[] = {
    {"lifecycle", "NoSuchLifecycleConfiguration"},
    {"website", "NoSuchWebsiteConfiguration"},
    {"encryption", "ServerSideEncryptionConfigurationNotFoundError"},
    {"replication", "ReplicationConfigurationNotFoundError"},
    {"ownershipControls", "OwnershipControlsNotFoundError"},
    {"publicAccessBlock", "NoSuchPublicAccessBlockConfiguration"},
    {"object-lock", "ObjectLockConfigurationNotFoundError"},
    {"tagging", "NoSuchTagSet"},
    {"logging", ""},
    {"notification", ""},
    {"accelerate", ""},
    {"requestPayment", ""},
    {"analytics", ""},
    {"metrics", ""},
    {"inventory", ""},
    {"intelligent-tiering", ""},
    {"policyStatus", ""},
};

constexpr std::string_view kObjectUnsupported[] = {"retention", "legal-hold", "torrent", "restore",
                                                   "select",    "attributes", "renameObject"};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

Status not_implemented(std::string_view what) {
  return Status::unimplemented("{} is not implemented by Silo", what).with_reason("NotImplemented");
}

Status method_not_allowed(std::string_view method, std::string_view what) {
  return Status::invalid_argument("The specified method {} is not allowed against this resource ({})", method, what)
      .with_reason("MethodNotAllowed");
}

// The bucket named by a virtual-host Host header, if any.
std::optional<std::string> virtual_bucket(std::string_view host, const std::vector<std::string>* domains) {
  if (domains == nullptr || host.empty()) return std::nullopt;
  if (host.front() != '[') {
    if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) host = host.substr(0, colon);
  }
  for (const std::string& domain : *domains) {
    if (host.size() > domain.size() + 1 && host[host.size() - domain.size() - 1] == '.' &&
        iequals(host.substr(host.size() - domain.size()), domain)) {
      return std::string(host.substr(0, host.size() - domain.size() - 1));
    }
  }
  return std::nullopt;
}

Result<Op> bucket_op(std::string_view m, const QueryParams& q) {
  for (const Unsupported& u : kBucketUnsupported) {
    if (!q.has(u.param)) continue;
    if (m == "GET" && !u.get_error.empty()) {
      return Status::not_found("The bucket has no {} configuration", u.param).with_reason(std::string(u.get_error));
    }
    return not_implemented(fmt::format("{} ?{}", m, u.param));
  }
  if (q.has("policy")) {
    if (m == "GET") return Op::kGetBucketPolicy;
    if (m == "PUT") return Op::kPutBucketPolicy;
    if (m == "DELETE") return Op::kDeleteBucketPolicy;
    return method_not_allowed(m, "?policy");
  }
  if (q.has("cors")) {
    if (m == "GET") return Op::kGetBucketCors;
    if (m == "PUT") return Op::kPutBucketCors;
    if (m == "DELETE") return Op::kDeleteBucketCors;
    return method_not_allowed(m, "?cors");
  }
  if (q.has("location")) {
    if (m == "GET") return Op::kGetBucketLocation;
    return method_not_allowed(m, "?location");
  }
  if (q.has("versioning")) {
    if (m == "GET") return Op::kGetBucketVersioning;
    if (m == "PUT") return Op::kPutBucketVersioning;
    return method_not_allowed(m, "?versioning");
  }
  if (q.has("acl")) {
    if (m == "GET") return Op::kGetBucketAcl;
    if (m == "PUT") return Op::kPutBucketAcl;
    return method_not_allowed(m, "?acl");
  }
  if (q.has("uploads")) {
    if (m == "GET") return Op::kListMultipartUploads;
    return method_not_allowed(m, "?uploads");
  }
  if (q.has("delete")) {
    if (m == "POST") return Op::kDeleteObjects;
    return method_not_allowed(m, "?delete");
  }
  if (q.has("versions")) {
    if (m == "GET") return Op::kListObjectVersions;
    return method_not_allowed(m, "?versions");
  }
  if (m == "GET") {
    const auto list_type = q.get("list-type");
    if (list_type == std::optional<std::string>("2")) return Op::kListObjectsV2;
    if (list_type && *list_type != "1") {
      return Status::invalid_argument("list-type {} is not 1 or 2", *list_type).with_reason("InvalidArgument");
    }
    return Op::kListObjects;
  }
  if (m == "PUT") return Op::kCreateBucket;
  if (m == "HEAD") return Op::kHeadBucket;
  if (m == "DELETE") return Op::kDeleteBucket;
  if (m == "POST") return not_implemented("POST object uploads (browser forms)");
  return method_not_allowed(m, "a bucket");
}

Result<Op> object_op(std::string_view m, const QueryParams& q, bool has_copy_source) {
  for (const std::string_view u : kObjectUnsupported) {
    if (q.has(u)) return not_implemented(fmt::format("{} ?{} on an object", m, u));
  }
  if (q.has("tagging")) {
    if (m == "GET") return Op::kGetObjectTagging;
    if (m == "PUT") return Op::kPutObjectTagging;
    if (m == "DELETE") return Op::kDeleteObjectTagging;
    return method_not_allowed(m, "?tagging");
  }
  if (q.has("acl")) {
    if (m == "GET") return Op::kGetObjectAcl;
    if (m == "PUT") return Op::kPutObjectAcl;
    return method_not_allowed(m, "?acl");
  }
  if (q.has("uploads")) {
    if (m == "POST") return Op::kCreateMultipartUpload;
    return method_not_allowed(m, "?uploads");
  }
  if (q.has("uploadId")) {
    if (m == "PUT") {
      if (!q.has("partNumber")) {
        return Status::invalid_argument("UploadPart needs partNumber").with_reason("InvalidArgument");
      }
      return has_copy_source ? Op::kUploadPartCopy : Op::kUploadPart;
    }
    if (m == "POST") return Op::kCompleteMultipartUpload;
    if (m == "DELETE") return Op::kAbortMultipartUpload;
    if (m == "GET") return Op::kListParts;
    return method_not_allowed(m, "?uploadId");
  }
  if (m == "GET") return Op::kGetObject;
  if (m == "HEAD") return Op::kHeadObject;
  if (m == "PUT") return has_copy_source ? Op::kCopyObject : Op::kPutObject;
  if (m == "DELETE") return Op::kDeleteObject;
  return method_not_allowed(m, "an object");
}

}  // namespace

std::string_view op_name(Op op) {
  for (const Named& n : kNames) {
    if (n.op == op) return n.name;
  }
  return "?";
}

bool QueryParams::has(std::string_view name) const {
  for (const auto& [k, v] : params) {
    if (k == name) return true;
  }
  return false;
}

std::optional<std::string> QueryParams::get(std::string_view name) const {
  for (const auto& [k, v] : params) {
    if (k == name) return v;
  }
  return std::nullopt;
}

Result<QueryParams> parse_query(std::string_view raw) {
  QueryParams q;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view part = raw.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    auto key = text::percent_decode(part.substr(0, eq));
    auto value = text::percent_decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    if (!key || !value) {
      return Status::invalid_argument("the query string is not percent-encoded correctly").with_reason("InvalidArgument");
    }
    q.params.emplace_back(std::move(*key), std::move(*value));
  }
  return q;
}

Result<Route> route(const RouteInput& in) {
  Route r;
  std::string_view path = in.path;
  if (path.empty() || path.front() != '/') {
    return Status::invalid_argument("the request path must start with '/'").with_reason("InvalidRequest");
  }
  path.remove_prefix(1);
  if (auto bucket = virtual_bucket(in.host, in.domains)) {
    r.is_virtual_host = true;
    r.bucket = std::move(*bucket);
    r.key = std::string(path);
  } else {
    const size_t slash = path.find('/');
    r.bucket = std::string(path.substr(0, slash));
    if (slash != std::string_view::npos) r.key = std::string(path.substr(slash + 1));
  }
  const std::string_view m = in.method;
  static const QueryParams kNone;
  const QueryParams& q = in.query != nullptr ? *in.query : kNone;
  if (r.bucket.empty()) {
    if (m == "GET") {
      r.op = Op::kListBuckets;
      return r;
    }
    return method_not_allowed(m, "the service");
  }
  if (m == "OPTIONS") {
    r.op = Op::kPreflight;
    return r;
  }
  ASSIGN_OR_RETURN(r.op, r.key.empty() ? bucket_op(m, q) : object_op(m, q, in.has_copy_source));
  return r;
}

}  // namespace silo::s3
