#pragma once

// The bucket documents of the native API (GET /v1/buckets, GET /v1/buckets/{b}/props):
// one codec, the encoder for the proxy, the decoder for the client. The properties
// body a client sends is read by apply_bucket_props_json (wire/json.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

class Bucket;     // bucket_map.proto
class BucketMap;  // bucket_map.proto

// One bucket with every property, as a client reads it.
struct BucketEntry {
  std::string name;
  uint64_t id = 0;
  uint64_t created_unix_nanos = 0;
  std::string durability;  // "fsync" | "page_cache" | "default"
  bool anonymous_read = false;
  std::string versioning;  // "" when never set
  std::string owner;       // the access key that created it (read-only)
  bool has_policy = false;  // a bucket policy is set (GET /v1/buckets/{b}/policy reads it)
  uint32_t copies = 1;     // full copies of each object
  std::string write;       // "sync" | "async"
  bool verify_reads = true;
  uint32_t ec_data = 0;      // erasure coding: data slices (0: not erasure coded)
  uint32_t ec_parity = 0;    // parity slices
  uint64_t ec_min_size = 0;  // objects under this many bytes get ec_parity + 1 full copies
  // A remote bucket (docs/remote-buckets.md): the backend it caches; empty url otherwise.
  std::string backend_url;  // "s3://bucket" | "gs://bucket"
  std::string backend_endpoint;
  std::string backend_region;
  std::string backend_access_key;
  std::string backend_secret_key;  // kMaskedSecret when one is set: never the secret itself
  bool backend_revalidate = false;
  bool is_remote() const { return !backend_url.empty(); }
  bool operator==(const BucketEntry&) const = default;
};

// {"name", "id", "created", "props": {"durability", "anonymous_read", "versioning"?,
//  "copies", "write", "verify_reads", "ec": {"data", "parity", "min_size"} | null,
//  "backend": {"url", "endpoint", "region", "access_key", "secret_key", "revalidate"} |
//  null}}; a backend's secret is shown masked.
std::string bucket_json(const Bucket& bucket);
// {"version", "buckets": [bucket_json...]}
std::string bucket_list_json(const BucketMap& map);
Result<BucketEntry> parse_bucket_json(std::string_view text);
Result<std::vector<BucketEntry>> parse_bucket_list_json(std::string_view text);

}  // namespace silo::wire
