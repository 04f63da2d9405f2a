#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace silo::s3 {

inline constexpr std::string_view kS3Xmlns = "http://s3.amazonaws.com/doc/2006-03-01/";

// Builds an XML document: the declaration, then elements. Text is escaped; characters XML
// 1.0 cannot carry (control characters, invalid UTF-8) become U+FFFD, so the output always
// parses.
class XmlWriter {
 public:
  XmlWriter();
  XmlWriter& open(std::string_view name, std::string_view xmlns = {});
  XmlWriter& close();
  XmlWriter& element(std::string_view name, std::string_view text);
  // Closes what is still open and returns the document.
  std::string finish();

 private:
  std::string out_;
  std::vector<std::string> open_;
};

std::string xml_escape(std::string_view text);

// A parsed element: name without namespace prefix, its text, its children.
struct XmlNode {
  std::string name;
  std::string text;
  std::vector<XmlNode> children;
  const XmlNode* child(std::string_view name) const;
};

// The MalformedXML error of a request body, and text without surrounding XML whitespace:
// for every body parser (here and in cors.cc).
Status malformed_xml(std::string_view why);
std::string_view trimmed(std::string_view text);

// Parses a request body with expat. DOCTYPE and entity declarations are refused (no
// entity expansion attacks), nesting is limited to 32. Errors: reason MalformedXML.
Result<XmlNode> parse_xml(std::string_view body);

struct CompletedPart {
  int part_number = 0;
  std::string etag;  // unquoted
  std::vector<std::pair<std::string, std::string>> checksums;  // "CRC32" -> base64
};
// <CompleteMultipartUpload><Part><PartNumber/><ETag/></Part>...: at least one part,
// numbers 1..10000 (order is the store's business: InvalidPartOrder).
Result<std::vector<CompletedPart>> parse_complete_multipart(std::string_view body);

struct DeleteRequest {
  bool quiet = false;
  std::vector<std::pair<std::string, std::string>> objects;  // key, version id
};
// <Delete><Quiet/><Object><Key/><VersionId/></Object>...: 1..1000 objects.
Result<DeleteRequest> parse_delete(std::string_view body);

// <Tagging><TagSet><Tag><Key/><Value/></Tag>...: at most 10 tags, keys 1..128 and values
// up to 256 characters, no duplicate keys (InvalidTag).
Result<std::map<std::string, std::string>> parse_tagging(std::string_view body);
// x-amz-tagging: "k1=v1&k2=v2" URL-query encoded; the same limits.
Result<std::map<std::string, std::string>> parse_tagging_header(std::string_view header);
// <CreateBucketConfiguration><LocationConstraint/>: the region, "" for an empty body.
Result<std::string> parse_create_bucket(std::string_view body);
// <VersioningConfiguration><Status/>: "Enabled" or "Suspended".
Result<std::string> parse_versioning(std::string_view body);

}  // namespace silo::s3
