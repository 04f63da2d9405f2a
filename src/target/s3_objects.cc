// The S3 front-end of a target's objects. PutObject, UploadPart, GetObject, HeadObject,
// DeleteObject, CopyObject and UploadPartCopy are parsed into an ObjectRequest and served
// by the object service (object_service.cc), as the native API's requests are; tagging,
// ACL reads and the other multipart steps are S3's own and run here.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/log.h"
#include "http/reply.h"
#include "s3/http_time.h"
#include "s3/names.h"
#include "s3api/object_headers.h"
#include "target/object_request.h"
#include "target/target.h"

namespace silo::target {
namespace {

constexpr size_t kMaxXmlBody = 4 * 1024 * 1024;  // CompleteMultipartUpload of 10,000 parts
constexpr size_t kDefaultMaxParts = 1000;

// The operations the object service serves (object_service.cc); the rest are S3's own.
bool is_object_service_op(s3::Op op) {
  switch (op) {
    case s3::Op::kPutObject:
    case s3::Op::kUploadPart:
    case s3::Op::kGetObject:
    case s3::Op::kHeadObject:
    case s3::Op::kDeleteObject:
    case s3::Op::kCopyObject:
    case s3::Op::kUploadPartCopy: return true;
    default: return false;
  }
}

// CreateMultipartUpload's x-amz-checksum-algorithm and x-amz-checksum-type, as AWS takes
// them: the type defaults to COMPOSITE (FULL_OBJECT for CRC64NVME, which has no other),
// and FULL_OBJECT is for the CRCs only.
Result<store::UploadChecksum> upload_checksum_of(const http::Headers& headers) {
  const auto algorithm_text = headers.get("x-amz-checksum-algorithm");
  const auto type_text = headers.get("x-amz-checksum-type");
  if (!algorithm_text) {
    if (!type_text) return store::UploadChecksum{};
    return Status::invalid_argument("x-amz-checksum-type needs x-amz-checksum-algorithm").with_reason("InvalidRequest");
  }
  const auto algorithm = s3::checksum_from_name(*algorithm_text);
  if (!algorithm) {
    return Status::invalid_argument("Checksum algorithm provided is unsupported: {}", *algorithm_text)
        .with_reason("InvalidRequest");
  }
  const bool is_crc64 = *algorithm == s3::ChecksumAlgorithm::kCrc64Nvme;
  const bool is_sha = *algorithm == s3::ChecksumAlgorithm::kSha1 || *algorithm == s3::ChecksumAlgorithm::kSha256;
  std::string type = type_text ? std::string(*type_text) : (is_crc64 ? "FULL_OBJECT" : "COMPOSITE");
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::toupper(c); });
  if ((type != "COMPOSITE" && type != "FULL_OBJECT") || (type == "COMPOSITE" && is_crc64) ||
      (type == "FULL_OBJECT" && is_sha)) {
    return Status::invalid_argument("The {} checksum type is not supported for {}", type, s3::checksum_name(*algorithm))
        .with_reason("InvalidRequest");
  }
  return store::UploadChecksum{std::string(s3::checksum_name(*algorithm)), std::move(type)};
}

// The completed parts' checksums (those the request names must match the stored ones) and
// the object's checksum of the upload's algorithm and type, when it has one.
Result<std::optional<std::string>> check_part_checksums(const std::vector<s3::CompletedPart>& listed,
                                                        const std::vector<store::PartInfo>& stored,
                                                        const store::UploadChecksum& checksum) {
  const auto algorithm = s3::checksum_from_name(checksum.algorithm);
  std::vector<s3::PartChecksum> sums;
  for (const s3::CompletedPart& part : listed) {
    const auto it = std::find_if(stored.begin(), stored.end(),
                                 [&](const store::PartInfo& p) { return p.part_number == part.part_number; });
    if (it == stored.end()) continue;  // the store said InvalidPart already
    for (const auto& [name, value] : part.checksums) {
      const auto kept = it->checksums.find(name);
      if (kept == it->checksums.end() || kept->second != value) {
        return Status::invalid_argument("part {}: its {} is not {}", part.part_number, name, value)
            .with_reason("InvalidPart");
      }
    }
    if (!algorithm) continue;
    const auto kept = it->checksums.find(checksum.algorithm);
    if (kept == it->checksums.end()) {
      return Status::invalid_argument("part {} has no {} checksum, which the upload's algorithm needs",
                                      part.part_number, checksum.algorithm)
          .with_reason("InvalidPart");
    }
    sums.push_back({kept->second, it->size});
  }
  if (!algorithm) return std::optional<std::string>();
  auto value = s3::multipart_checksum(*algorithm, checksum.type == "FULL_OBJECT", sums);
  if (!value) return Status::internal("the parts' {} checksums do not combine", checksum.algorithm);
  return value;
}

}  // namespace

