// The S3 surface of a node: service and bucket operations, listings merged from every
// target, DeleteObjects fanned out, and object operations routed to their owner.
#include <algorithm>
#include <charconv>

#include "async/gather.h"
#include "base/base64.h"
#include "base/log.h"
#include "base/text.h"
#include "http/relay.h"
#include "http/reply.h"
#include "proxy/detail/listing.h"
#include "proxy/proxy.h"
#include "proxy/s3_cors.h"
#include "s3/cors.h"
#include "s3/http_time.h"
#include "s3/names.h"
#include "wire/json.h"

namespace silo::proxy {
namespace {

constexpr size_t kMaxBucketBody = 64 * 1024;
constexpr size_t kMaxDeleteBody = 2 * 1024 * 1024;
constexpr size_t kMaxKeys = 1000;
constexpr size_t kListFetch = 1000;
constexpr size_t kDeleteParallelism = 64;
constexpr size_t kMaxUploadPageBytes = 64 * 1024 * 1024;

bool is_object_op(s3::Op op) {
  switch (op) {
    case s3::Op::kPutObject:
    case s3::Op::kCopyObject:
    case s3::Op::kGetObject:
    case s3::Op::kHeadObject:
    case s3::Op::kDeleteObject:
    case s3::Op::kGetObjectTagging:
    case s3::Op::kPutObjectTagging:
    case s3::Op::kDeleteObjectTagging:
    case s3::Op::kGetObjectAcl:
    case s3::Op::kCreateMultipartUpload:
    case s3::Op::kUploadPart:
    case s3::Op::kUploadPartCopy:
    case s3::Op::kCompleteMultipartUpload:
    case s3::Op::kAbortMultipartUpload:
    case s3::Op::kListParts:
    case s3::Op::kPutObjectAcl: return true;
    default: return false;
  }
}

// The S3 action an operation needs (docs/security.md). DeleteObjects is checked key by
// key; ListBuckets, CreateBucket and preflights need none ("").
std::string_view action_of(s3::Op op) {
  switch (op) {
    case s3::Op::kListObjects:
    case s3::Op::kListObjectsV2:
    case s3::Op::kHeadBucket: return "s3:ListBucket";
    case s3::Op::kListObjectVersions: return "s3:ListBucketVersions";
    case s3::Op::kListMultipartUploads: return "s3:ListBucketMultipartUploads";
    case s3::Op::kGetBucketLocation: return "s3:GetBucketLocation";
    case s3::Op::kGetBucketVersioning: return "s3:GetBucketVersioning";
    case s3::Op::kPutBucketVersioning: return "s3:PutBucketVersioning";
    case s3::Op::kGetBucketAcl: return "s3:GetBucketAcl";
    case s3::Op::kPutBucketAcl: return "s3:PutBucketAcl";
    case s3::Op::kGetBucketCors: return "s3:GetBucketCORS";
    case s3::Op::kPutBucketCors:
    case s3::Op::kDeleteBucketCors: return "s3:PutBucketCORS";
    case s3::Op::kGetBucketPolicy: return "s3:GetBucketPolicy";
    case s3::Op::kPutBucketPolicy: return "s3:PutBucketPolicy";
    case s3::Op::kDeleteBucketPolicy: return "s3:DeleteBucketPolicy";
    case s3::Op::kDeleteBucket: return "s3:DeleteBucket";
    case s3::Op::kPutObject:
    case s3::Op::kCopyObject:
    case s3::Op::kCreateMultipartUpload:
    case s3::Op::kUploadPart:
    case s3::Op::kUploadPartCopy:
    case s3::Op::kCompleteMultipartUpload: return "s3:PutObject";
    case s3::Op::kGetObject:
    case s3::Op::kHeadObject: return "s3:GetObject";
    case s3::Op::kDeleteObject: return "s3:DeleteObject";
    case s3::Op::kGetObjectTagging: return "s3:GetObjectTagging";
    case s3::Op::kPutObjectTagging: return "s3:PutObjectTagging";
    case s3::Op::kDeleteObjectTagging: return "s3:DeleteObjectTagging";
    case s3::Op::kGetObjectAcl: return "s3:GetObjectAcl";
    case s3::Op::kPutObjectAcl: return "s3:PutObjectAcl";
    case s3::Op::kAbortMultipartUpload: return "s3:AbortMultipartUpload";
    case s3::Op::kListParts: return "s3:ListMultipartUploadParts";
    default: return "";
  }
}

Status access_denied_anonymous() {
  return Status::permission_denied("Access Denied: anonymous clients may only read public buckets")
      .with_reason("AccessDenied");
}

// Bucket changes run on the primary.
bool is_bucket_change(s3::Op op) {
  return op == s3::Op::kCreateBucket || op == s3::Op::kDeleteBucket || op == s3::Op::kPutBucketVersioning ||
         op == s3::Op::kPutBucketCors || op == s3::Op::kDeleteBucketCors || op == s3::Op::kPutBucketAcl ||
         op == s3::Op::kPutBucketPolicy || op == s3::Op::kDeleteBucketPolicy;
}

Status no_such_bucket(std::string_view name) {
  return Status::not_found("The specified bucket does not exist: {}", name).with_reason("NoSuchBucket");
}

Result<size_t> max_keys_of(const s3::QueryParams& query, std::string_view param) {
  const auto text = query.get(param);
  if (!text) return kMaxKeys;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || v < 0) {
    return Status::invalid_argument("{} must be a non-negative integer", param).with_reason("InvalidArgument");
  }
  return std::min<size_t>(static_cast<size_t>(v), kMaxKeys);
}

Status bad_token() {
  return Status::invalid_argument("The continuation token provided is incorrect")
      .with_reason("InvalidArgument");
}

}  // namespace

