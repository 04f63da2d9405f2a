#include "base/text.h"
#include "s3/xml.h"

#include <expat.h>

#include <charconv>

#include "s3/sigv4.h"

namespace silo::s3 {

Status malformed_xml(std::string_view why) {
  return Status::invalid_argument("The XML you provided was not well-formed or did not validate against our published "
                                  "schema: {}",
                                  why)
      .with_reason("MalformedXML");
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

namespace {

constexpr int kMaxDepth = 32;
constexpr size_t kMaxTags = 10;
constexpr size_t kMaxTagKey = 128;
constexpr size_t kMaxTagValue = 256;

Status invalid_tag(std::string_view why) { return Status::invalid_argument("{}", why).with_reason("InvalidTag"); }

// Length of the UTF-8 sequence at `s[i]` if valid and allowed in XML 1.0, else 0.
size_t valid_char(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') ? 1 : 0;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto next = static_cast<unsigned char>(s[i + k]);
    if ((next & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (next & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff) return 0;
  return n;
}

struct ParseState {
  std::vector<XmlNode*> stack;
  XmlNode root;
  bool has_root = false;
  std::string error;
  XML_Parser parser = nullptr;
};

std::string local_name(const char* name) {
  std::string_view n(name);
  // expat with a namespace separator gives "uri|local".
  if (const size_t bar = n.rfind('|'); bar != std::string_view::npos) n = n.substr(bar + 1);
  if (const size_t colon = n.rfind(':'); colon != std::string_view::npos) n = n.substr(colon + 1);
  return std::string(n);
}

void XMLCALL on_start(void* data, const char* name, const char**) {
  auto* st = static_cast<ParseState*>(data);
  if (static_cast<int>(st->stack.size()) >= kMaxDepth) {
    st->error = "nested too deeply";
    XML_StopParser(st->parser, XML_FALSE);
    return;
  }
  if (st->stack.empty()) {
    st->root.name = local_name(name);
    st->has_root = true;
    st->stack.push_back(&st->root);
    return;
  }
  XmlNode* parent = st->stack.back();
  parent->children.push_back(XmlNode{local_name(name), "", {}});
  st->stack.push_back(&parent->children.back());
}

void XMLCALL on_end(void* data, const char*) {
  auto* st = static_cast<ParseState*>(data);
  if (!st->stack.empty()) st->stack.pop_back();
}

void XMLCALL on_text(void* data, const char* text, int length) {
  auto* st = static_cast<ParseState*>(data);
  if (!st->stack.empty()) st->stack.back()->text.append(text, static_cast<size_t>(length));
}

void XMLCALL on_doctype(void* data, const char*, const char*, const char*, int) {
  auto* st = static_cast<ParseState*>(data);
  st->error = "a DOCTYPE is not allowed";
  XML_StopParser(st->parser, XML_FALSE);
}

void XMLCALL on_entity(void* data, const char*, int, const char*, int, const char*, const char*, const char*,
                       const char*) {
  auto* st = static_cast<ParseState*>(data);
  st->error = "entity declarations are not allowed";
  XML_StopParser(st->parser, XML_FALSE);
}

bool is_blank(std::string_view body) { return trimmed(body).empty(); }

Status check_tag(const std::map<std::string, std::string>& tags, const std::string& key, const std::string& value) {
  if (key.empty() || key.size() > kMaxTagKey) return invalid_tag("The TagKey you have provided is invalid");
  if (value.size() > kMaxTagValue) return invalid_tag("The TagValue you have provided is invalid");
  if (tags.contains(key)) return invalid_tag("Cannot provide multiple Tags with the same key");
  if (tags.size() >= kMaxTags) return invalid_tag("Object tags cannot be greater than 10");
  return Status::ok();
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = valid_char(text, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    if (n == 1) {
      switch (text[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\r': out += "&#13;"; break;
        default: out += text[i];
      }
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

XmlWriter::XmlWriter() : out_(R"(<?xml version="1.0" encoding="UTF-8"?>)") {}

XmlWriter& XmlWriter::open(std::string_view name, std::string_view xmlns) {
  out_ += '<';
  out_ += name;
  if (!xmlns.empty()) out_ += " xmlns=\"" + xml_escape(xmlns) + "\"";
  out_ += '>';
  open_.emplace_back(name);
  return *this;
}

XmlWriter& XmlWriter::close() {
  if (open_.empty()) return *this;
  out_ += "</" + open_.back() + ">";
  open_.pop_back();
  return *this;
}

XmlWriter& XmlWriter::element(std::string_view name, std::string_view text) {
  out_ += '<';
  out_ += name;
  out_ += '>';
  out_ += xml_escape(text);
  out_ += "</";
  out_ += name;
  out_ += '>';
  return *this;
}

std::string XmlWriter::finish() {
  while (!open_.empty()) close();
  return std::move(out_);
}

const XmlNode* XmlNode::child(std::string_view n) const {
  for (const auto& c : children) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

Result<XmlNode> parse_xml(std::string_view body) {
  ParseState st;
  XML_Parser parser = XML_ParserCreateNS(nullptr, '|');
  if (parser == nullptr) return Status::resource_exhausted("cannot create an XML parser");
  st.parser = parser;
  XML_SetUserData(parser, &st);
  XML_SetElementHandler(parser, on_start, on_end);
  XML_SetCharacterDataHandler(parser, on_text);
  XML_SetStartDoctypeDeclHandler(parser, on_doctype);
  XML_SetEntityDeclHandler(parser, on_entity);
  const XML_Status ok = XML_Parse(parser, body.data(), static_cast<int>(body.size()), XML_TRUE);
  std::string error = st.error;
  if (ok != XML_STATUS_OK && error.empty()) error = XML_ErrorString(XML_GetErrorCode(parser));
  XML_ParserFree(parser);
  if (!error.empty()) return malformed_xml(error);
  if (!st.has_root) return malformed_xml("the document is empty");
  return std::move(st.root);
}

Result<std::vector<CompletedPart>> parse_complete_multipart(std::string_view body) {
  ASSIGN_OR_RETURN(const XmlNode root, parse_xml(body));
  if (root.name != "CompleteMultipartUpload") return malformed_xml("the root element must be CompleteMultipartUpload");
  std::vector<CompletedPart> parts;
  for (const XmlNode& p : root.children) {
    if (p.name != "Part") continue;
    const XmlNode* number = p.child("PartNumber");
    const XmlNode* etag = p.child("ETag");
    if (number == nullptr || etag == nullptr) return malformed_xml("each Part needs PartNumber and ETag");
    const std::string_view text = trimmed(number->text);
    int n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return malformed_xml("PartNumber must be an integer");
    }
    if (n < 1 || n > 10000) {
      return Status::invalid_argument("Part number must be an integer between 1 and 10000, inclusive")
          .with_reason("InvalidArgument");
    }
    CompletedPart part;
    part.part_number = n;
    std::string_view e = trimmed(etag->text);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
    part.etag = std::string(e);
    for (const XmlNode& c : p.children) {
      if (c.name.rfind("Checksum", 0) == 0 && c.name.size() > 8) {
        part.checksums.emplace_back(c.name.substr(8), std::string(trimmed(c.text)));
      }
    }
    parts.push_back(std::move(part));
  }
  if (parts.empty()) return malformed_xml("a CompleteMultipartUpload needs at least one Part");
  return parts;
}

Result<DeleteRequest> parse_delete(std::string_view body) {
  ASSIGN_OR_RETURN(const XmlNode root, parse_xml(body));
  if (root.name != "Delete") return malformed_xml("the root element must be Delete");
  DeleteRequest request;
  for (const XmlNode& c : root.children) {
    if (c.name == "Quiet") {
      request.quiet = trimmed(c.text) == "true";
    } else if (c.name == "Object") {
      const XmlNode* key = c.child("Key");
      if (key == nullptr) return malformed_xml("each Object needs a Key");
      const XmlNode* version = c.child("VersionId");
      request.objects.emplace_back(key->text, version != nullptr ? std::string(trimmed(version->text)) : "");
    }
  }
  if (request.objects.empty() || request.objects.size() > 1000) {
    return malformed_xml("a Delete names 1 to 1000 objects");
  }
  return request;
}

Result<std::map<std::string, std::string>> parse_tagging(std::string_view body) {
  ASSIGN_OR_RETURN(const XmlNode root, parse_xml(body));
  if (root.name != "Tagging") return malformed_xml("the root element must be Tagging");
  const XmlNode* set = root.child("TagSet");
  if (set == nullptr) return malformed_xml("Tagging needs a TagSet");
  std::map<std::string, std::string> tags;
  for (const XmlNode& tag : set->children) {
    if (tag.name != "Tag") continue;
    const XmlNode* key = tag.child("Key");
    const XmlNode* value = tag.child("Value");
    if (key == nullptr || value == nullptr) return malformed_xml("each Tag needs a Key and a Value");
    RETURN_IF_ERROR(check_tag(tags, key->text, value->text));
    tags.emplace(key->text, value->text);
  }
  return tags;
}

Result<std::map<std::string, std::string>> parse_tagging_header(std::string_view header) {
  std::map<std::string, std::string> tags;
  size_t start = 0;
  while (start <= header.size()) {
    size_t end = header.find('&', start);
    if (end == std::string_view::npos) end = header.size();
    const std::string_view pair = header.substr(start, end - start);
    start = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string raw_key(pair.substr(0, eq));
    std::string raw_value(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    for (auto* s : {&raw_key, &raw_value}) {
      for (char& c : *s) {
        if (c == '+') c = ' ';  // form encoding, as x-amz-tagging uses
      }
    }
    auto key = text::percent_decode(raw_key);
    auto value = text::percent_decode(raw_value);
    if (!key || !value) return invalid_tag("x-amz-tagging is not URL-encoded correctly");
    RETURN_IF_ERROR(check_tag(tags, *key, *value));
    tags.emplace(std::move(*key), std::move(*value));
  }
  return tags;
}

Result<std::string> parse_create_bucket(std::string_view body) {
  if (is_blank(body)) return std::string();
  ASSIGN_OR_RETURN(const XmlNode root, parse_xml(body));
  if (root.name != "CreateBucketConfiguration") return malformed_xml("the root element must be CreateBucketConfiguration");
  const XmlNode* location = root.child("LocationConstraint");
  return location != nullptr ? std::string(trimmed(location->text)) : std::string();
}

Result<std::string> parse_versioning(std::string_view body) {
  ASSIGN_OR_RETURN(const XmlNode root, parse_xml(body));
  if (root.name != "VersioningConfiguration") return malformed_xml("the root element must be VersioningConfiguration");
  const XmlNode* status = root.child("Status");
  const std::string value = status != nullptr ? std::string(trimmed(status->text)) : "";
  if (value != "Enabled" && value != "Suspended") return malformed_xml("Status must be Enabled or Suspended");
  return value;
}

}  // namespace silo::s3
