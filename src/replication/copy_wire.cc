// The copy wire (copy_wire.h): how a copy travels between targets and which version or
// form of an object a receiver keeps.
#include "replication/copy_wire.h"

#include "base/text.h"
#include "wire/codec.h"
#include "wire/json.h"

namespace silo::replication {
namespace {

constexpr uint32_t kMaxRecordBytes = 16 * 1024 * 1024;
constexpr std::string_view kInternalObjects = "/v1/internal/objects/";
// Large enough that a PUT costs few disk-executor hops, small enough that a few hundred
// concurrent PUTs stay well within the memory budget of a node.
constexpr size_t kReceiveBufferBytes = 1024 * 1024;

}  // namespace

std::string internal_object_target(const ObjectRef& object) {
  return fmt::format("{}{}/{}", kInternalObjects, object.bucket_id.value(), text::percent_encode_path(object.name));
}

// [4-byte big-endian record length][record]: what precedes an object's bytes in a copy.
std::string copy_prefix(const wire::ObjectRecord& record) {
  const std::string encoded = wire::encode(record);
  std::string prefix(4, '\0');
  const auto n = static_cast<uint32_t>(encoded.size());
  for (int i = 0; i < 4; ++i) prefix[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return prefix + encoded;
}

http::Awaitable<Status> read_exact(http::BodyReader& body, std::span<char> out) {
  size_t filled = 0;
  while (filled < out.size()) {
    CO_ASSIGN_OR_RETURN(const size_t n, co_await body.read(out.subspan(filled)));
    if (n == 0) co_return Status::invalid_argument("copy ended after {} of {} header bytes", filled, out.size());
    filled += n;
  }
  co_return Status::ok();
}

http::Awaitable<Result<wire::ObjectRecord>> read_copy_record(http::BodyReader& body) {
  char length_bytes[4];
  CO_RETURN_IF_ERROR(co_await read_exact(body, {length_bytes, 4}));
  uint32_t length = 0;
  for (char c : length_bytes) length = (length << 8) | static_cast<unsigned char>(c);
  if (length > kMaxRecordBytes) co_return Status::invalid_argument("copy record of {} bytes is too large", length);
  std::string encoded(length, '\0');
  CO_RETURN_IF_ERROR(co_await read_exact(body, {encoded.data(), encoded.size()}));
  co_return wire::decode<wire::ObjectRecord>(encoded, wire::Source::kNetwork);
}

// Which of two versions of one object a copy keeps: the newer; equal times with other
// bytes (two PUTs in the same nanosecond on two targets) go to the larger XXH3, so every
// target decides alike.
uint64_t version_xxh3(const wire::ObjectRecord& record) {
  return record.has_ec() ? record.ec().object_xxh3() : record.xxh3();
}

bool incoming_wins(const wire::ObjectRecord* current, const wire::ObjectRecord& incoming) {
  if (current == nullptr) return true;
  if (current->mtime_unix_nanos() != incoming.mtime_unix_nanos()) {
    return incoming.mtime_unix_nanos() > current->mtime_unix_nanos();
  }
  return version_xxh3(incoming) > version_xxh3(*current);
}

bool same_version(const wire::ObjectRecord& a, const wire::ObjectRecord& b) {
  return a.mtime_unix_nanos() == b.mtime_unix_nanos() && version_xxh3(a) == version_xxh3(b);
}

std::string placed_json(const Placed& placed) {
  if (!placed.is_kept) return R"({"kept":"existing"})";
  return placed.replaced_same_version ? R"({"kept":"incoming","replaced":"same_version"})" : R"({"kept":"incoming"})";
}

Placed placed_of(std::string_view body) {
  Placed placed;
  placed.is_kept = body.find(R"("kept":"incoming")") != std::string_view::npos;
  placed.replaced_same_version = body.find(R"("replaced":"same_version")") != std::string_view::npos;
  return placed;
}

bool fits_layout(const wire::ObjectRecord& record, const wire::BucketProps& props) {
  if (!wire::is_erasure_coded(props)) return !record.has_ec();
  const wire::EcPolicy& policy = props.ec();
  if (!record.has_ec()) return record.size() == 0 || record.size() < policy.min_size();
  return record.ec().data() == policy.data() && record.ec().parity() == policy.parity() &&
         (record.ec().object_size() >= policy.min_size());
}

bool replaces(const wire::ObjectRecord* current, const wire::ObjectRecord& incoming, const wire::BucketProps& props) {
  if (incoming_wins(current, incoming)) return true;
  return same_version(*current, incoming) && fits_layout(incoming, props) && !fits_layout(*current, props);
}

http::Awaitable<Result<uint64_t>> receive_into(http::BodyReader& body, store::ObjectWriter& writer,
                                               std::vector<s3::Checksum*> checksums) {
  std::vector<char> buffer(kReceiveBufferBytes);
  uint64_t total = 0;
  for (;;) {
    // Fill the buffer before each disk hop: network reads come in small pieces.
    size_t filled = 0;
    bool at_end = false;
    while (filled < buffer.size()) {
      CO_ASSIGN_OR_RETURN(const size_t n, co_await body.read({buffer.data() + filled, buffer.size() - filled}));
      if (n == 0) {
        at_end = true;
        break;
      }
      filled += n;
    }
    if (filled > 0) {
      for (s3::Checksum* c : checksums) c->update({buffer.data(), filled});
      CO_RETURN_IF_ERROR(co_await writer.write({buffer.data(), filled}));
    }
    total += filled;
    if (at_end) break;
  }
  co_return total;
}

}  // namespace silo::replication
