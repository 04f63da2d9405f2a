// The S3 object operations a target runs for the objects it owns: PutObject, GetObject,
// HeadObject, DeleteObject, CopyObject, tagging, ACL reads and every multipart step.
#include <charconv>

#include "base/base64.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/text.h"
#include "s3/names.h"
#include "http/reply.h"
#include "http/range.h"
#include "s3/conditions.h"
#include "s3/http_time.h"
#include "s3/names.h"
#include "target/object_headers.h"
#include "target/target.h"
#include "wire/json.h"

namespace silo::target {
namespace {

constexpr size_t kMaxXmlBody = 4 * 1024 * 1024;  // CompleteMultipartUpload of 10,000 parts
constexpr int kMaxPartNumber = 10000;
constexpr uint64_t kMaxPartSize = 5ULL * 1024 * 1024 * 1024;
constexpr size_t kDefaultMaxParts = 1000;

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

Result<int> part_number_of(const cluster::S3Request& request) {
  const auto text = request.query.get("partNumber");
  const auto n = text ? parse_u64(*text) : std::nullopt;
  if (!n || *n < 1 || *n > static_cast<uint64_t>(kMaxPartNumber)) {
    return Status::invalid_argument("partNumber must be an integer in 1..{}", kMaxPartNumber)
        .with_reason("InvalidArgument");
  }
  return static_cast<int>(*n);
}

std::string unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

int64_t seconds_of(int64_t unix_nanos) { return unix_nanos / 1'000'000'000; }

s3::Conditions conditions_of(const http::Headers& headers, std::string_view prefix) {
  auto get = [&](std::string_view name) { return headers.get(std::string(prefix) + std::string(name)); };
  return s3::Conditions{get("if-match"), get("if-none-match"), get("if-modified-since"), get("if-unmodified-since")};
}

// If-Match / If-None-Match of a PUT or CompleteMultipartUpload, checked by the store under
// the object lock against whatever is current at commit time.
std::function<Status(const wire::ObjectRecord*)> write_precondition(const http::Headers& headers) {
  const auto if_match = headers.get("If-Match");
  const auto if_none_match = headers.get("If-None-Match");
  if (!if_match && !if_none_match) return {};
  return [if_match = std::optional<std::string>(if_match), if_none_match = std::optional<std::string>(if_none_match)](
             const wire::ObjectRecord* current) {
    s3::Conditions c;
    if (if_match) c.if_match = *if_match;
    if (if_none_match) c.if_none_match = *if_none_match;
    if (current == nullptr) return s3::evaluate_write(c, nullptr);
    const std::string etag = etag_of(*current);
    return s3::evaluate_write(c, &etag);
  };
}

// The x-amz-checksum-* a PUT or UploadPart asks for: given in a header, announced as a
// trailer, or only named by x-amz-sdk-checksum-algorithm (computed and stored).
struct ChecksumPlan {
  struct Item {
    s3::Checksum checksum;
    std::optional<std::string> expected;  // from the header
    bool from_trailer = false;
  };
  std::vector<Item> items;
};

Result<ChecksumPlan> checksum_plan(const http::Headers& headers) {
  ChecksumPlan plan;
  auto add = [&plan](s3::ChecksumAlgorithm a) -> ChecksumPlan::Item& {
    for (auto& item : plan.items) {
      if (item.checksum.algorithm() == a) return item;
    }
    plan.items.push_back({s3::Checksum(a), std::nullopt, false});
    return plan.items.back();
  };
  size_t given = 0;
  for (const auto& [name, value] : headers.fields()) {
    if (auto a = s3::checksum_from_header(name)) {
      add(*a).expected = value;
      ++given;
    }
  }
  if (given > 1) {
    return Status::invalid_argument("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
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
  return plan;
}

// Checks the computed checksums against the header or trailer values and hands them to
// the writer; the response then echoes them.
Status finish_checksums(ChecksumPlan& plan, const std::vector<std::pair<std::string, std::string>>& trailers,
                        store::ObjectWriter& writer, http::Headers& response) {
  for (auto& item : plan.items) {
    std::optional<std::string> expected = item.expected;
    if (item.from_trailer) {
      for (const auto& [name, value] : trailers) {
        if (s3::checksum_from_header(name) == item.checksum.algorithm()) expected = value;
      }
      if (!expected) {
        return Status::invalid_argument("the trailer {} announced in x-amz-trailer did not come",
                                        s3::checksum_header(item.checksum.algorithm()))
            .with_reason("IncompleteBody");
      }
    }
    const std::string value = item.checksum.base64();
    if (expected && *expected != value) {
      return Status::invalid_argument("The {} you specified did not match the calculated checksum.",
                                      s3::checksum_name(item.checksum.algorithm()))
          .with_reason("BadDigest");
    }
    writer.set_checksum(std::string(s3::checksum_name(item.checksum.algorithm())), value);
    response.set(s3::checksum_header(item.checksum.algorithm()), value);
  }
  return Status::ok();
}

// "bucket/key" or "/bucket/key", URL-encoded, maybe with "?versionId=".
struct CopySource {
  std::string bucket;
  std::string key;
};

Result<CopySource> parse_copy_source(std::string_view value) {
  std::string_view text = value;
  if (const size_t q = text.find('?'); q != std::string_view::npos) {
    const std::string_view query = text.substr(q + 1);
    if (query != "versionId=null" && !query.empty()) {
      return Status::invalid_argument("copy source {}: versions are not supported (only versionId=null)", value)
          .with_reason("InvalidArgument");
    }
    text = text.substr(0, q);
  }
  if (!text.empty() && text.front() == '/') text.remove_prefix(1);
  auto decoded = text::percent_decode(text);
  if (!decoded) return Status::invalid_argument("x-amz-copy-source is not URL-encoded correctly").with_reason("InvalidArgument");
  const size_t slash = decoded->find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == decoded->size()) {
    return Status::invalid_argument("x-amz-copy-source must be bucket/key").with_reason("InvalidArgument");
  }
  return CopySource{decoded->substr(0, slash), decoded->substr(slash + 1)};
}

void set_overrides(const cluster::S3Request& request, http::Headers& headers) {
  static constexpr std::pair<const char*, const char*> kOverrides[] = {
      {"response-content-type", "Content-Type"},         {"response-content-language", "Content-Language"},
      {"response-expires", "Expires"},                   {"response-cache-control", "Cache-Control"},
      {"response-content-disposition", "Content-Disposition"}, {"response-content-encoding", "Content-Encoding"}};
  for (const auto& [param, header] : kOverrides) {
    if (auto value = request.query.get(param)) headers.set(header, *value);
  }
}

bool has_overrides(const cluster::S3Request& request) {
  for (const auto& [name, value] : request.query.params) {
    if (name.rfind("response-", 0) == 0) return true;
  }
  return false;
}

}  // namespace

http::Awaitable<void> Target::handle_s3(http::Exchange& exchange, const cluster::S3Request& request) {
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
    if (!request.auth && !(is_read && resolved->bucket.props().anonymous_read())) {
      s = Status::permission_denied("Access Denied").with_reason("AccessDenied");
    } else {
      s = co_await run_s3(exchange, request, *resolved);
    }
  }
  if (!s.is_ok()) {
    errors_.add();
    if (s.code() != Code::kNotFound && s.code() != Code::kFailedPrecondition) {
      SILO_LOG_DEBUG("S3 {} {}: {}", s3::op_name(op), request.resource, s);
    }
    co_await cluster::send_s3_error(exchange, s, subject, &request);
  }
}

http::Awaitable<Status> Target::run_s3(http::Exchange& exchange, const cluster::S3Request& request,
                                       const Resolved& r) {
  const s3::Op op = request.route.op;
  // While objects move, one not moved here yet is copied from its previous owner first
  // (get-from-neighbor) for every operation that reads or keeps what exists.
  const bool is_conditional_put = op == s3::Op::kPutObject && (exchange.request().headers.has("If-Match") ||
                                                               exchange.request().headers.has("If-None-Match"));
  // (GET and HEAD read from where the object still is instead: no copy to wait for.)
  const bool reads_existing = op == s3::Op::kCopyObject || op == s3::Op::kGetObjectTagging ||
                              op == s3::Op::kPutObjectTagging ||
                              op == s3::Op::kDeleteObjectTagging || op == s3::Op::kGetObjectAcl || is_conditional_put;
  if (reads_existing) CO_RETURN_IF_ERROR(co_await rebalance_.pull_if_missing(r.object));
  switch (op) {
    case s3::Op::kPutObject: co_return co_await s3_put(exchange, request, r);
    case s3::Op::kGetObject:
    case s3::Op::kHeadObject:
      co_return co_await read_object(exchange, r, [this, &exchange, &request, &r](const ColdRead* cold) {
        return s3_get(exchange, request, r, cold);
      });
    case s3::Op::kDeleteObject: {
      deletes_.add();
      Status removed;  // no ternary around co_await (docs/adr/0003)
      if (wire::is_remote(r.bucket.props())) {
        removed = co_await remove_remote(r);
      } else {
        removed = co_await rebalance_.remove_everywhere(r.object);
      }
      if (!removed.is_ok() && removed.code() != Code::kNotFound) co_return removed;
      co_return co_await exchange.response().send(cluster::s3_head(&request, 204), "");
    }
    case s3::Op::kCopyObject:
    case s3::Op::kUploadPartCopy:
      CO_RETURN_IF_ERROR(cache_.check_space());
      co_return co_await s3_copy(exchange, request, r);
    case s3::Op::kGetObjectTagging:
    case s3::Op::kPutObjectTagging:
    case s3::Op::kDeleteObjectTagging: co_return co_await s3_tagging(exchange, request, r);
    case s3::Op::kGetObjectAcl: {
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await store_.stat(r.object));
      std::ignore = record;
      co_return co_await cluster::send_xml(exchange, request, cluster::acl_xml(r.bucket.props().anonymous_read()));
    }
    case s3::Op::kCreateMultipartUpload:
    case s3::Op::kUploadPart:
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

Result<store::PutOptions> Target::s3_put_options(const http::RequestHead& head, const wire::Bucket& bucket) const {
  store::PutOptions options;
  options.durability = peers_.durability_of(bucket);
  ASSIGN_OR_RETURN(options.attributes, attributes_from_headers(head.headers, "x-amz-tagging"));
  ASSIGN_OR_RETURN(options.expected_md5_hex, content_md5_hex(head.headers));
  options.precondition = write_precondition(head.headers);
  return options;
}

http::Awaitable<Status> Target::receive_object(http::Exchange& exchange, const cluster::S3Request& request,
                                               store::ObjectWriter& writer, uint64_t max_size,
                                               http::Headers& response) {
  const http::RequestHead& head = exchange.request();
  CO_ASSIGN_OR_RETURN(auto payload, cluster::PayloadReader::create(exchange, request));
  if (!payload->length()) {
    co_return Status::invalid_argument("You must provide the Content-Length HTTP header.")
        .with_reason("MissingContentLength");
  }
  if (*payload->length() > max_size) co_return too_large(*payload->length(), max_size);
  CO_ASSIGN_OR_RETURN(ChecksumPlan plan, checksum_plan(head.headers));
  std::vector<s3::Checksum*> checksums;
  for (auto& item : plan.items) checksums.push_back(&item.checksum);
  CO_ASSIGN_OR_RETURN(const uint64_t received, co_await receive(*payload, writer, std::move(checksums)));
  if (received != *payload->length()) {
    co_return Status::invalid_argument("You did not provide the number of bytes specified by the Content-Length HTTP header.")
        .with_reason("IncompleteBody");
  }
  co_return finish_checksums(plan, payload->trailers(), writer, response);
}

http::Awaitable<Status> Target::s3_put(http::Exchange& exchange, const cluster::S3Request& request,
                                       const Resolved& r) {
  puts_.add();
  CO_RETURN_IF_ERROR(cache_.check_space());
  CO_RETURN_IF_ERROR(check_holders_up(r));
  CO_ASSIGN_OR_RETURN(store::PutOptions options, s3_put_options(exchange.request(), r.bucket));
  WriteTicket ticket(*this);
  guard_bucket(options, r.bucket, ticket);
  CO_ASSIGN_OR_RETURN(auto writer, co_await store_.create(r.object, std::move(options)));
  http::ResponseHead head = cluster::s3_head(&request);
  const uint64_t max_object_size = live_config()->s3.max_object_size;
  CO_RETURN_IF_ERROR(co_await receive_object(exchange, request, *writer, max_object_size, head.headers));
  // Coded objects stage their slices before replacing any (docs/adr/0014).
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await commit_and_publish(r, *writer));
  head.headers.set("ETag", "\"" + etag_of(record) + "\"");
  co_return co_await exchange.response().send(std::move(head), "");
}

http::Awaitable<Status> Target::s3_get(http::Exchange& exchange, const cluster::S3Request& request,
                                       const Resolved& r, const ColdRead* cold) {
  gets_.add();
  const http::RequestHead& in = exchange.request();
  const bool is_head = in.method == http::Method::kHead;
  const auto part_text = request.query.get("partNumber");
  const auto range_header = in.headers.get("Range");
  if (part_text && range_header) {
    co_return Status::invalid_argument("Cannot specify both Range header and partNumber query parameter.")
        .with_reason("InvalidRequest");
  }
  if (has_overrides(request) && !request.auth) {
    co_return Status::invalid_argument("Request specific response headers cannot be used for anonymous GET requests.")
        .with_reason("InvalidRequest");
  }
  std::optional<store::OpenObject> object;
  wire::ObjectRecord record;
  if (cold) {
    record = cold->record;
  } else if (is_head) {
    CO_ASSIGN_OR_RETURN(record, co_await store_.stat(r.object));
  } else {
    CO_ASSIGN_OR_RETURN(auto opened, co_await store_.open(r.object));
    object.emplace(std::move(opened));
    record = object->record();
  }
  const bool is_slice = record.has_ec();
  record = erasure::Erasure::object_view(record);  // a slice here shows the object
  const std::string etag = etag_of(record);
  switch (s3::evaluate_read(conditions_of(in.headers, ""), etag, seconds_of(record.mtime_unix_nanos()))) {
    case s3::ConditionResult::kProceed: break;
    case s3::ConditionResult::kNotModified: {
      http::ResponseHead head = cluster::s3_head(&request, 304);
      head.headers.set("ETag", "\"" + etag + "\"");
      head.headers.set("Last-Modified", http_date(record.mtime_unix_nanos()));
      co_return co_await exchange.response().send(std::move(head), "");
    }
    case s3::ConditionResult::kPreconditionFailed:
      co_return Status::failed_precondition("At least one of the pre-conditions you specified did not hold")
          .with_reason("PreconditionFailed");
  }
  const uint64_t size = record.size();
  uint64_t offset = 0;
  uint64_t length = size;
  http::ResponseHead head = cluster::s3_head(&request);
  const bool wants_checksums = in.headers.get("x-amz-checksum-mode") == std::optional<std::string_view>("ENABLED");
  add_object_headers(record, head.headers, wants_checksums && !part_text && !range_header);
  head.headers.remove(kTagsHeader);
  if (part_text) {
    CO_ASSIGN_OR_RETURN(const int part, part_number_of(request));
    const auto& parts = record.parts();
    if (parts.empty()) {
      if (part != 1) co_return Status::out_of_range("the object has one part").with_reason("InvalidPartNumber");
    } else {
      if (part > parts.size()) {
        co_return Status::out_of_range("the object has {} parts", parts.size()).with_reason("InvalidPartNumber");
      }
      for (int i = 0; i < part - 1; ++i) offset += parts[i].size();
      length = parts[part - 1].size();
      head.headers.set("x-amz-mp-parts-count", std::to_string(parts.size()));
    }
    head.status = 206;
    head.headers.set("Content-Range", fmt::format("bytes {}-{}/{}", offset, offset + length - 1, size));
  } else if (range_header) {
    auto range = http::parse_range(*range_header, size);
    if (!range) {
      co_return Status::out_of_range("The requested range is not satisfiable").with_reason("InvalidRange");
    }
    if (range->has_value()) {
      offset = (*range)->first;
      length = (*range)->length;
      head.status = 206;
      head.headers.set("Content-Range", fmt::format("bytes {}-{}/{}", offset, offset + length - 1, size));
    }
  }
  set_overrides(request, head.headers);
  if (!is_head && length > 0 && cold) {
    co_return co_await cache_.send_fetching(exchange, *cold->fetch, std::move(head), offset, length);
  }
  if (!is_head && length > 0 && is_slice) co_return co_await erasure_.send_ec(exchange, r.bucket, r.object, *object, std::move(head), offset, length);
  if (!is_head && length > 0) CO_RETURN_IF_ERROR(co_await replication_.verify_read(r.bucket, *object));
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
  if (is_head || length == 0) co_return Status::ok();
  CO_RETURN_IF_ERROR(co_await exchange.response().send_file(object->fd(), offset, length));
  bytes_sent_.add(length);
  co_return Status::ok();
}

http::Awaitable<Status> Target::s3_tagging(http::Exchange& exchange, const cluster::S3Request& request,
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
      co_return co_await cluster::send_xml(exchange, request, xml.finish());
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
      co_return co_await exchange.response().send(cluster::s3_head(&request), "");
    }
    default: {
      std::function<Status(wire::ObjectRecord&)> clear_tags = [](wire::ObjectRecord& record) {
        record.mutable_tags()->clear();
        return Status::ok();
      };
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord updated,
                          co_await store_.update(r.object, std::move(clear_tags), peers_.durability_of(r.bucket)));
      CO_RETURN_IF_ERROR(co_await replication_.replicate_record(r.object, r.holders, updated));
      co_return co_await exchange.response().send(cluster::s3_head(&request, 204), "");
    }
  }
}

