#include "base/text.h"
#include "s3api/object_headers.h"

#include <strings.h>

#include <algorithm>

#include "base/base64.h"
#include "base/hash.h"
#include "s3/checksum.h"
#include "s3/encoded_words.h"
#include "s3/http_time.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace silo::s3api {
namespace {

// AWS: the user-defined metadata of a PUT request header is limited to 2 KB.
constexpr size_t kMaxUserMetadataBytes = 2 * 1024;

struct ContentHeader {
  const char* name;
  const std::string& (wire::ObjectRecord::*get)() const;
  void (wire::ObjectRecord::*set)(const std::string&);
};

const ContentHeader kContentHeaders[] = {
    {"Content-Type", &wire::ObjectRecord::content_type, &wire::ObjectRecord::set_content_type},
    {"Content-Encoding", &wire::ObjectRecord::content_encoding, &wire::ObjectRecord::set_content_encoding},
    {"Content-Disposition", &wire::ObjectRecord::content_disposition, &wire::ObjectRecord::set_content_disposition},
    {"Content-Language", &wire::ObjectRecord::content_language, &wire::ObjectRecord::set_content_language},
    {"Cache-Control", &wire::ObjectRecord::cache_control, &wire::ObjectRecord::set_cache_control},
    {"Expires", &wire::ObjectRecord::expires, &wire::ObjectRecord::set_expires},
};

// "aws-chunked" describes the transfer of a PUT body, not the object: S3 drops it.
std::string without_aws_chunked(std::string_view encoding) {
  std::string out;
  size_t start = 0;
  while (start <= encoding.size()) {
    size_t end = encoding.find(',', start);
    if (end == std::string_view::npos) end = encoding.size();
    std::string_view token = encoding.substr(start, end - start);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (!token.empty() && !(token.size() == 11 && ::strncasecmp(token.data(), "aws-chunked", 11) == 0)) {
      if (!out.empty()) out += ",";
      out += token;
    }
    start = end + 1;
  }
  return out;
}

}  // namespace

Result<std::optional<std::string>> content_md5_hex(const http::Headers& headers) {
  const auto md5 = headers.get("Content-MD5");
  if (!md5) return std::optional<std::string>();
  auto raw = base64::decode(*md5);
  if (!raw || raw->size() != 16) {
    return Status::invalid_argument("The Content-MD5 you specified is not valid.").with_reason("InvalidDigest");
  }
  return std::optional<std::string>(hash::to_hex({reinterpret_cast<const unsigned char*>(raw->data()), raw->size()}));
}

Status too_large(uint64_t size, uint64_t max_size) {
  return Status::invalid_argument("Your proposed upload of {} bytes exceeds the maximum allowed size of {}", size,
                                  max_size)
      .with_reason("EntityTooLarge");
}

Status check_relayed_length(const http::RequestHead& request, uint64_t max_size) {
  if (request.content_length && *request.content_length > max_size) return too_large(*request.content_length, max_size);
  return Status::ok();
}

std::string etag_of(const wire::ObjectRecord& record) {
  // A cached object of a remote bucket shows the backend's ETag (a multipart one differs).
  if (!record.remote().etag().empty()) return record.remote().etag();
  return record.etag().empty() ? record.md5_hex() : record.etag();
}

std::string unquote_etag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

std::string http_date(int64_t unix_nanos) { return s3::format_http_date(unix_nanos / 1'000'000'000); }

std::string encode_tags(const google::protobuf::Map<std::string, std::string>& tags) {
  std::vector<std::pair<std::string, std::string>> sorted(tags.begin(), tags.end());
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& [key, value] : sorted) {
    if (!out.empty()) out += '&';
    out += text::percent_encode(key) + "=" + text::percent_encode(value);
  }
  return out;
}

void add_object_headers(const wire::ObjectRecord& record, http::Headers& headers, bool with_checksums) {
  headers.set("ETag", "\"" + etag_of(record) + "\"");
  headers.set("Last-Modified", http_date(record.mtime_unix_nanos()));
  for (const ContentHeader& h : kContentHeaders) {
    if (!(record.*h.get)().empty()) headers.set(h.name, (record.*h.get)());
  }
  if (record.content_type().empty()) headers.set("Content-Type", "binary/octet-stream");
  headers.set("Accept-Ranges", "bytes");
  for (const auto& [key, value] : record.user_metadata()) {
    headers.set(kUserMetadataPrefix + key, s3::encode_header_value(value));
  }
  if (!record.tags().empty()) {
    headers.set("x-amz-tagging-count", std::to_string(record.tags().size()));
    headers.set(kTagsHeader, encode_tags(record.tags()));
  }
  if (with_checksums) {
    for (const auto& [algorithm, value] : record.checksums()) {
      if (auto a = s3::checksum_from_name(algorithm)) {
        headers.set(s3::checksum_header(*a), value);
        // A multipart object's composite checksum ends in "-N"; every other is the
        // checksum of the whole object.
        headers.set("x-amz-checksum-type", value.find('-') != std::string::npos ? "COMPOSITE" : "FULL_OBJECT");
      }
    }
  }
}

Result<wire::ObjectRecord> attributes_from_headers(const http::Headers& headers, std::string_view tags_header) {
  wire::ObjectRecord record;
  for (const ContentHeader& h : kContentHeaders) {
    if (auto value = headers.get(h.name)) (record.*h.set)(std::string(*value));
  }
  if (!record.content_encoding().empty()) record.set_content_encoding(without_aws_chunked(record.content_encoding()));
  const size_t prefix = std::string_view(kUserMetadataPrefix).size();
  size_t metadata_bytes = 0;
  for (const auto& [name, value] : headers.fields()) {
    if (name.size() > prefix && ::strncasecmp(name.c_str(), kUserMetadataPrefix, prefix) == 0) {
      std::string key = name.substr(prefix);
      std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
      // Stored decoded (AWS: RFC 2047 words are decoded before storing); the store keeps
      // values as protobuf strings, so they must be UTF-8.
      const std::string decoded = s3::decode_encoded_words(value);
      if (!text::is_utf8(decoded)) {
        return Status::invalid_argument("the value of x-amz-meta-{} is not UTF-8", key).with_reason("InvalidArgument");
      }
      metadata_bytes += key.size() + decoded.size();
      auto& slot = (*record.mutable_user_metadata())[key];
      slot = slot.empty() ? decoded : slot + "," + decoded;  // repeated headers join as HTTP does
    }
  }
  if (metadata_bytes > kMaxUserMetadataBytes) {
    return Status::invalid_argument("user metadata is {} bytes; at most {} are allowed", metadata_bytes,
                                    kMaxUserMetadataBytes)
        .with_reason("MetadataTooLarge");
  }
  if (auto tags = headers.get(tags_header); tags && !tags->empty()) {
    ASSIGN_OR_RETURN(auto parsed, s3::parse_tagging_header(*tags));
    for (auto& [key, value] : parsed) (*record.mutable_tags())[key] = value;
  }
  return record;
}

}  // namespace silo::s3api
