#pragma once

// The request document of batch GET (POST /v1/batch, docs/shards.md "Batch GET"): one
// codec, the decoder for the serving node, the encoder for the client and the CLI.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace silo::wire {

// The most entries one batch request may name (AIStore's GetBatch takes as many).
inline constexpr size_t kMaxBatchEntries = 100'000;

// One entry: a whole object, a byte range of it (start, length), one member of an archive
// (archpath), a range within that member, or the members a pattern selects (archpath with
// archmode: wdskey, regexp, prefix, suffix, substr).
struct BatchEntry {
  std::string bucket = {};
  std::string name = {};
  std::optional<std::string> archpath = {};
  std::optional<std::string> archmode = {};
  std::optional<uint64_t> start = {};   // of the range, within the object or the member
  std::optional<uint64_t> length = {};  // of the range; absent: to the end
  // The request's plain_names, copied into each entry by the decoder.
  bool plain_name = false;
  bool operator==(const BatchEntry&) const = default;

  // Its member's name in the answer, "BUCKET/NAME" or "BUCKET/NAME/ARCHPATH" (after
  // "__404__/" when it is missing). A selection's members are named "BUCKET/NAME/" + their
  // name in the archive instead. With plain_name: "NAME", "ARCHPATH", and a selection's
  // members their names in the archive (a reshard writes samples as they were).
  std::string tar_name() const;
  // What the owner puts before each name of a selection's members: "BUCKET/NAME/", or
  // nothing with plain_name.
  std::string selection_prefix() const;
};

struct BatchRequest {
  std::vector<BatchEntry> entries = {};
  // A missing entry (no bucket, object or member) becomes an empty member named
  // "__404__/" + its name, and the stream goes on; else the batch fails.
  bool continue_on_error = false;
  // Members named without the bucket (BatchEntry::plain_name).
  bool plain_names = false;
  bool operator==(const BatchRequest&) const = default;
};

// {"entries": [{"bucket", "name", "archpath"?, "archmode"?, "start"?, "length"?}],
//  "continue_on_error": bool, "plain_names": bool}
std::string batch_request_json(const BatchRequest& request);
// kInvalidArgument naming the entry and what is wrong: no entries, more than
// kMaxBatchEntries, an empty bucket or name, archmode without archpath, start or length
// with archmode (a selection is read whole), a length of 0.
Result<BatchRequest> parse_batch_request_json(std::string_view text);

}  // namespace silo::wire
