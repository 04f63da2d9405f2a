// The copy wire (copy_wire.h): how a copy travels between targets and which version or
// form of an object a receiver keeps.
#include "replication/copy_wire.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>

#include "base/text.h"
#include "wire/codec.h"
#include "wire/json.h"

namespace silo::replication {
namespace {

constexpr uint32_t kMaxRecordBytes = 16 * 1024 * 1024;
constexpr std::string_view kInternalObjects = "/v1/internal/objects/";

// A body's receive buffer (issue #23 F6: 2,000 slow writers took a target to 1 GB, and
// it kept it). It starts at kFirstReceiveBytes (or the body's size, when smaller) and
// doubles, up to kMaxReceiveBytes (few disk-executor hops per large PUT), each time it
// fills within kFastFill, while all receive buffers of the node hold less than
// kReceiveBudgetBytes: a writer whose bytes trickle in holds 64 KiB, and what the heap
// keeps after a crowd of them is bounded by that. The buffers come from the heap,
// uninitialized: pages of their own (mmap) cost a fresh page fault per 4 KiB of every
// PUT, 40 % of the throughput of 4 MiB PUTs here (bench/slow_writers.sh).
constexpr size_t kFirstReceiveBytes = 64 * 1024;
constexpr size_t kMaxReceiveBytes = 1024 * 1024;
constexpr uint64_t kReceiveBudgetBytes = 256ULL << 20;
constexpr std::chrono::milliseconds kFastFill{20};

std::atomic<uint64_t> g_receive_buffer_bytes{0};

class ReceiveBuffer {
 public:
  explicit ReceiveBuffer(size_t size) { allocate(size); }
  ~ReceiveBuffer() { g_receive_buffer_bytes -= size_; }
  ReceiveBuffer(const ReceiveBuffer&) = delete;
  ReceiveBuffer& operator=(const ReceiveBuffer&) = delete;

  std::span<char> span() { return {data_.get(), size_}; }
  // Twice the size, within the cap and the node's budget (the contents are dropped).
  void grow() {
    const size_t bigger = std::min(size_ * 2, kMaxReceiveBytes);
    if (bigger == size_ ||
        g_receive_buffer_bytes.load(std::memory_order_relaxed) + bigger - size_ > kReceiveBudgetBytes) {
      return;
    }
    g_receive_buffer_bytes -= size_;
    data_.reset();
    allocate(bigger);
  }

 private:
  void allocate(size_t size) {
    data_ = std::make_unique_for_overwrite<char[]>(size);
    size_ = size;
    g_receive_buffer_bytes += size;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

}  // namespace

uint64_t receive_buffer_bytes() { return g_receive_buffer_bytes.load(std::memory_order_relaxed); }

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
                                               std::optional<uint64_t> expected_size,
                                               std::vector<s3::Checksum*> checksums) {
  // One byte over the expected size, so a body that is longer still fills the buffer
  // and is read to its end in the same loop.
  ReceiveBuffer buffer(expected_size && *expected_size < kFirstReceiveBytes ? *expected_size + 1
                                                                            : kFirstReceiveBytes);
  uint64_t total = 0;
  for (;;) {
    // Fill the buffer before each disk hop: network reads come in small pieces.
    const std::span<char> space = buffer.span();
    const auto started = std::chrono::steady_clock::now();
    size_t filled = 0;
    bool at_end = false;
    while (filled < space.size()) {
      CO_ASSIGN_OR_RETURN(const size_t n, co_await body.read(space.subspan(filled)));
      if (n == 0) {
        at_end = true;
        break;
      }
      filled += n;
    }
    if (filled > 0) {
      for (s3::Checksum* c : checksums) c->update({space.data(), filled});
      CO_RETURN_IF_ERROR(co_await writer.write({space.data(), filled}));
    }
    total += filled;
    if (at_end) break;
    if (std::chrono::steady_clock::now() - started <= kFastFill) buffer.grow();
  }
  co_return total;
}

}  // namespace silo::replication