http::Awaitable<void> Target::handle_s3(http::Exchange& exchange, const s3api::S3Request& request) {
  const s3::Op op = request.route.op;
  const bool is_upload_op = op == s3::Op::kUploadPart || op == s3::Op::kUploadPartCopy ||
                            op == s3::Op::kCompleteMultipartUpload || op == s3::Op::kAbortMultipartUpload ||
                            op == s3::Op::kListParts;
  const s3::Subject subject = is_upload_op ? s3::Subject::kUpload : s3::Subject::kObject;
  Status s = s3::validate_object_name(request.route.key);
  std::optional<Resolved> resolved;
  if (s.is_ok()) {
    auto found = co_await resolve(exchange.request(), request.route.bucket, request.route.key);
    if (found) {
      resolved = std::move(*found);
    } else {
      s = found.error();
    }
  }
  const bool is_read = op == s3::Op::kGetObject || op == s3::Op::kHeadObject;
  if (s.is_ok() && !serves_here(exchange.request(), *resolved, is_read)) {
    s = co_await forward(exchange, *resolved);
  } else if (s.is_ok()) {
    // The caller's access was decided where the request arrived (the gateway, before it
    // relayed it or handed it over in-process: docs/security.md).
    s = co_await run_s3(exchange, request, *resolved);
  }
  if (!s.is_ok()) {
    errors_.add();
    if (s.code() != Code::kNotFound && s.code() != Code::kFailedPrecondition) {
      SILO_LOG_DEBUG("S3 {} {}: {}", s3::op_name(op), request.resource, s);
    }
    co_await s3api::send_s3_error(exchange, s, subject, &request);
  }
}

http::Awaitable<Status> Target::run_s3(http::Exchange& exchange, const s3api::S3Request& request,
                                       const Resolved& r) {
  const s3::Op op = request.route.op;
  if (is_object_service_op(op)) {
    CO_ASSIGN_OR_RETURN(const ObjectRequest object_request,
                        parse_s3_request(exchange.request(), request, live_config()->s3.max_object_size));
    co_return co_await serve_object(exchange, object_request, r);
  }
  // While objects move, one not moved here yet is copied from its previous owner first
  // (get-from-neighbor): these read or keep what exists.
  const bool reads_existing = op == s3::Op::kGetObjectTagging || op == s3::Op::kPutObjectTagging ||
                              op == s3::Op::kDeleteObjectTagging || op == s3::Op::kGetObjectAcl ||
                              op == s3::Op::kPutObjectAcl;
  if (reads_existing) CO_RETURN_IF_ERROR(co_await rebalance_.pull_if_missing(r.object));
  switch (op) {
    case s3::Op::kGetObjectTagging:
    case s3::Op::kPutObjectTagging:
    case s3::Op::kDeleteObjectTagging: co_return co_await s3_tagging(exchange, request, r);
    case s3::Op::kGetObjectAcl: {
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await store_.stat(r.object));
      std::ignore = record;
      co_return co_await s3api::send_xml(exchange, request, s3api::acl_xml(r.bucket.props().anonymous_read()));
    }
    case s3::Op::kPutObjectAcl: {
      // Access is per bucket: an object's ACL is honoured when it asks what its bucket gives.
      CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxXmlBody));
      CO_ASSIGN_OR_RETURN(const bool anonymous_read, s3api::canned_acl_read(exchange.request().headers, body));
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await store_.stat(r.object));
      std::ignore = record;
      if (anonymous_read != r.bucket.props().anonymous_read()) {
        co_return Status::unimplemented(
            "Silo keeps access per bucket: every object of {} is {}; set the bucket's ACL (PutBucketAcl) instead",
            request.route.bucket, r.bucket.props().anonymous_read() ? "public-read" : "private")
            .with_reason("NotImplemented");
      }
      co_return co_await exchange.response().send(s3api::s3_head(&request), "");
    }
    case s3::Op::kCreateMultipartUpload:
    case s3::Op::kCompleteMultipartUpload:
      CO_RETURN_IF_ERROR(cache_.check_space());  // (abort and list free or read)
      co_return co_await s3_multipart(exchange, request, r);
    case s3::Op::kAbortMultipartUpload:
    case s3::Op::kListParts: co_return co_await s3_multipart(exchange, request, r);
    default: break;
  }
  co_return Status::unimplemented("{} is not an object operation", s3::op_name(request.route.op))
      .with_reason("NotImplemented");
}