http::Awaitable<void> Proxy::handle_s3(http::Exchange& exchange, const s3api::S3Request& request) {
  const s3::Op op = request.route.op;
  Status s;
  std::optional<wire::Bucket> bucket;
  if (!request.route.bucket.empty() && op != s3::Op::kCreateBucket) {
    bucket = co_await find_or_adopt(request.route.bucket, request.subject);
    if (!bucket) s = no_such_bucket(request.route.bucket);
  }
  // A bucket that does not exist is NoSuchBucket for anyone, as on AWS.
  if (s.is_ok()) s = check_s3_access(request, bucket, exchange.request().headers);
  // A cross-origin request that a rule allows gets its Access-Control-* headers on
  // whatever answers it.
  std::optional<detail::WithHeaders> with_cors;
  const auto origin = exchange.request().headers.get("Origin");
  if (origin && bucket && bucket->props().cors_size() > 0 && op != s3::Op::kPreflight) {
    const std::vector<s3::CorsRule> rules = cors_rules_of(bucket->props());
    if (const s3::CorsRule* rule = s3::match_cors(rules, *origin, http::method_name(exchange.request().method), "")) {
      with_cors.emplace(exchange, cors_headers(*rule, *origin, std::nullopt));
    }
  }
  http::Exchange& serving = with_cors ? static_cast<http::Exchange&>(*with_cors) : exchange;
  if (s.is_ok()) {
    if (is_object_op(op)) {
      co_await route_object(serving, request, *bucket);
      co_return;
    }
    if (is_bucket_change(op) && !is_primary()) {
      s = co_await relay_to_primary(serving);
    } else {
      s = co_await run_s3(serving, request, bucket);
    }
  }
  if (!s.is_ok()) {
    errors_.add();
    co_await s3api::send_s3_error(serving, s, request.route.bucket.empty() ? s3::Subject::kService : s3::Subject::kBucket,
                                    &request);
  }
}

