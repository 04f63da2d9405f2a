#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace silo::s3 {

enum class Op {
  kListBuckets, kCreateBucket, kHeadBucket, kDeleteBucket, kGetBucketLocation, kGetBucketVersioning,
  kPutBucketVersioning, kGetBucketAcl, kListObjects, kListObjectsV2, kListObjectVersions, kListMultipartUploads,
  kDeleteObjects, kPutObject, kCopyObject, kGetObject, kHeadObject, kDeleteObject, kGetObjectTagging,
  kPutObjectTagging, kDeleteObjectTagging, kGetObjectAcl, kCreateMultipartUpload, kUploadPart, kUploadPartCopy,
  kCompleteMultipartUpload, kAbortMultipartUpload, kListParts, kGetBucketCors, kPutBucketCors, kDeleteBucketCors,
  kPutBucketAcl, kPutObjectAcl, kGetBucketPolicy, kPutBucketPolicy, kDeleteBucketPolicy,
  kPreflight  // OPTIONS on a bucket or object: a CORS preflight
};
std::string_view op_name(Op op);  // "PutObject", ...

// Decoded query parameters in order; a bare `k` has value "".
struct QueryParams {
  std::vector<std::pair<std::string, std::string>> params;
  bool has(std::string_view name) const;
  std::optional<std::string> get(std::string_view name) const;
};
// Percent-decodes every name and value ('+' stays '+'). InvalidArgument on a bad escape.
Result<QueryParams> parse_query(std::string_view raw_query);

struct RouteInput {
  std::string_view method;  // "GET", "PUT", ...
  std::string_view path;    // percent-decoded
  const QueryParams* query = nullptr;
  std::string_view host;    // Host header (may carry :port)
  bool has_copy_source = false;
  const std::vector<std::string>* domains = nullptr;  // virtual-host domains
};

struct Route {
  Op op = Op::kListBuckets;
  std::string bucket;
  std::string key;
  bool is_virtual_host = false;
};

// Which S3 operation a request is. Known S3 features Silo lacks answer NotImplemented or,
// for a GET of a configuration Silo never has, the error AWS gives when it is not set
// (NoSuchBucketPolicy, ...); a method that makes no sense on the resource MethodNotAllowed.
Result<Route> route(const RouteInput& in);

}  // namespace silo::s3
