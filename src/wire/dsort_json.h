#pragma once

// The specification of a resharding job (POST /v1/jobs {"kind": "dsort", ...},
// docs/resharding.md): one codec, the decoder for the primary and the targets, the
// encoder for the CLI.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

// How the output orders the samples.
enum class DsortOrder {
  kRandom,   // a uniform shuffle: by XXH64(seed, sample key)
  kKey,      // sample keys in byte order
  kContent,  // the value of one member of each sample (content_member), as content_type
  kList,     // an object of the cluster maps keys to output shards (list_bucket/list_name)
};
enum class DsortContentType { kInt, kFloat, kString };

struct DsortSpec {
  // input: a bucket and a prefix or a brace template; shards (tar, tgz, tar.gz, tar.lz4,
  // zip), or loose objects grouped into samples by WebDataset key (dir/KEY.ext).
  std::string input_bucket;
  std::string input_prefix;
  std::string input_template;
  bool input_loose = false;
  // output: a bucket, a brace template that names the shards in order, their size (of
  // the tar stream, before any compression), the format: tar, or tgz when the names end
  // in .tgz or .tar.gz.
  std::string output_bucket;
  std::string output_template;
  uint64_t shard_size = 0;
  bool output_gzip = false;
  DsortOrder order = DsortOrder::kRandom;
  uint64_t seed = 0;
  std::string content_member;  // kContent: the member's extension ("cls")
  DsortContentType content_type = DsortContentType::kInt;
  // kList: the object "BUCKET/NAME" (order.object), JSON {"shard name": ["key", ...], ...}
  std::string list_bucket;
  std::string list_name;
  std::string list_object() const { return list_bucket + "/" + list_name; }
  bool dry_run = false;
  bool fails_on_duplicate = false;  // on_duplicate: "keep" (false) or "fail"
  uint64_t memory_limit = 0;        // bytes of sample records per target before spilling; 0: the default
  bool operator==(const DsortSpec&) const = default;
};

// {"kind": "dsort",
//  "input": {"bucket", "prefix" | "template", "format": "shards" | "loose"},
//  "output": {"bucket", "template", "shard_size": bytes, "format": "tar" | "tgz"
//             (default: tgz when the template ends in .tgz or .tar.gz)},
//  "order": {"by": "random", "seed": N} | {"by": "key"} |
//           {"by": "content", "member": "cls", "type": "int" | "float" | "string"} |
//           {"by": "list", "object": "BUCKET/NAME"},
//  "dry_run": bool, "on_duplicate": "keep" | "fail", "memory_limit": bytes}
// kInvalidArgument naming the field and what it must be.
Result<DsortSpec> parse_dsort_spec_json(std::string_view text);
// Whether output shards named by `output_template` are tgz (it ends in .tgz or .tar.gz).
bool names_gzip_shards(std::string_view output_template);
std::string dsort_spec_json(const DsortSpec& spec);
std::string_view dsort_order_name(DsortOrder order);

// The object an order by list names (AIStore's external key map): {"SHARD NAME": ["KEY",
// ...], ...}, the shards in the document's order, each sample's place in its shard the
// key's place in its list. kInvalidArgument naming the problem: not that shape, an empty
// or repeated shard name, a key listed twice.
struct DsortListShard {
  std::string name;
  std::vector<std::string> keys;
  bool operator==(const DsortListShard&) const = default;
};
Result<std::vector<DsortListShard>> parse_dsort_list_json(std::string_view text);

}  // namespace silo::wire