Status Proxy::check_s3_access(const s3api::S3Request& request, const std::optional<wire::Bucket>& bucket,
                              const http::Headers& headers) const {
  const s3::Op op = request.route.op;
  const access::Subject& subject = request.subject;
  // Browsers send preflights without credentials; the bucket's CORS rules decide.
  if (op == s3::Op::kPreflight || subject.is_admin) return Status::ok();
  if (op == s3::Op::kListBuckets || op == s3::Op::kCreateBucket || op == s3::Op::kDeleteObjects) {
    // Any user may list (what it may see) and create (what it then owns); DeleteObjects
    // is decided key by key.
    if (!subject.access_key && (op != s3::Op::kDeleteObjects || !bucket || bucket->props().policy().empty())) {
      return access_denied_anonymous();
    }
    return Status::ok();
  }
  access::Request wanted;
  wanted.action = std::string(action_of(op));
  if (!request.route.key.empty()) wanted.key = request.route.key;
  wanted.prefix = request.query.get("prefix");
  wanted.delimiter = request.query.get("delimiter");
  RETURN_IF_ERROR(authorize(subject, *bucket, wanted));
  if (op == s3::Op::kCopyObject || op == s3::Op::kUploadPartCopy) {
    // The copy reads its source: s3:GetObject there too. A malformed or missing source is
    // the target's error to answer.
    const auto source = s3::parse_copy_source(headers.get("x-amz-copy-source").value_or(""));
    const auto from = source ? maps_.find_bucket(source->bucket) : std::nullopt;
    if (from) {
      access::Request read;
      read.action = "s3:GetObject";
      read.key = source->name;
      RETURN_IF_ERROR(authorize(subject, *from, read));
    }
  }
  return Status::ok();
}

http::Awaitable<void> Proxy::route_object(http::Exchange& exchange, const s3api::S3Request& request,
                                          const wire::Bucket& bucket) {
  object_requests_.add();
  Status s = s3::validate_object_name(request.route.key);
  const auto placement = maps_.placement();
  if (s.is_ok() && placement->empty()) s = Status::unavailable("the cluster has no targets yet");
  if (s.is_ok()) {
    const std::vector<wire::NodeInfo> order = route_for(bucket, request.route.key, exchange.request().method);
    if (order.front().id() == options_.self.id() && options_.local_s3) {
      co_await options_.local_s3(exchange, request);
      co_return;
    }
    // Streamed through, always: S3 clients do not all follow redirects (boto3 does not).
    s = co_await relay_to_targets(exchange, order);
  }
  if (!s.is_ok()) {
    errors_.add();
    co_await s3api::send_s3_error(exchange, s, s3::Subject::kObject, &request);
  }
}