http::Awaitable<Status> Target::s3_copy(http::Exchange& exchange, const cluster::S3Request& request,
                                        const Resolved& r) {
  const http::RequestHead& in = exchange.request();
  const bool is_part = request.route.op == s3::Op::kUploadPartCopy;
  CO_ASSIGN_OR_RETURN(const CopySource source, parse_copy_source(in.headers.get("x-amz-copy-source").value_or("")));
  const auto source_bucket = maps_.find_bucket(source.bucket);
  if (!source_bucket) {
    co_return Status::not_found("The specified bucket does not exist: {}", source.bucket).with_reason("NoSuchBucket");
  }
  CO_RETURN_IF_ERROR(s3::validate_object_name(source.key));
  const std::string metadata_directive(in.headers.get("x-amz-metadata-directive").value_or("COPY"));
  const std::string tagging_directive(in.headers.get("x-amz-tagging-directive").value_or("COPY"));
  for (const auto& d : {metadata_directive, tagging_directive}) {
    if (d != "COPY" && d != "REPLACE") {
      co_return Status::invalid_argument("Unknown metadata or tagging directive {}", d).with_reason("InvalidArgument");
    }
  }
  const bool is_self = source.bucket == request.route.bucket && source.key == request.route.key;
  if (!is_part && is_self && metadata_directive == "COPY" && tagging_directive == "COPY") {
    co_return Status::invalid_argument(
                  "This copy request is illegal because it is trying to copy an object to itself without changing "
                  "the object's metadata, storage class, website redirect location or encryption attributes.")
        .with_reason("InvalidRequest");
  }

  // The source comes from a holder that is up (its owner first) through the native API (a
  // loopback call when that is this node): one path, with sendfile on the serving side.
  const auto placement = maps_.placement();
  const auto source_holders =
      placement->holders(ObjectRef{BucketId(source_bucket->id()), source.key}, wire::holder_count(source_bucket->props()));
  const auto up = std::find_if(source_holders.begin(), source_holders.end(),
                               [](const wire::NodeInfo& n) { return n.state() != wire::NODE_STATE_DOWN; });
  const wire::NodeInfo owner = up != source_holders.end() ? *up : source_holders.front();
  CO_ASSIGN_OR_RETURN(const http::Endpoint from, http::Endpoint::parse(owner.url()));
  http::ClientRequest get;
  get.method = http::Method::kGet;
  get.target = "/v1/objects/" + text::percent_encode(source.bucket) + "/" + text::percent_encode_path(source.key);
  get.headers.set("x-amz-checksum-mode", "ENABLED");
  get.headers.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
  const auto copy_range = in.headers.get("x-amz-copy-source-range");
  if (copy_range) {
    if (!is_part) {
      co_return Status::invalid_argument("x-amz-copy-source-range is only valid for UploadPartCopy")
          .with_reason("InvalidArgument");
    }
    get.headers.set("Range", std::string(*copy_range));
  }
  CO_ASSIGN_OR_RETURN(auto call, co_await client_->start(from, std::move(get), uint64_t{0}));
  CO_ASSIGN_OR_RETURN(const http::ClientResponse source_head, co_await call->finish());
  if (source_head.status == 404) {
    co_return Status::not_found("The specified key does not exist: {}/{}", source.bucket, source.key)
        .with_reason("NoSuchKey");
  }
  if (source_head.status == 416) {
    co_return Status::out_of_range("The requested range is not satisfiable").with_reason("InvalidRange");
  }
  if (source_head.status != 200 && source_head.status != 206) {
    co_return Status::unavailable("reading copy source {}/{} from {}: HTTP {}", source.bucket, source.key, owner.id(),
                                  source_head.status);
  }
  if (copy_range && source_head.status != 206) {
    co_return Status::invalid_argument("The x-amz-copy-source-range value must be of the form bytes=first-last")
        .with_reason("InvalidArgument");
  }
  const std::string source_etag = unquote(source_head.headers.get("ETag").value_or(""));
  const int64_t source_mtime = s3::parse_http_date(source_head.headers.get("Last-Modified").value_or("")).value_or(0);
  if (s3::evaluate_copy_source(conditions_of(in.headers, "x-amz-copy-source-"), source_etag, source_mtime) !=
      s3::ConditionResult::kProceed) {
    co_return Status::failed_precondition("At least one of the pre-conditions you specified did not hold")
        .with_reason("PreconditionFailed");
  }
  const uint64_t size = source_head.content_length.value_or(0);

  store::PutOptions options;
  options.durability = peers_.durability_of(r.bucket);
  options.expected_size = size;
  if (!is_part) {
    if (size > live_config()->s3.max_object_size) {
      co_return Status::invalid_argument("The copy source is larger than the maximum allowable size")
          .with_reason("InvalidRequest");
    }
    CO_ASSIGN_OR_RETURN(const wire::ObjectRecord source_attributes,
                        attributes_from_headers(source_head.headers, kTagsHeader));
    CO_ASSIGN_OR_RETURN(const wire::ObjectRecord request_attributes,
                        attributes_from_headers(in.headers, "x-amz-tagging"));
    options.attributes = metadata_directive == "COPY" ? source_attributes : request_attributes;
    options.attributes.mutable_tags()->clear();
    const auto& tags = tagging_directive == "COPY" ? source_attributes.tags() : request_attributes.tags();
    options.attributes.mutable_tags()->insert(tags.begin(), tags.end());
    for (const auto& [name, value] : source_head.headers.fields()) {
      if (auto a = s3::checksum_from_header(name)) {
        (*options.attributes.mutable_checksums())[std::string(s3::checksum_name(*a))] = value;
      }
    }
    options.precondition = write_precondition(in.headers);
  } else if (size > kMaxPartSize) {
    co_return Status::invalid_argument("A part may hold at most 5 GiB").with_reason("EntityTooLarge");
  }
  WriteTicket ticket(*this);
  if (!is_part) guard_bucket(options, r.bucket, ticket);
  std::unique_ptr<store::ObjectWriter> writer;
  if (is_part) {
    CO_ASSIGN_OR_RETURN(const int part, part_number_of(request));
    CO_ASSIGN_OR_RETURN(writer, co_await store_.create_part(r.object, request.query.get("uploadId").value_or(""), part,
                                                            std::move(options)));
  } else {
    CO_ASSIGN_OR_RETURN(writer, co_await store_.create(r.object, std::move(options)));
  }
  CO_ASSIGN_OR_RETURN(const uint64_t copied, co_await receive(call->body(), *writer, {}));
  if (copied != size) co_return Status::unavailable("copy source {}/{} ended early", source.bucket, source.key);
  wire::ObjectRecord record;
  if (is_part) {
    CO_ASSIGN_OR_RETURN(record, co_await writer->commit());
  } else {
    // Coded objects stage their slices before replacing any (docs/adr/0014).
    CO_ASSIGN_OR_RETURN(record, co_await commit_and_publish(r, *writer));
  }
  s3::XmlWriter xml;
  xml.open(is_part ? "CopyPartResult" : "CopyObjectResult", s3::kS3Xmlns)
      .element("LastModified", s3::format_iso8601(record.mtime_unix_nanos()))
      .element("ETag", "\"" + etag_of(record) + "\"")
      .close();
  co_return co_await cluster::send_xml(exchange, request, xml.finish());
}