http::Awaitable<Status> Target::s3_tagging(http::Exchange& exchange, const s3api::S3Request& request,
                                           const Resolved& r) {
  switch (request.route.op) {
    case s3::Op::kGetObjectTagging: {
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await store_.stat(r.object));
      std::vector<std::pair<std::string, std::string>> tags(record.tags().begin(), record.tags().end());
      std::sort(tags.begin(), tags.end());
      s3::XmlWriter xml;
      xml.open("Tagging", s3::kS3Xmlns).open("TagSet");
      for (const auto& [key, value] : tags) xml.open("Tag").element("Key", key).element("Value", value).close();
      xml.close().close();
      co_return co_await s3api::send_xml(exchange, request, xml.finish());
    }
    case s3::Op::kPutObjectTagging: {
      CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxXmlBody));
      CO_ASSIGN_OR_RETURN(const auto tags, s3::parse_tagging(body));
      // Named, not a temporary inside co_await (docs/adr/0003: GCC 12 destroys those twice).
      std::function<Status(wire::ObjectRecord&)> set_tags = [&tags](wire::ObjectRecord& record) {
        record.mutable_tags()->clear();
        for (const auto& [key, value] : tags) (*record.mutable_tags())[key] = value;
        return Status::ok();
      };
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord updated,
                          co_await store_.update(r.object, std::move(set_tags), peers_.durability_of(r.bucket)));
      CO_RETURN_IF_ERROR(co_await replication_.replicate_record(r.object, r.holders, updated));
      co_return co_await exchange.response().send(s3api::s3_head(&request), "");
    }
    default: {
      std::function<Status(wire::ObjectRecord&)> clear_tags = [](wire::ObjectRecord& record) {
        record.mutable_tags()->clear();
        return Status::ok();
      };
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord updated,
                          co_await store_.update(r.object, std::move(clear_tags), peers_.durability_of(r.bucket)));
      CO_RETURN_IF_ERROR(co_await replication_.replicate_record(r.object, r.holders, updated));
      co_return co_await exchange.response().send(s3api::s3_head(&request, 204), "");
    }
  }
}