http::Awaitable<Status> Proxy::run_s3(http::Exchange& exchange, const s3api::S3Request& request,
                                      const std::optional<wire::Bucket>& bucket) {
  const std::string& name = request.route.bucket;
  switch (request.route.op) {
    case s3::Op::kListBuckets: {
      const auto map = maps_.bucket_map();
      s3::XmlWriter xml;
      xml.open("ListAllMyBucketsResult", s3::kS3Xmlns);
      s3api::add_owner(xml);
      xml.open("Buckets");
      for (const auto& b : map->buckets()) {
        if (!may_see(request.subject, b)) continue;
        xml.open("Bucket").element("Name", b.name()).element("CreationDate", s3::format_iso8601(b.created_unix_nanos())).close();
      }
      xml.close().close();
      co_return co_await s3api::send_xml(exchange, request, xml.finish());
    }
    case s3::Op::kCreateBucket: co_return co_await s3_create_bucket(exchange, request);
    case s3::Op::kDeleteBucket: {
      CO_RETURN_IF_ERROR((co_await delete_if_empty(name)).status());
      co_return co_await exchange.response().send(s3api::s3_head(&request, 204), "");
    }
    case s3::Op::kHeadBucket: {
      http::ResponseHead head = s3api::s3_head(&request);
      head.headers.set("x-amz-bucket-region", live_config()->s3.region);
      co_return co_await exchange.response().send(std::move(head), "");
    }
    case s3::Op::kGetBucketLocation: {
      // us-east-1 answers an empty LocationConstraint, as AWS does.
      const std::string region = live_config()->s3.region;
      s3::XmlWriter xml;
      xml.open("LocationConstraint", s3::kS3Xmlns);
      std::string out = xml.finish();
      if (region != "us-east-1") {
        s3::XmlWriter with;
        out = with.element("LocationConstraint", region).finish();
        out.insert(out.find("<LocationConstraint") + 19, std::string(" xmlns=\"") + std::string(s3::kS3Xmlns) + "\"");
      }
      co_return co_await s3api::send_xml(exchange, request, std::move(out));
    }
    case s3::Op::kGetBucketVersioning: {
      s3::XmlWriter xml;
      xml.open("VersioningConfiguration", s3::kS3Xmlns);
      if (!bucket->props().versioning().empty()) xml.element("Status", bucket->props().versioning());
      xml.close();
      co_return co_await s3api::send_xml(exchange, request, xml.finish());
    }
    case s3::Op::kPutBucketVersioning: {
      CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxBucketBody));
      CO_ASSIGN_OR_RETURN(const std::string status, s3::parse_versioning(body));
      if (status == "Enabled") {
        co_return Status::unimplemented("Silo does not keep object versions; versioning cannot be enabled")
            .with_reason("NotImplemented");
      }
      wire::BucketProps props = bucket->props();
      props.set_versioning(status);
      CO_RETURN_IF_ERROR((co_await primary_->set_bucket_props(name, props)).status());
      co_return co_await exchange.response().send(s3api::s3_head(&request), "");
    }
    case s3::Op::kGetBucketAcl:
      co_return co_await s3api::send_xml(exchange, request, s3api::acl_xml(bucket->props().anonymous_read()));
    case s3::Op::kPutBucketAcl: {
      CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxBucketBody));
      CO_ASSIGN_OR_RETURN(const bool anonymous_read, s3api::canned_acl_read(exchange.request().headers, body));
      wire::BucketProps props = bucket->props();
      props.set_anonymous_read(anonymous_read);
      CO_RETURN_IF_ERROR((co_await primary_->set_bucket_props(name, props)).status());
      co_return co_await exchange.response().send(s3api::s3_head(&request), "");
    }
    case s3::Op::kGetBucketCors: {
      const std::vector<s3::CorsRule> rules = cors_rules_of(bucket->props());
      if (rules.empty()) {
        co_return Status::not_found("The CORS configuration does not exist").with_reason("NoSuchCORSConfiguration");
      }
      co_return co_await s3api::send_xml(exchange, request, s3::cors_xml(rules));
    }
    case s3::Op::kPutBucketCors:
    case s3::Op::kDeleteBucketCors: {
      std::vector<s3::CorsRule> rules;
      if (request.route.op == s3::Op::kPutBucketCors) {
        CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxBucketBody));
        CO_ASSIGN_OR_RETURN(rules, s3::parse_cors(body));
      }
      wire::BucketProps props = bucket->props();
      set_cors_rules(props, rules);
      CO_RETURN_IF_ERROR((co_await primary_->set_bucket_props(name, props)).status());
      const int status = request.route.op == s3::Op::kPutBucketCors ? 200 : 204;
      co_return co_await exchange.response().send(s3api::s3_head(&request, status), "");
    }
    case s3::Op::kGetBucketPolicy: {
      if (bucket->props().policy().empty()) {
        co_return Status::not_found("The bucket policy does not exist").with_reason("NoSuchBucketPolicy");
      }
      http::ResponseHead head = s3api::s3_head(&request);
      head.headers.set("Content-Type", "application/json");
      co_return co_await exchange.response().send(std::move(head), bucket->props().policy());
    }
    case s3::Op::kPutBucketPolicy:
    case s3::Op::kDeleteBucketPolicy: {
      std::string policy;
      if (request.route.op == s3::Op::kPutBucketPolicy) {
        CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxBucketBody));
        CO_ASSIGN_OR_RETURN(policy, checked_policy(name, body));
      }
      CO_RETURN_IF_ERROR(co_await set_policy(name, std::move(policy)));
      co_return co_await exchange.response().send(s3api::s3_head(&request, 204), "");
    }
    case s3::Op::kPreflight: co_return co_await s3_preflight(exchange, request, *bucket);
    case s3::Op::kListObjects:
    case s3::Op::kListObjectsV2:
    case s3::Op::kListObjectVersions: co_return co_await s3_list(exchange, request, *bucket);
    case s3::Op::kListMultipartUploads: co_return co_await s3_list_uploads(exchange, request, *bucket);
    case s3::Op::kDeleteObjects: co_return co_await s3_delete_objects(exchange, request, *bucket);
    default: break;
  }
  co_return Status::unimplemented("{} is not implemented", s3::op_name(request.route.op)).with_reason("NotImplemented");
}

