#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace silo::s3 {

// The HTTP status AWS answers each S3 error code with; 500 for a code it does not know.
int http_status_of(std::string_view s3_code);

// What a failed request is about, for the codes that depend on it (NoSuchBucket vs NoSuchKey).
enum class Subject { kService, kBucket, kObject, kUpload };

struct S3Error {
  std::string code;
  std::string message;
  int http_status = 500;
};

// A Status as an S3 error: its reason() when it names an S3 code, else by code and subject.
S3Error to_s3_error(const Status& status, Subject subject);

// <?xml ...?><Error><Code/><Message/>[extra]<Resource/><RequestId/></Error>
std::string error_xml(const S3Error& error, std::string_view resource, std::string_view request_id,
                      const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace silo::s3
