#pragma once

// JSON of the native API (/v1/...): the request bodies the servers read, the bucket
// properties rules, error bodies and the documents' codecs (each in its family's header,
// included here). nlohmann_json stays inside wire/'s .cc files.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "wire/bucket_json.h"
#include "wire/codec.h"
#include "wire/job_json.h"
#include "wire/mountpath_json.h"
#include "wire/node_map_json.h"
#include "wire/object_json.h"
#include "wire/settings_json.h"

namespace silo::wire {

// POST /v1/jobs: {"kind": "scrub", "bucket": "NAME" (optional: all buckets),
// "rate_mb_s": N (optional: no bound)} or {"kind": "prefetch", "bucket": "NAME" (a remote
// bucket), one of "prefix": "p" | "template": "x-{0000..0999}.tar" | "names": [...] (none:
// the whole bucket), "workers": N (optional: cluster.cache.prefetch_workers)} or
// {"kind": "rebalance"} (nothing else).
// Which objects of a bucket a prefetch or an evict is about: one of a prefix, a brace
// template (wire::NameTemplate) or a list of names; none: the whole bucket.
struct ObjectSelection {
  std::string prefix;
  std::string name_template;
  std::vector<std::string> names;
  bool is_whole_bucket() const { return prefix.empty() && name_template.empty() && names.empty(); }
  bool lists_names() const { return !names.empty() || !name_template.empty(); }
};
// The names a selection lists: its names, or its template's expansion.
Result<std::vector<std::string>> selected_names(const ObjectSelection& selection);
struct JobRequest {
  std::string kind;
  std::string bucket;
  uint64_t rate_bytes = 0;  // per second; 0: no bound
  ObjectSelection selection;  // prefetch
  uint32_t workers = 0;
};
Result<JobRequest> parse_job_request_json(std::string_view text);
// POST /v1/buckets/{bucket}/evict: {"prefix" | "template" | "names" (none: every cached
// object), "keep_props": bool (whole bucket only; false also forgets the bucket; default
// true)}.
struct EvictRequest {
  ObjectSelection selection;
  bool keep_props = true;
};
Result<EvictRequest> parse_evict_request_json(std::string_view text);
std::string evict_request_json(const EvictRequest& request);
// The answer to an evict: {"evicted": N} from a target, {"evicted": N, "bucket_kept":
// bool} from the proxy. The decoder reads N, all that any reader needs.
std::string evicted_json(uint64_t evicted, std::optional<bool> bucket_kept = std::nullopt);
Result<uint64_t> parse_evicted_json(std::string_view text);
// The most copies a bucket may ask for.
inline constexpr uint32_t kMaxCopies = 16;
// A bucket's copies per object (the `copies` property; 0 means 1).
inline uint32_t copies_of(const BucketProps& props) { return props.copies() == 0 ? 1 : props.copies(); }
inline bool is_erasure_coded(const BucketProps& props) { return props.ec().data() > 0; }
// How many of the object's HRW ranking hold something of it: the copies, or for an
// erasure-coded bucket data + parity (slices; small objects use the first parity + 1).
inline uint32_t holder_count(const BucketProps& props) {
  return is_erasure_coded(props) ? props.ec().data() + props.ec().parity() : copies_of(props);
}
// How many full copies an object keeps: `copies`, or for an erasure-coded bucket parity + 1
// (its objects under min_size; larger ones are slices).
inline uint32_t full_copy_count(const BucketProps& props) {
  return is_erasure_coded(props) ? props.ec().parity() + 1 : copies_of(props);
}
// Whether two property sets lay objects out alike (a change of layout is a rebalance).
inline bool same_layout(const BucketProps& a, const BucketProps& b) {
  return copies_of(a) == copies_of(b) && a.ec().data() == b.ec().data() && a.ec().parity() == b.ec().parity() &&
         a.ec().min_size() == b.ec().min_size();
}
// A remote bucket: a cache in front of the backend bucket its props name.
inline bool is_remote(const BucketProps& props) { return !props.backend().bucket().empty(); }
// "s3://bucket" or "gs://bucket" -> provider and bucket; kInvalidArgument naming the URL.
Result<BackendProps> parse_backend_url(std::string_view url);
std::string backend_url(const BackendProps& backend);
// What bucket JSON shows in place of a backend secret.
inline constexpr std::string_view kMaskedSecret = "********";
// The most slices (data + parity) of an erasure-coded object.
inline constexpr uint32_t kMaxEcSlices = 32;

// Applies a JSON properties body onto `props`: {"durability": "fsync"|"page_cache"|"default",
// "anonymous_read": bool, "copies": 1..kMaxCopies, "write": "sync"|"async",
// "verify_reads": bool, "ec": {"data": k, "parity": m, "min_size": bytes} | null,
// "backend": {"url": "s3://b", "endpoint", "region", "access_key", "secret_key",
// "revalidate": bool} | null (the keys named change, the others stay)}. Unknown
// keys and bad values are kInvalidArgument naming the key.
Result<BucketProps> apply_bucket_props_json(std::string_view json, BucketProps props);
// {"<key>": "non-empty string"} -> the string; kInvalidArgument with `hint` (what the body
// needs) when it is not there.
Result<std::string> parse_string_field_json(std::string_view json, const char* key, std::string_view hint);
// {"url": "http://host:port"} -> the URL. kInvalidArgument naming what is wrong.
Result<std::string> parse_url_json(std::string_view json);
// `text` as a JSON string literal, quoted and escaped.
std::string json_string(std::string_view text);
// {"error": {"code", "message", "reason"}}: reason (S3's name of the error, such as
// NoSuchKey or NoSuchArchiveMember) only when the status has one.
std::string error_json(const Status& status);
// What an error body says. `code` is nullopt when its name is not one this build knows.
struct ErrorAnswer {
  std::optional<Code> code;
  std::string message;
  std::string reason;  // "" when the answer names none
  bool operator==(const ErrorAnswer&) const = default;
};
Result<ErrorAnswer> parse_error_json(std::string_view text);
// {"users": [{"access_key", "admin", "from"}]}: never the secrets.
std::string users_json(const BucketMap& map, std::string_view admin_access_key);
// {"secret_key": "...", "admin": false} -> a User named `access_key`.
Result<User> parse_user_json(std::string_view json, std::string access_key);


// Any JSON document, for tools that show parts of one (`silo config`):
// The value at `dotted_path` ("cluster.cache.high_wm") of `json_text` as compact JSON
// (members in key order; only '"', '\\' and control characters escaped), or "" when
// there is none or it is null. kInvalidArgument when the text is not JSON.
Result<std::string> json_value_at(std::string_view json_text, std::string_view dotted_path);
// Whether `text` is exactly one JSON value ("85", "true", "\"x\"", "[1]"; not "redirect").
bool is_json(std::string_view text);

}  // namespace silo::wire