http::Awaitable<Status> Proxy::s3_create_bucket(http::Exchange& exchange, const s3api::S3Request& request) {
  const std::string& name = request.route.bucket;
  CO_RETURN_IF_ERROR(s3::validate_bucket_name(name));
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxBucketBody));
  CO_ASSIGN_OR_RETURN(const std::string location, s3::parse_create_bucket(body));
  std::ignore = location;  // any region is this cluster
  wire::BucketProps props;
  const std::string acl(exchange.request().headers.get("x-amz-acl").value_or("private"));
  props.set_anonymous_read(acl == "public-read" || acl == "public-read-write");
  if (request.auth) props.set_owner(request.auth->access_key);
  auto created = co_await primary_->create_bucket(name, props);
  // In us-east-1 AWS answers 200 to a create of a bucket one owns; in other regions 409.
  // A bucket someone else owns is 409 BucketAlreadyExists everywhere.
  if (!created && created.error().code() == Code::kAlreadyExists) {
    const auto existing = maps_.find_bucket(name);
    if (existing && !request.subject.is_admin && existing->props().owner() != props.owner()) {
      co_return Status::already_exists("The requested bucket name is not available.").with_reason("BucketAlreadyExists");
    }
    if (live_config()->s3.region != "us-east-1") {
      co_return Status::already_exists("Your previous request to create the named bucket succeeded and you already own it.")
          .with_reason("BucketAlreadyOwnedByYou");
    }
  } else {
    CO_RETURN_IF_ERROR(created.status());
    SILO_LOG_INFO("bucket {} created (id {})", created->name(), created->id());
  }
  http::ResponseHead head = s3api::s3_head(&request);
  head.headers.set("Location", "/" + name);
  co_return co_await exchange.response().send(std::move(head), "");
}

