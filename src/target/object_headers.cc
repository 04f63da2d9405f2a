#include "target/object_headers.h"

#include <ctime>

namespace silo::target {

std::string http_date(int64_t unix_nanos) {
  const std::time_t seconds = static_cast<std::time_t>(unix_nanos / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[64];
  const size_t n = std::strftime(buffer, sizeof(buffer), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buffer, n);
}

void add_object_headers(const wire::ObjectRecord& record, http::Headers& headers) {
  headers.set("ETag", "\"" + record.md5_hex() + "\"");
  headers.set("Last-Modified", http_date(record.mtime_unix_nanos()));
  headers.set("Content-Type", record.content_type().empty() ? "application/octet-stream" : record.content_type());
  headers.set("Accept-Ranges", "bytes");
  for (const auto& [key, value] : record.user_metadata()) headers.set(kUserMetadataPrefix + key, value);
}

}  // namespace silo::target
