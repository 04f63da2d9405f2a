#pragma once

// How one target sends another a copy of an object or a slice (replication, erasure,
// rebalance and scrub all use it): `[4-byte big-endian record length][ObjectRecord]
// [bytes]` to or from /v1/internal/objects/{bucket id}/{name}, and the rules by which
// every target decides alike which version or form of an object it keeps.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/object_ref.h"
#include "base/result.h"
#include "http/message.h"
#include "s3/checksum.h"
#include "store/store.h"
#include "wire/codec.h"

namespace silo::replication {

// "/v1/internal/objects/{bucket id}/{escaped name}".
std::string internal_object_target(const ObjectRef& object);
// The length and record that precede the bytes.
std::string copy_prefix(const wire::ObjectRecord& record);
// Reads exactly out.size() bytes; kInvalidArgument when the body ends first.
http::Awaitable<Status> read_exact(http::BodyReader& body, std::span<char> out);
http::Awaitable<Result<wire::ObjectRecord>> read_copy_record(http::BodyReader& body);
// Streams `body` into `writer`, feeding `checksums`; returns the bytes received. Shared
// by client PUTs and received copies. The buffer starts at 64 KiB (the body's
// `expected_size` when smaller) and grows to 1 MiB (few disk-executor hops) only while
// the body arrives fast and the node's receive buffers stay under their budget: a writer
// whose bytes trickle in holds 64 KiB (issue #23 F6).
http::Awaitable<Result<uint64_t>> receive_into(http::BodyReader& body, store::ObjectWriter& writer,
                                               std::optional<uint64_t> expected_size,
                                               std::vector<s3::Checksum*> checksums = {});
// Bytes held by the receive buffers of the bodies this process reads now.
uint64_t receive_buffer_bytes();

// The XXH3 that names a version with its mtime: the object's (a slice's record carries
// the whole object's in ec.object_xxh3).
uint64_t version_xxh3(const wire::ObjectRecord& record);
// Which of two versions of one object a copy keeps: the newer; equal times with other
// bytes (two PUTs in the same nanosecond on two targets) go to the larger XXH3, so every
// target decides alike. Two slices of one version: neither wins.
bool incoming_wins(const wire::ObjectRecord* current, const wire::ObjectRecord& incoming);
bool same_version(const wire::ObjectRecord& a, const wire::ObjectRecord& b);

// What a receiver did with a copy or slice: kept it (else it kept its own: the same
// version in the form the layout wants, another slice of it, or a newer version), and
// whether what it replaced was the same version in another form. The answer to the PUT
// is {"kept": "incoming"|"existing"[, "replaced": "same_version"]}.
struct Placed {
  bool is_kept = false;
  bool replaced_same_version = false;
};
std::string placed_json(const Placed& placed);
Placed placed_of(std::string_view body);
// Whether `record` has the form the bucket's layout gives its object: a full copy
// (copies, or an erasure-coded bucket's objects under min_size) or a slice of the
// bucket's k + m.
bool fits_layout(const wire::ObjectRecord& record, const wire::BucketProps& props);
// Whether a receiver keeps `incoming` over `current`: a newer version, or the same
// version in the form the layout wants (re-encoding replaces copies by slices and back).
bool replaces(const wire::ObjectRecord* current, const wire::ObjectRecord& incoming,
              const wire::BucketProps& props);

}  // namespace silo::replication