http::Awaitable<Status> Proxy::s3_list(http::Exchange& exchange, const s3api::S3Request& request,
                                       const wire::Bucket& bucket) {
  list_requests_.add();
  const s3::Op op = request.route.op;
  const s3::QueryParams& q = request.query;
  const std::string prefix = q.get("prefix").value_or("");
  const std::string delimiter = q.get("delimiter").value_or("");
  CO_ASSIGN_OR_RETURN(const size_t max_keys, max_keys_of(q, "max-keys"));
  const std::string encoding = q.get("encoding-type").value_or("");
  if (!encoding.empty() && encoding != "url") {
    co_return Status::invalid_argument("Invalid Encoding Method specified in Request").with_reason("InvalidArgument");
  }
  const bool is_url = encoding == "url";
  auto out = [is_url](const std::string& text) { return is_url ? text::percent_encode_path(text) : text; };

  detail::S3PageFolder folder(prefix, delimiter, max_keys);
  // Where the page starts (exclusive).
  std::string cursor;
  const auto token = q.get("continuation-token");
  if (op == s3::Op::kListObjectsV2) {
    if (token && !token->empty()) {  // an empty token starts at the start, as on AWS
      auto name = detail::name_of_token(*token);
      if (!name) co_return bad_token();
      cursor = std::move(*name);
    } else {
      cursor = q.get("start-after").value_or("");
    }
  } else if (op == s3::Op::kListObjects) {
    cursor = q.get("marker").value_or("");
  } else {
    cursor = q.get("key-marker").value_or("");
  }
  cursor = folder.start_after(std::move(cursor));

  // max-keys=0 lists nothing and is not truncated (AWS).
  for (bool is_full = max_keys == 0; !is_full;) {
    // One more than the keys still wanted: that one tells whether the listing is truncated.
    const size_t want = std::max<size_t>(kListFetch, max_keys - folder.count() + 1);
    CO_ASSIGN_OR_RETURN(auto page, co_await merged_page(bucket, prefix, cursor, want, wire::is_remote(bucket.props())));
    for (auto& entry : page.first) {
      cursor = entry.name();
      if (!folder.add(entry)) {
        is_full = true;
        break;
      }
    }
    if (!page.second) break;
    cursor = folder.fetch_after(cursor);
  }
  const bool is_truncated = max_keys > 0 && folder.is_truncated();

  s3::XmlWriter xml;
  const bool is_versions = op == s3::Op::kListObjectVersions;
  xml.open(is_versions ? "ListVersionsResult" : "ListBucketResult", s3::kS3Xmlns);
  xml.element("Name", bucket.name()).element("Prefix", out(prefix));
  if (op == s3::Op::kListObjects) {
    xml.element("Marker", out(q.get("marker").value_or("")));
    if (is_truncated) xml.element("NextMarker", out(folder.last_item()));
  } else if (is_versions) {
    xml.element("KeyMarker", out(q.get("key-marker").value_or("")))
        .element("VersionIdMarker", q.get("version-id-marker").value_or(""));
    if (is_truncated)
      xml.element("NextKeyMarker", out(folder.last_item())).element("NextVersionIdMarker", "null");
  } else {
    if (token) xml.element("ContinuationToken", *token);
    if (is_truncated) xml.element("NextContinuationToken", detail::token_of(folder.resume_from()));
    if (auto start_after = q.get("start-after")) xml.element("StartAfter", out(*start_after));
    xml.element("KeyCount", std::to_string(folder.count()));
  }
  if (!delimiter.empty()) xml.element("Delimiter", out(delimiter));
  xml.element("MaxKeys", std::to_string(max_keys));
  if (is_url) xml.element("EncodingType", "url");
  xml.element("IsTruncated", is_truncated ? "true" : "false");
  const bool with_owner = op != s3::Op::kListObjectsV2 || q.get("fetch-owner") == std::optional<std::string>("true");
  for (const auto& e : folder.contents()) {
    xml.open(is_versions ? "Version" : "Contents").element("Key", out(e.name()));
    if (is_versions) xml.element("VersionId", "null").element("IsLatest", "true");
    xml.element("LastModified", s3::format_iso8601(e.mtime_unix_nanos()))
        .element("ETag", "\"" + e.md5_hex() + "\"")
        .element("Size", std::to_string(e.size()));
    if (with_owner) s3api::add_owner(xml);
    xml.element("StorageClass", "STANDARD").close();
  }
  for (const auto& p : folder.prefixes())
    xml.open("CommonPrefixes").element("Prefix", out(p)).close();
  xml.close();
  co_return co_await s3api::send_xml(exchange, request, xml.finish());
}