http::Awaitable<Status> Target::s3_multipart(http::Exchange& exchange, const cluster::S3Request& request,
                                             const Resolved& r) {
  const http::RequestHead& in = exchange.request();
  const std::string upload_id = request.query.get("uploadId").value_or("");
  switch (request.route.op) {
    case s3::Op::kCreateMultipartUpload: {
      CO_ASSIGN_OR_RETURN(wire::ObjectRecord attributes, attributes_from_headers(in.headers, "x-amz-tagging"));
      CO_ASSIGN_OR_RETURN(const store::UploadInfo upload, co_await store_.create_upload(r.object, std::move(attributes)));
      s3::XmlWriter xml;
      xml.open("InitiateMultipartUploadResult", s3::kS3Xmlns)
          .element("Bucket", request.route.bucket)
          .element("Key", request.route.key)
          .element("UploadId", upload.upload_id)
          .close();
      co_return co_await cluster::send_xml(exchange, request, xml.finish());
    }
    case s3::Op::kUploadPart: {
      puts_.add();
      CO_ASSIGN_OR_RETURN(const int part, part_number_of(request));
      store::PutOptions options;
      options.durability = peers_.durability_of(r.bucket);
      CO_ASSIGN_OR_RETURN(options.expected_md5_hex, content_md5_hex(in.headers));
      CO_ASSIGN_OR_RETURN(auto writer, co_await store_.create_part(r.object, upload_id, part, std::move(options)));
      http::ResponseHead head = cluster::s3_head(&request);
      CO_RETURN_IF_ERROR(co_await receive_object(exchange, request, *writer, kMaxPartSize, head.headers));
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await writer->commit());
      head.headers.set("ETag", "\"" + record.md5_hex() + "\"");
      co_return co_await exchange.response().send(std::move(head), "");
    }
    case s3::Op::kCompleteMultipartUpload: {
      CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxXmlBody));
      CO_ASSIGN_OR_RETURN(const auto completed, s3::parse_complete_multipart(body));
      std::vector<store::CompletePart> parts;
      for (const auto& p : completed) parts.push_back({p.part_number, unquote(p.etag)});
      store::PutOptions options;
      options.durability = peers_.durability_of(r.bucket);
      options.precondition = write_precondition(in.headers);
      WriteTicket ticket(*this);
      guard_bucket(options, r.bucket, ticket);
      CO_RETURN_IF_ERROR(check_holders_up(r));
      CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record,
                          co_await store_.complete_upload(r.object, upload_id, std::move(parts), std::move(options)));
      CO_RETURN_IF_ERROR(co_await publish(r));
      const auto host = in.headers.get("Host").value_or("localhost");
      s3::XmlWriter xml;
      xml.open("CompleteMultipartUploadResult", s3::kS3Xmlns)
          .element("Location", fmt::format("http://{}{}", host, request.resource))
          .element("Bucket", request.route.bucket)
          .element("Key", request.route.key)
          .element("ETag", "\"" + etag_of(record) + "\"")
          .close();
      co_return co_await cluster::send_xml(exchange, request, xml.finish());
    }
    case s3::Op::kAbortMultipartUpload: {
      CO_RETURN_IF_ERROR(co_await store_.abort_upload(r.object, upload_id));
      co_return co_await exchange.response().send(cluster::s3_head(&request, 204), "");
    }
    default: break;
  }
  // ListParts
  CO_ASSIGN_OR_RETURN(const store::UploadInfo upload, co_await store_.get_upload(r.object, upload_id));
  std::ignore = upload;
  CO_ASSIGN_OR_RETURN(const std::vector<store::PartInfo> parts, co_await store_.list_parts(r.object, upload_id));
  size_t max_parts = kDefaultMaxParts;
  if (auto text = request.query.get("max-parts")) {
    const auto n = parse_u64(*text);
    if (!n) co_return Status::invalid_argument("max-parts must be a non-negative integer").with_reason("InvalidArgument");
    max_parts = std::min<uint64_t>(*n, kDefaultMaxParts);
  }
  uint64_t marker = 0;
  if (auto text = request.query.get("part-number-marker"); text && !text->empty()) {
    const auto n = parse_u64(*text);
    if (!n) co_return Status::invalid_argument("part-number-marker must be an integer").with_reason("InvalidArgument");
    marker = *n;
  }
  s3::XmlWriter xml;
  xml.open("ListPartsResult", s3::kS3Xmlns)
      .element("Bucket", request.route.bucket)
      .element("Key", request.route.key)
      .element("UploadId", upload_id);
  cluster::add_owner(xml, "Initiator");
  cluster::add_owner(xml);
  xml.element("StorageClass", "STANDARD").element("PartNumberMarker", std::to_string(marker));
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
  co_return co_await cluster::send_xml(exchange, request, xml.finish());
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
  options.limit = std::clamp<size_t>(parse_u64(request.query_param("limit").value_or("1000")).value_or(1000), 1, 10000);
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
