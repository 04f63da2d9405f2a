#include "wire/bucket_json.h"

#include <nlohmann/json.hpp>

#include "wire/codec.h"
#include "wire/detail/json_fields.h"
#include "wire/json.h"

namespace silo::wire {
namespace {

using nlohmann::json;

std::string_view durability_name(Durability d) {
  switch (d) {
    case DURABILITY_FSYNC: return "fsync";
    case DURABILITY_PAGE_CACHE: return "page_cache";
    default: return "default";
  }
}

json props_to_json(const BucketProps& props) {
  json j{{"durability", durability_name(props.durability())}, {"anonymous_read", props.anonymous_read()}};
  if (!props.versioning().empty()) j["versioning"] = props.versioning();
  j["owner"] = props.owner();  // read-only: who created it ("": made before owners existed)
  j["has_policy"] = !props.policy().empty();
  j["copies"] = copies_of(props);
  j["write"] = props.write_mode() == WRITE_MODE_ASYNC ? "async" : "sync";
  j["verify_reads"] = true;  // always (skip_read_verify of older buckets is ignored)
  if (is_erasure_coded(props)) {
    j["ec"] = {{"data", props.ec().data()}, {"parity", props.ec().parity()}, {"min_size", props.ec().min_size()}};
  } else {
    j["ec"] = nullptr;
  }
  if (is_remote(props)) {
    const BackendProps& b = props.backend();
    j["backend"] = {{"url", backend_url(b)},          {"endpoint", b.endpoint()},
                    {"region", b.region()},          {"access_key", b.access_key()},
                    {"secret_key", b.secret_key().empty() ? "" : kMaskedSecret},
                    {"revalidate", b.revalidate()}};
  } else {
    j["backend"] = nullptr;
  }
  return j;
}

json bucket_to_json(const Bucket& bucket) {
  return json{{"name", bucket.name()},
              {"id", bucket.id()},
              {"created", bucket.created_unix_nanos()},
              {"props", props_to_json(bucket.props())}};
}

Status read_layout(const detail::JsonFields& props, BucketEntry& entry) {
  ASSIGN_OR_RETURN(entry.copies, props.u32("copies"));
  ASSIGN_OR_RETURN(const std::optional<detail::JsonFields> ec, props.object_or_none("ec"));
  if (ec) {
    ASSIGN_OR_RETURN(entry.ec_data, ec->u32("data"));
    ASSIGN_OR_RETURN(entry.ec_parity, ec->u32("parity"));
    ASSIGN_OR_RETURN(entry.ec_min_size, ec->u64_or("min_size", 0));
  }
  return Status::ok();
}

Status read_backend(const detail::JsonFields& props, BucketEntry& entry) {
  ASSIGN_OR_RETURN(const std::optional<detail::JsonFields> backend, props.object_or_none("backend"));
  if (!backend) return Status::ok();
  ASSIGN_OR_RETURN(entry.backend_url, backend->string("url"));
  ASSIGN_OR_RETURN(entry.backend_endpoint, backend->string_or("endpoint", ""));
  ASSIGN_OR_RETURN(entry.backend_region, backend->string_or("region", ""));
  ASSIGN_OR_RETURN(entry.backend_access_key, backend->string_or("access_key", ""));
  ASSIGN_OR_RETURN(entry.backend_secret_key, backend->string_or("secret_key", ""));
  ASSIGN_OR_RETURN(entry.backend_revalidate, backend->bool_or("revalidate", false));
  return Status::ok();
}

Result<BucketEntry> bucket_of(const detail::JsonFields& b) {
  BucketEntry entry;
  ASSIGN_OR_RETURN(entry.name, b.string("name"));
  ASSIGN_OR_RETURN(entry.id, b.u64("id"));
  ASSIGN_OR_RETURN(entry.created_unix_nanos, b.u64_or("created", 0));
  ASSIGN_OR_RETURN(const detail::JsonFields props, b.object("props"));
  ASSIGN_OR_RETURN(entry.durability, props.string("durability"));
  ASSIGN_OR_RETURN(entry.anonymous_read, props.bool_or("anonymous_read", false));
  ASSIGN_OR_RETURN(entry.versioning, props.string_or("versioning", ""));
  ASSIGN_OR_RETURN(entry.owner, props.string_or("owner", ""));
  ASSIGN_OR_RETURN(entry.has_policy, props.bool_or("has_policy", false));
  ASSIGN_OR_RETURN(entry.write, props.string("write"));
  ASSIGN_OR_RETURN(entry.verify_reads, props.bool_or("verify_reads", true));
  RETURN_IF_ERROR(read_layout(props, entry));
  RETURN_IF_ERROR(read_backend(props, entry));
  return entry;
}

}  // namespace

std::string bucket_json(const Bucket& bucket) { return bucket_to_json(bucket).dump(); }

std::string bucket_list_json(const BucketMap& map) {
  json buckets = json::array();
  for (const auto& b : map.buckets()) buckets.push_back(bucket_to_json(b));
  return json{{"version", map.version()}, {"buckets", buckets}}.dump();
}

Result<BucketEntry> parse_bucket_json(std::string_view text) {
  constexpr std::string_view kDocument = "a bucket";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  return bucket_of(detail::JsonFields(doc, kDocument));
}

Result<std::vector<BucketEntry>> parse_bucket_list_json(std::string_view text) {
  constexpr std::string_view kDocument = "the bucket list";
  ASSIGN_OR_RETURN(const json doc, detail::parse_object(text, kDocument));
  ASSIGN_OR_RETURN(const std::vector<detail::JsonFields> items,
                   detail::JsonFields(doc, kDocument).objects("buckets"));
  std::vector<BucketEntry> buckets;
  buckets.reserve(items.size());
  for (const detail::JsonFields& item : items) {
    ASSIGN_OR_RETURN(BucketEntry bucket, bucket_of(item));
    buckets.push_back(std::move(bucket));
  }
  return buckets;
}

}  // namespace silo::wire