http::Awaitable<Status> Proxy::s3_list_uploads(http::Exchange& exchange, const s3api::S3Request& request,
                                               const wire::Bucket& bucket) {
  const s3::QueryParams& q = request.query;
  const std::string prefix = q.get("prefix").value_or("");
  const std::string delimiter = q.get("delimiter").value_or("");
  const std::string key_marker = q.get("key-marker").value_or("");
  const std::string upload_id_marker = q.get("upload-id-marker").value_or("");
  CO_ASSIGN_OR_RETURN(const size_t max_uploads, max_keys_of(q, "max-uploads"));
  const std::string encoding = q.get("encoding-type").value_or("");
  const bool is_url = encoding == "url";
  auto out = [is_url](const std::string& text) { return is_url ? text::percent_encode_path(text) : text; };

  const auto placement = maps_.placement();
  const std::string target = fmt::format(
      "/v1/internal/uploads/{}?prefix={}&key_marker={}&upload_id_marker={}&limit={}",
      text::percent_encode(bucket.name()), text::percent_encode(prefix),
      text::percent_encode(key_marker), text::percent_encode(upload_id_marker), max_uploads + 1);
  std::vector<std::function<http::Awaitable<Result<wire::UploadPage>>()>> calls;
  for (const auto& node : placement->targets()) {
    calls.push_back([this, node, &target]() -> http::Awaitable<Result<wire::UploadPage>> {
      if (node.state() == wire::NODE_STATE_DOWN) {
        co_return Status::unavailable("target {} is down: the listing would be incomplete", node.id());
      }
      CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
      http::ClientRequest call;
      call.target = target;
      CO_ASSIGN_OR_RETURN(auto response, co_await client_->call(to, std::move(call), "", kMaxUploadPageBytes));
      if (response.status != 200) {
        co_return Status::unavailable("target {} answered the upload listing with {}", node.id(), response.status);
      }
      co_return wire::decode<wire::UploadPage>(response.body, wire::Source::kNetwork);
    });
  }
  auto pages = co_await async::gather<Result<wire::UploadPage>>(std::move(calls));
  std::vector<wire::UploadEntry> uploads;
  bool is_truncated = false;
  for (auto& page : pages) {
    if (!page) co_return std::move(page).error();
    is_truncated |= page->is_truncated();
    for (auto& u : *page->mutable_uploads()) uploads.push_back(std::move(u));
  }
  std::sort(uploads.begin(), uploads.end(), [](const auto& a, const auto& b) {
    return std::tie(a.name(), a.upload_id()) < std::tie(b.name(), b.upload_id());
  });
  std::vector<const wire::UploadEntry*> listed;
  std::vector<std::string> prefixes;
  std::string next_key;
  std::string next_upload_id;
  size_t count = 0;
  for (const auto& u : uploads) {
    std::string common;
    if (!delimiter.empty()) {
      const size_t at = u.name().find(delimiter, prefix.size());
      if (at != std::string::npos) common = u.name().substr(0, at + delimiter.size());
    }
    if (!common.empty() && !prefixes.empty() && prefixes.back() == common) continue;
    if (count == max_uploads) {
      is_truncated = true;
      break;
    }
    ++count;
    if (common.empty()) {
      listed.push_back(&u);
      next_key = u.name();
      next_upload_id = u.upload_id();
    } else {
      prefixes.push_back(common);
      next_key = common;
      next_upload_id.clear();
    }
  }
  s3::XmlWriter xml;
  xml.open("ListMultipartUploadsResult", s3::kS3Xmlns)
      .element("Bucket", bucket.name())
      .element("KeyMarker", out(key_marker))
      .element("UploadIdMarker", upload_id_marker)
      .element("NextKeyMarker", out(is_truncated ? next_key : ""))
      .element("NextUploadIdMarker", is_truncated ? next_upload_id : "")
      .element("Prefix", out(prefix));
  if (!delimiter.empty()) xml.element("Delimiter", out(delimiter));
  xml.element("MaxUploads", std::to_string(max_uploads)).element("IsTruncated", is_truncated ? "true" : "false");
  if (is_url) xml.element("EncodingType", "url");
  for (const wire::UploadEntry* u : listed) {
    xml.open("Upload").element("Key", out(u->name())).element("UploadId", u->upload_id());
    s3api::add_owner(xml, "Initiator");
    s3api::add_owner(xml);
    xml.element("StorageClass", "STANDARD").element("Initiated", s3::format_iso8601(u->initiated_unix_nanos())).close();
  }
  for (const auto& p : prefixes) xml.open("CommonPrefixes").element("Prefix", out(p)).close();
  xml.close();
  co_return co_await s3api::send_xml(exchange, request, xml.finish());
}

