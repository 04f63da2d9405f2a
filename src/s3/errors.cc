#include "s3/errors.h"

#include "s3/xml.h"

namespace silo::s3 {
namespace {

struct Known {
  std::string_view code;
  int status;
};

// AWS S3 "Error responses" (the codes Silo sends).
constexpr Known kErrors[] = {
    {"AccessDenied", 403},
    {"AccessForbidden", 403},  // a CORS preflight no rule allows
    {"BadRequest", 400},       // a CORS preflight without Origin or Access-Control-Request-Method
    {"AuthorizationHeaderMalformed", 400},
    {"AuthorizationQueryParametersError", 400},
    {"BadDigest", 400},
    {"BucketAlreadyExists", 409},
    {"BucketAlreadyOwnedByYou", 409},
    {"BucketNotEmpty", 409},
    {"EntityTooLarge", 400},
    {"EntityTooSmall", 400},
    {"IllegalLocationConstraintException", 400},
    {"IncompleteBody", 400},
    {"InsufficientStorage", 507},
    {"InternalError", 500},
    {"InvalidAccessKeyId", 403},
    {"InvalidArgument", 400},
    {"InvalidBucketName", 400},
    {"InvalidDigest", 400},
    {"InvalidPart", 400},
    {"InvalidPartNumber", 400},
    {"InvalidPartOrder", 400},
    {"InvalidRange", 416},
    {"InvalidRequest", 400},
    {"InvalidStorageClass", 400},
    {"InvalidTag", 400},
    {"KeyTooLongError", 400},
    {"MalformedPolicy", 400},
    {"MalformedXML", 400},
    {"MetadataTooLarge", 400},
    {"MethodNotAllowed", 405},
    {"MissingContentLength", 411},
    {"MissingRequestBodyError", 400},
    {"NoSuchBucket", 404},
    {"NoSuchBucketPolicy", 404},
    {"NoSuchCORSConfiguration", 404},
    {"NoSuchKey", 404},
    {"NoSuchLifecycleConfiguration", 404},
    {"NoSuchTagSet", 404},
    {"NoSuchUpload", 404},
    {"NoSuchVersion", 404},
    {"NoSuchWebsiteConfiguration", 404},
    {"NoSuchPublicAccessBlockConfiguration", 404},
    {"ObjectLockConfigurationNotFoundError", 404},
    {"OwnershipControlsNotFoundError", 404},
    {"ReplicationConfigurationNotFoundError", 404},
    {"ServerSideEncryptionConfigurationNotFoundError", 404},
    {"NotImplemented", 501},
    // Silo's own, for archive reads (docs/shards.md).
    {"NoSuchArchiveMember", 404},
    {"NotAnArchive", 400},
    {"CorruptArchive", 400},
    // An object whose every copy (or more slices than its parity) fails its checksum: the
    // message says what is lost; retrying does not help (docs/data-protection.md).
    {"DataLoss", 500},
    {"NotModified", 304},
    {"PreconditionFailed", 412},
    {"RequestTimeTooSkewed", 403},
    {"RequestTimeout", 400},
    {"ServiceUnavailable", 503},
    {"SignatureDoesNotMatch", 403},
    {"SlowDown", 503},
    {"TooManyParts", 400},
    {"XAmzContentSHA256Mismatch", 400},
};

std::string_view by_code(Code code, Subject subject) {
  switch (code) {
    case Code::kNotFound:
      switch (subject) {
        case Subject::kBucket: return "NoSuchBucket";
        case Subject::kUpload: return "NoSuchUpload";
        case Subject::kObject: return "NoSuchKey";
        case Subject::kService: return "NoSuchBucket";
      }
      break;
    case Code::kAlreadyExists: return subject == Subject::kBucket ? "BucketAlreadyOwnedByYou" : "InvalidRequest";
    case Code::kFailedPrecondition: return subject == Subject::kBucket ? "BucketNotEmpty" : "PreconditionFailed";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kOutOfRange: return "InvalidRange";
    case Code::kPermissionDenied:
    case Code::kUnauthenticated: return "AccessDenied";
    case Code::kUnimplemented: return "NotImplemented";
    case Code::kUnavailable:
    case Code::kAborted:
    case Code::kDeadlineExceeded: return "ServiceUnavailable";
    case Code::kResourceExhausted: return "InsufficientStorage";
    case Code::kDataLoss: return "DataLoss";
    default: break;
  }
  return "InternalError";
}

}  // namespace

int http_status_of(std::string_view s3_code) {
  for (const Known& k : kErrors) {
    if (k.code == s3_code) return k.status;
  }
  return 500;
}

S3Error to_s3_error(const Status& status, Subject subject) {
  S3Error error;
  if (!status.reason().empty() && http_status_of(status.reason()) != 500) {
    error.code = status.reason();
  } else {
    error.code = std::string(by_code(status.code(), subject));
  }
  error.http_status = http_status_of(error.code);
  // Internal details stay in the log; the client gets AWS's generic text.
  error.message = error.http_status >= 500 && error.code == "InternalError"
                      ? "We encountered an internal error. Please try again."
                      : status.message();
  return error;
}

std::string error_xml(const S3Error& error, std::string_view resource, std::string_view request_id,
                      const std::vector<std::pair<std::string, std::string>>& extra) {
  XmlWriter xml;
  xml.open("Error").element("Code", error.code).element("Message", error.message);
  for (const auto& [name, value] : extra) xml.element(name, value);
  xml.element("Resource", resource).element("RequestId", request_id).close();
  return xml.finish();
}

}  // namespace silo::s3
