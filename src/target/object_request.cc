#include "target/object_request.h"

#include <charconv>

#include "base/text.h"
#include "http/range.h"
#include "s3/names.h"
#include "s3api/object_headers.h"

namespace silo::target {
namespace {

constexpr int kMaxPartNumber = 10000;
constexpr uint64_t kMaxPartSize = 5ULL * 1024 * 1024 * 1024;

std::optional<std::string> header(const http::Headers& headers, std::string_view name) {
  const auto value = headers.get(name);
  if (!value) return std::nullopt;
  return std::string(*value);
}

Result<int> part_number_of(const s3api::S3Request& s3) {
  const auto text = s3.query.get("partNumber");
  const auto n = text ? parse_decimal(*text) : std::nullopt;
  if (!n || *n < 1 || *n > static_cast<uint64_t>(kMaxPartNumber)) {
    return Status::invalid_argument("partNumber must be an integer in 1..{}", kMaxPartNumber)
        .with_reason("InvalidArgument");
  }
  return static_cast<int>(*n);
}

Result<PartTarget> part_target_of(const s3api::S3Request& s3) {
  ASSIGN_OR_RETURN(const int number, part_number_of(s3));
  return PartTarget{s3.query.get("uploadId").value_or(""), number};
}

Result<CopySource> parse_copy_source(std::string_view value) {
  ASSIGN_OR_RETURN(s3::ObjectName named, s3::parse_copy_source(value));
  CopySource source;
  source.bucket = std::move(named.bucket);
  source.name = std::move(named.name);
  return source;
}

Result<Directive> directive_of(const http::Headers& headers, std::string_view name) {
  const std::string_view value = headers.get(name).value_or("COPY");
  if (value == "COPY") return Directive::kCopy;
  if (value == "REPLACE") return Directive::kReplace;
  return Status::invalid_argument("Unknown metadata or tagging directive {}", value)
      .with_reason("InvalidArgument");
}

// CopyObject and UploadPartCopy: where the bytes come from and what the copy keeps.
Result<CopySource> copy_source_of(const http::Headers& headers, const ObjectRequest& request) {
  ASSIGN_OR_RETURN(CopySource source,
                   parse_copy_source(headers.get("x-amz-copy-source").value_or("")));
  RETURN_IF_ERROR(s3::validate_object_name(source.name));
  ASSIGN_OR_RETURN(source.metadata, directive_of(headers, "x-amz-metadata-directive"));
  ASSIGN_OR_RETURN(source.tagging, directive_of(headers, "x-amz-tagging-directive"));
  const bool is_self = source.bucket == request.bucket && source.name == request.name;
  if (!request.part && is_self && source.metadata == Directive::kCopy &&
      source.tagging == Directive::kCopy) {
    return Status::invalid_argument(
               "This copy request is illegal because it is trying to copy an object to itself "
               "without changing "
               "the object's metadata, storage class, website redirect location or encryption "
               "attributes.")
        .with_reason("InvalidRequest");
  }
  source.range = header(headers, "x-amz-copy-source-range");
  if (source.range && !request.part) {
    return Status::invalid_argument("x-amz-copy-source-range is only valid for UploadPartCopy")
        .with_reason("InvalidArgument");
  }
  source.conditions = preconditions_from(headers, "x-amz-copy-source-");
  return source;
}

// GetObject and HeadObject: partNumber or Range, conditions, checksum mode, overrides.
Status parse_s3_read(const http::RequestHead& head, const s3api::S3Request& s3,
                     ObjectRequest& request) {
  const bool has_part = s3.query.has("partNumber");
  request.range = header(head.headers, "Range");
  if (has_part && request.range) {
    return Status::invalid_argument(
               "Cannot specify both Range header and partNumber query parameter.")
        .with_reason("InvalidRequest");
  }
  static constexpr std::pair<const char*, const char*> kOverrides[] = {
      {"response-content-type", "Content-Type"},
      {"response-content-language", "Content-Language"},
      {"response-expires", "Expires"},
      {"response-cache-control", "Cache-Control"},
      {"response-content-disposition", "Content-Disposition"},
      {"response-content-encoding", "Content-Encoding"}};
  for (const auto& [name, value] : s3.query.params) {
    if (name.rfind("response-", 0) == 0 && !s3.auth) {
      return Status::invalid_argument(
                 "Request specific response headers cannot be used for anonymous GET requests.")
          .with_reason("InvalidRequest");
    }
  }
  for (const auto& [param, name] : kOverrides) {
    if (auto value = s3.query.get(param)) {
      request.response_headers.emplace_back(name, std::move(*value));
    }
  }
  if (has_part) {
    ASSIGN_OR_RETURN(request.part_number, part_number_of(s3));
  }
  request.conditions = preconditions_from(head.headers, "");
  ASSIGN_OR_RETURN(request.archive, shards::parse_archive_read([&s3](std::string_view param) {
                     return s3.query.get(param);
                   }));
  if (request.archive && has_part) {
    return Status::invalid_argument("partNumber does not apply to archive members").with_reason("InvalidRequest");
  }
  // A part or a range has no checksum of its own to show.
  request.wants_checksums =
      head.headers.get("x-amz-checksum-mode") == std::optional<std::string_view>("ENABLED") &&
      !has_part && !request.range;
  return Status::ok();
}

// PutObject and UploadPart (`request.part` set): the body's checks and the attributes.
Status parse_s3_write(const http::RequestHead& head, ObjectRequest& request,
                      uint64_t max_object_size) {
  if (!request.part) {
    ASSIGN_OR_RETURN(request.attributes, s3api::attributes_from_headers(head.headers, "x-amz-tagging"));
    request.conditions = preconditions_from(head.headers, "");
  }
  ASSIGN_OR_RETURN(request.expected_md5_hex, s3api::content_md5_hex(head.headers));
  ASSIGN_OR_RETURN(request.checksums, checksum_specs(head.headers));
  request.max_size = request.part ? kMaxPartSize : max_object_size;
  return Status::ok();
}

// CopyObject and UploadPartCopy (`request.part` set).
Status parse_s3_copy(const http::RequestHead& head, ObjectRequest& request,
                     uint64_t max_object_size) {
  ASSIGN_OR_RETURN(request.copy_source, copy_source_of(head.headers, request));
  if (!request.part) {
    ASSIGN_OR_RETURN(request.attributes, s3api::attributes_from_headers(head.headers, "x-amz-tagging"));
    request.conditions = preconditions_from(head.headers, "");
  }
  request.max_size = request.part ? kMaxPartSize : max_object_size;
  return Status::ok();
}

}  // namespace

std::optional<uint64_t> parse_decimal(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

s3::Conditions Preconditions::view() const {
  auto get = [](const std::optional<std::string>& v) -> std::optional<std::string_view> {
    if (!v) return std::nullopt;
    return std::string_view(*v);
  };
  return s3::Conditions{get(if_match), get(if_none_match), get(if_modified_since),
                        get(if_unmodified_since)};
}

Preconditions preconditions_from(const http::Headers& headers, std::string_view prefix) {
  auto get = [&](std::string_view name) {
    return header(headers, std::string(prefix) + std::string(name));
  };
  return Preconditions{get("if-match"), get("if-none-match"), get("if-modified-since"),
                       get("if-unmodified-since")};
}

Result<std::vector<ChecksumSpec>> checksum_specs(const http::Headers& headers) {
  std::vector<ChecksumSpec> specs;
  auto add = [&specs](s3::ChecksumAlgorithm a) -> ChecksumSpec& {
    for (auto& spec : specs) {
      if (spec.algorithm == a) return spec;
    }
    specs.push_back({a, std::nullopt, false});
    return specs.back();
  };
  size_t given = 0;
  for (const auto& [name, value] : headers.fields()) {
    if (auto a = s3::checksum_from_header(name)) {
      add(*a).expected = value;
      ++given;
    }
  }
  if (given > 1) {
    return Status::invalid_argument(
               "Expecting a single x-amz-checksum- header. Multiple checksum Types are not "
               "allowed.")
        .with_reason("InvalidRequest");
  }
  if (auto trailer = headers.get("x-amz-trailer")) {
    auto a = s3::checksum_from_header(*trailer);
    if (!a) {
      return Status::invalid_argument("x-amz-trailer {} is not a supported checksum", *trailer)
          .with_reason("InvalidRequest");
    }
    add(*a).from_trailer = true;
  }
  if (auto name = headers.get("x-amz-sdk-checksum-algorithm")) {
    auto a = s3::checksum_from_name(*name);
    if (!a) {
      return Status::invalid_argument("x-amz-sdk-checksum-algorithm {} is not supported", *name)
          .with_reason("InvalidRequest");
    }
    add(*a);
  }
  return specs;
}

Result<ObjectRequest> parse_native_request(const http::RequestHead& head, std::string bucket,
                                           std::string name, uint64_t max_object_size) {
  ObjectRequest request;
  request.bucket = std::move(bucket);
  request.name = std::move(name);
  if (head.method == http::Method::kPut) {
    request.op = ObjectOp::kPut;
    // Tags come in X-Silo-Tagging, the header the native GET answers them in.
    ASSIGN_OR_RETURN(request.attributes, s3api::attributes_from_headers(head.headers, s3api::kTagsHeader));
    ASSIGN_OR_RETURN(request.expected_md5_hex, s3api::content_md5_hex(head.headers));
    request.expected_size = head.content_length;
    request.max_size = max_object_size;
    if (head.content_length && *head.content_length > max_object_size) {
      return s3api::too_large(*head.content_length, max_object_size);
    }
  } else if (head.method == http::Method::kGet || head.method == http::Method::kHead) {
    request.op = head.method == http::Method::kGet ? ObjectOp::kGet : ObjectOp::kHead;
    request.range = header(head.headers, "Range");
    ASSIGN_OR_RETURN(request.archive, shards::parse_archive_read([&head](std::string_view param) {
                       return head.query_param(param);
                     }));
    // Any value: CopyObject asks for its source's checksums this way.
    request.wants_checksums = head.headers.has("x-amz-checksum-mode");
  } else if (head.method == http::Method::kDelete) {
    request.op = ObjectOp::kDelete;
  } else {
    return Status::invalid_argument("method {} is not allowed on an object", head.method_text);
  }
  return request;
}

Result<ObjectRequest> parse_s3_request(const http::RequestHead& head, const s3api::S3Request& s3,
                                       uint64_t max_object_size) {
  ObjectRequest request;
  request.bucket = s3.route.bucket;
  request.name = s3.route.key;
  request.s3 = &s3;
  const s3::Op op = s3.route.op;
  if (op == s3::Op::kUploadPart || op == s3::Op::kUploadPartCopy) {
    ASSIGN_OR_RETURN(request.part, part_target_of(s3));
  }
  if (op == s3::Op::kGetObject || op == s3::Op::kHeadObject) {
    request.op = op == s3::Op::kGetObject ? ObjectOp::kGet : ObjectOp::kHead;
    RETURN_IF_ERROR(parse_s3_read(head, s3, request));
  } else if (op == s3::Op::kPutObject || op == s3::Op::kUploadPart) {
    request.op = ObjectOp::kPut;
    RETURN_IF_ERROR(parse_s3_write(head, request, max_object_size));
  } else if (op == s3::Op::kCopyObject || op == s3::Op::kUploadPartCopy) {
    request.op = ObjectOp::kCopy;
    RETURN_IF_ERROR(parse_s3_copy(head, request, max_object_size));
  } else if (op == s3::Op::kDeleteObject) {
    request.op = ObjectOp::kDelete;
  } else {
    return Status::unimplemented("{} is not served by the object service", s3::op_name(op))
        .with_reason("NotImplemented");
  }
  return request;
}

Result<ByteSelection> select_bytes(const ObjectRequest& request, const wire::ObjectRecord& record) {
  const uint64_t size = record.size();
  ByteSelection selected{0, size, false, std::nullopt};
  if (request.part_number) {
    const int part = *request.part_number;
    const auto& parts = record.parts();
    selected.is_partial = true;
    if (parts.empty()) {
      if (part != 1) {
        return Status::out_of_range("the object has one part").with_reason("InvalidPartNumber");
      }
      return selected;
    }
    if (static_cast<size_t>(part) > static_cast<size_t>(parts.size())) {
      return Status::out_of_range("the object has {} parts", parts.size())
          .with_reason("InvalidPartNumber");
    }
    for (int i = 0; i < part - 1; ++i) selected.offset += parts[i].size();
    selected.length = parts[part - 1].size();
    selected.parts_count = static_cast<size_t>(parts.size());
    return selected;
  }
  if (!request.range) return selected;
  auto range = http::parse_range(*request.range, size);
  if (!range) return Status(std::move(range).error()).with_reason("InvalidRange");
  if (range->has_value()) {
    selected.offset = (*range)->first;
    selected.length = (*range)->length;
    selected.is_partial = true;
  }
  return selected;
}

Result<wire::ObjectRecord> copy_attributes(const ObjectRequest& request,
                                           const http::Headers& source_headers) {
  ASSIGN_OR_RETURN(const wire::ObjectRecord source,
                   s3api::attributes_from_headers(source_headers, s3api::kTagsHeader));
  const CopySource& from = *request.copy_source;
  wire::ObjectRecord attributes = from.metadata == Directive::kCopy ? source : request.attributes;
  attributes.mutable_tags()->clear();
  const auto& tags = from.tagging == Directive::kCopy ? source.tags() : request.attributes.tags();
  attributes.mutable_tags()->insert(tags.begin(), tags.end());
  for (const auto& [name, value] : source_headers.fields()) {
    // A composite checksum ("-N") describes the source's parts, not the copy's bytes.
    if (auto a = s3::checksum_from_header(name); a && value.find('-') == std::string::npos) {
      (*attributes.mutable_checksums())[std::string(s3::checksum_name(*a))] = value;
    }
  }
  return attributes;
}

}  // namespace silo::target