http::Awaitable<Status> Proxy::s3_delete_objects(http::Exchange& exchange, const s3api::S3Request& request,
                                                 const wire::Bucket& bucket) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxDeleteBody));
  if (auto md5 = exchange.request().headers.get("Content-MD5")) {
    s3::Md5 computed;
    computed.update(body);
    if (base64::encode({reinterpret_cast<const unsigned char*>(computed.raw().data()), 16}) != *md5) {
      co_return Status::invalid_argument("The Content-MD5 you specified did not match what we received.")
          .with_reason("BadDigest");
    }
  }
  CO_ASSIGN_OR_RETURN(const s3::DeleteRequest parsed, s3::parse_delete(body));
  const auto placement = maps_.placement();
  if (placement->empty()) co_return Status::unavailable("the cluster has no targets yet");
  struct Outcome {
    std::string code;  // empty: deleted
    std::string message;
  };
  std::vector<Outcome> outcomes(parsed.objects.size());
  for (size_t begin = 0; begin < parsed.objects.size(); begin += kDeleteParallelism) {
    const size_t end = std::min(parsed.objects.size(), begin + kDeleteParallelism);
    std::vector<std::function<http::Awaitable<Outcome>()>> calls;
    for (size_t i = begin; i < end; ++i) {
      calls.push_back([this, &bucket, &placement, &request, key = parsed.objects[i].first]() -> http::Awaitable<Outcome> {
        if (const Status valid = s3::validate_object_name(key); !valid.is_ok()) {
          co_return Outcome{"InvalidArgument", valid.message()};
        }
        access::Request wanted;
        wanted.action = "s3:DeleteObject";
        wanted.key = key;
        if (const Status allowed = authorize(request.subject, bucket, wanted); !allowed.is_ok()) {
          co_return Outcome{"AccessDenied", allowed.message()};
        }
        const wire::NodeInfo& owner = placement->owner(ObjectRef{BucketId(bucket.id()), key});
        auto to = http::Endpoint::parse(owner.url());
        if (!to) co_return Outcome{"InternalError", to.error().message()};
        http::ClientRequest call;
        call.method = http::Method::kDelete;
        call.target = "/v1/objects/" + text::percent_encode(bucket.name()) + "/" + text::percent_encode_path(key);
        call.headers.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
        auto response = co_await client_->call(*to, std::move(call), "", 64 * 1024);
        if (!response) co_return Outcome{"ServiceUnavailable", response.error().message()};
        if (response->status == 204 || response->status == 200 || response->status == 404) co_return Outcome{};
        co_return Outcome{response->status == 503 ? "ServiceUnavailable" : "InternalError",
                          fmt::format("HTTP {} from target {}", response->status, owner.id())};
      });
    }
    auto done = co_await async::gather<Outcome>(std::move(calls));
    for (size_t i = begin; i < end; ++i) outcomes[i] = std::move(done[i - begin]);
  }
  s3::XmlWriter xml;
  xml.open("DeleteResult", s3::kS3Xmlns);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const auto& [key, version] = parsed.objects[i];
    if (outcomes[i].code.empty()) {
      if (parsed.quiet) continue;
      xml.open("Deleted").element("Key", key);
      if (!version.empty()) xml.element("VersionId", version);
      xml.close();
    } else {
      xml.open("Error").element("Key", key).element("Code", outcomes[i].code).element("Message", outcomes[i].message).close();
    }
  }
  xml.close();
  co_return co_await s3api::send_xml(exchange, request, xml.finish());
}

}  // namespace silo::proxy