http::Awaitable<Status> Target::s3_multipart(http::Exchange& exchange, const s3api::S3Request& request,
                                             const Resolved& r) {
  const http::RequestHead& in = exchange.request();
  const std::string upload_id = request.query.get("uploadId").value_or("");
  switch (request.route.op) {
    case s3::Op::kCreateMultipartUpload: {
      CO_ASSIGN_OR_RETURN(wire::ObjectRecord attributes, s3api::attributes_from_headers(in.headers, "x-amz-tagging"));
      CO_ASSIGN_OR_RETURN(store::UploadChecksum checksum, upload_checksum_of(in.headers));
      CO_ASSIGN_OR_RETURN(const store::UploadInfo upload,
                          co_await store_.create_upload(r.object, std::move(attributes), std::move(checksum)));
      s3::XmlWriter xml;
      xml.open("InitiateMultipartUploadResult", s3::kS3Xmlns)
          .element("Bucket", request.route.bucket)
          .element("Key", request.route.key)
          .element("UploadId", upload.upload_id);
      http::ResponseHead head = s3api::s3_head(&request);
      head.headers.set("Content-Type", "application/xml");
      if (!upload.checksum.algorithm.empty()) {
        xml.element("ChecksumAlgorithm", upload.checksum.algorithm).element("ChecksumType", upload.checksum.type);
        head.headers.set("x-amz-checksum-algorithm", upload.checksum.algorithm);
        head.headers.set("x-amz-checksum-type", upload.checksum.type);
      }
      xml.close();
      co_return co_await exchange.response().send(std::move(head), xml.finish());
    }
    case s3::Op::kCompleteMultipartUpload: {
      CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxXmlBody));
      CO_ASSIGN_OR_RETURN(const auto completed, s3::parse_complete_multipart(body));
      std::vector<store::CompletePart> parts;
      for (const auto& p : completed) parts.push_back({p.part_number, s3api::unquote_etag(p.etag)});
      const uint64_t fingerprint = parts_fingerprint(parts);
      auto upload = co_await store_.get_upload(r.object, upload_id);
      if (!upload && upload.error().code() == Code::kNotFound) {
        // A retry of a completion that succeeded gets its answer again (AWS), when it
        // names the same parts.
        const auto answered = completed_uploads_.find(r.object, upload_id);
        if (answered && answered->parts == fingerprint) {
          co_return co_await send_completed(exchange, request, *answered);
        }
      }
      CO_RETURN_IF_ERROR(upload.status());
      // The new object's If-Match / If-None-Match, checked at commit as a PUT's are.
      ObjectRequest complete;
      complete.conditions = preconditions_from(in.headers, "");
      store::PutOptions options = put_options(complete, r.bucket);
      CO_RETURN_IF_ERROR(replication::Replication::check_holders_up(r.bucket, r.holders, r.object.name));
      // Assembled, then committed as any PUT's bytes: copies, or a coded object's slices
      // staged on every holder before an old one is replaced (ADR 0014).
      CO_ASSIGN_OR_RETURN(const std::unique_ptr<store::ObjectWriter> writer,
                          co_await store_.assemble_upload(r.object, upload_id, std::move(parts), std::move(options)));
      // The parts are the upload's own until the writer ends (the claim keeps them).
      CO_ASSIGN_OR_RETURN(const std::vector<store::PartInfo> stored, co_await store_.list_parts(r.object, upload_id));
      CO_ASSIGN_OR_RETURN(const std::optional<std::string> checksum,
                          check_part_checksums(completed, stored, upload->checksum));
      if (checksum) {
        // A client that sends the object's checksum with the completion has it checked.
        const auto algorithm = s3::checksum_from_name(upload->checksum.algorithm);
        const auto given = in.headers.get(s3::checksum_header(*algorithm));
        if (given && *given != *checksum) {
          co_return Status::invalid_argument("The {} you specified did not match the calculated checksum {}",
                                             upload->checksum.algorithm, *checksum)
              .with_reason("BadDigest");
        }
        writer->set_checksum(upload->checksum.algorithm, *checksum);
      }
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await commit_write(complete, r, *writer));
      CompletedUploads::Answer answer{s3api::etag_of(record), fingerprint, "", "", ""};
      if (checksum) {
        answer.checksum_name = upload->checksum.algorithm;
        answer.checksum_value = *checksum;
        answer.checksum_type = upload->checksum.type;
      }
      completed_uploads_.remember(r.object, upload_id, answer);
      co_return co_await send_completed(exchange, request, answer);
    }
    case s3::Op::kAbortMultipartUpload: {
      CO_RETURN_IF_ERROR(co_await store_.abort_upload(r.object, upload_id));
      co_return co_await exchange.response().send(s3api::s3_head(&request, 204), "");
    }
    default: break;
  }
  // ListParts
  CO_ASSIGN_OR_RETURN(const store::UploadInfo upload, co_await store_.get_upload(r.object, upload_id));
  CO_ASSIGN_OR_RETURN(const std::vector<store::PartInfo> parts, co_await store_.list_parts(r.object, upload_id));
  size_t max_parts = kDefaultMaxParts;
  if (auto text = request.query.get("max-parts")) {
    const auto n = parse_decimal(*text);
    if (!n) co_return Status::invalid_argument("max-parts must be a non-negative integer").with_reason("InvalidArgument");
    max_parts = std::min<uint64_t>(*n, kDefaultMaxParts);
  }
  uint64_t marker = 0;
  if (auto text = request.query.get("part-number-marker"); text && !text->empty()) {
    const auto n = parse_decimal(*text);
    if (!n) co_return Status::invalid_argument("part-number-marker must be an integer").with_reason("InvalidArgument");
    marker = *n;
  }
  s3::XmlWriter xml;
  xml.open("ListPartsResult", s3::kS3Xmlns)
      .element("Bucket", request.route.bucket)
      .element("Key", request.route.key)
      .element("UploadId", upload_id);
  s3api::add_owner(xml, "Initiator");
  s3api::add_owner(xml);
  xml.element("StorageClass", "STANDARD").element("PartNumberMarker", std::to_string(marker));
  if (!upload.checksum.algorithm.empty()) {
    xml.element("ChecksumAlgorithm", upload.checksum.algorithm).element("ChecksumType", upload.checksum.type);
  }
  size_t listed = 0;
  int last = 0;
  bool is_truncated = false;
  for (const store::PartInfo& part : parts) {
    if (static_cast<uint64_t>(part.part_number) <= marker) continue;
    if (listed == max_parts) {
      is_truncated = true;
      break;
    }
    ++listed;
    last = part.part_number;
  }
  xml.element("NextPartNumberMarker", std::to_string(last))
      .element("MaxParts", std::to_string(max_parts))
      .element("IsTruncated", is_truncated ? "true" : "false");
  for (const store::PartInfo& part : parts) {
    if (static_cast<uint64_t>(part.part_number) <= marker || part.part_number > last) continue;
    xml.open("Part")
        .element("PartNumber", std::to_string(part.part_number))
        .element("LastModified", s3::format_iso8601(part.mtime_unix_nanos))
        .element("ETag", "\"" + part.etag_hex + "\"")
        .element("Size", std::to_string(part.size));
    for (const auto& [algorithm, value] : part.checksums) xml.element("Checksum" + algorithm, value);
    xml.close();
  }
  xml.close();
  co_return co_await s3api::send_xml(exchange, request, xml.finish());
}

http::Awaitable<Status> Target::send_completed(http::Exchange& exchange, const s3api::S3Request& request,
                                               const CompletedUploads::Answer& answer) {
  const auto host = exchange.request().headers.get("Host").value_or("localhost");
  s3::XmlWriter xml;
  xml.open("CompleteMultipartUploadResult", s3::kS3Xmlns)
      .element("Location", fmt::format("{}://{}{}", exchange.request().is_tls ? "https" : "http", host,
                                       request.resource))
      .element("Bucket", request.route.bucket)
      .element("Key", request.route.key)
      .element("ETag", "\"" + answer.etag + "\"");
  if (!answer.checksum_name.empty()) {
    xml.element("Checksum" + answer.checksum_name, answer.checksum_value).element("ChecksumType", answer.checksum_type);
  }
  xml.close();
  co_return co_await s3api::send_xml(exchange, request, xml.finish());
}

http::Awaitable<void> Target::handle_list_uploads(http::Exchange& exchange, std::string bucket_name) {
  const http::RequestHead& request = exchange.request();
  auto bucket = co_await find_bucket(bucket_name);
  if (!bucket) {
    co_await http::send_error(exchange, bucket.error());
    co_return;
  }
  store::UploadListOptions options;
  options.prefix = request.query_param("prefix").value_or("");
  options.key_marker = request.query_param("key_marker").value_or("");
  options.upload_id_marker = request.query_param("upload_id_marker").value_or("");
  options.limit = std::clamp<size_t>(parse_decimal(request.query_param("limit").value_or("1000")).value_or(1000), 1, 10000);
  auto page = co_await store_.list_uploads(BucketId(bucket->id()), std::move(options));
  if (!page) {
    co_await http::send_error(exchange, page.error());
    co_return;
  }
  wire::UploadPage out;
  for (const store::UploadInfo& u : page->uploads) {
    wire::UploadEntry& e = *out.add_uploads();
    e.set_name(u.name);
    e.set_upload_id(u.upload_id);
    e.set_initiated_unix_nanos(u.initiated_unix_nanos);
  }
  out.set_is_truncated(page->is_truncated);
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/x-protobuf");
  std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(out)));
}

}  // namespace silo::target
