#pragma once

// Reading and writing the slices of erasure-coded objects (erasure.cc): where an object's
// slices are read from, one stripe at a time, and how a whole object is cut and coded.
// Internal to the erasure module.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/hash.h"
#include "base/object_ref.h"
#include "base/result.h"
#include "ec/layout.h"
#include "ec/reed_solomon.h"
#include "http/client.h"
#include "async/disk_executor.h"
#include "store/store.h"
#include "wire/codec.h"

namespace silo::erasure::detail {

// Every slice cell but a last stripe's (docs/data-protection.md "Layout: erasure coding").
inline constexpr uint64_t kCellBytes = 1024 * 1024;

// One slice read from a start offset on: here (pread on `fd`) or from another target.
struct SliceSource {
  uint32_t index = 0;
  int fd = -1;
  uint64_t position = 0;
  std::unique_ptr<http::Call> call;
};

// A commit that replaces generation `generation` of the object here, and nothing newer.
store::Precondition only_generation(uint64_t generation);

// How a slice described by `record` is written into this store (no precondition yet).
store::PutOptions slice_put_options(const wire::ObjectRecord& record, store::Durability durability);

// Whether `theirs` is a slice of the same version and code as the slice `mine`.
bool is_slice_of(const wire::ObjectRecord& theirs, const wire::ObjectRecord& mine);

// Where a slice's bytes are (from its record's `ec`).
ec::Layout layout_of(const wire::EcSlice& ec);

// The record of slice `index` of the object whose whole-object record is `object`.
wire::ObjectRecord slice_record(const wire::ObjectRecord& object, const wire::EcPolicy& policy,
                                uint32_t index, uint64_t slice_size, uint64_t slice_xxh3);

// Where each slice no holder has (`where[i]` unset) is rebuilt: on its holder by rank when
// that one has no slice of this version, else on another holder without one (never one
// that has a slice already). A holder that is down is left out: it gets its slice when it
// is back or replaced (reads, a scrub or a rebalance).
Result<std::vector<std::pair<uint32_t, wire::NodeInfo>>> plan_rebuild(
    const std::vector<std::optional<wire::NodeInfo>>& where,
    const std::vector<wire::NodeInfo>& holders, std::string_view name);

// Opens k slices of the version `mine` names, from slice offset `from` for `length`
// bytes: the data slices when all are there, else any k (data first). A slice that turns
// out gone, corrupt or of another version is dropped from `where` and another chosen.
// Sets `is_degraded` when a parity slice is among them. With fewer than k left: kAborted
// when a holder had another version (retry), kUnavailable when one could not be reached,
// else kDataLoss (the others are corrupt or missing: retrying does not help).
http::Awaitable<Result<std::vector<SliceSource>>> open_sources(
    http::Client& client, const ObjectRef& object, const wire::ObjectRecord& record, int fd,
    const std::string& self, std::vector<std::optional<wire::NodeInfo>>& where, uint64_t from,
    uint64_t length, bool& is_degraded);

// Reads cell `s` of every source in parallel into `cells` (by slice index) and, when
// degraded, rebuilds every cell not read.
http::Awaitable<Status> read_stripe(async::DiskExecutor& disk, std::vector<SliceSource>& sources,
                                    std::vector<std::vector<uint8_t>>& cells, uint64_t cell_length,
                                    const ec::ReedSolomon& rs, bool is_degraded);

// The cells of one object's stripes, read from its file and coded, stripe by stripe; the
// blocking calls run on a disk executor. Holds k + m cells of 1 MiB, never the object.
class StripeEncoder {
 public:
  static Result<StripeEncoder> create(const wire::EcPolicy& policy, uint64_t object_size, int fd) {
    ASSIGN_OR_RETURN(ec::ReedSolomon rs,
                     ec::ReedSolomon::create(static_cast<int>(policy.data()),
                                             static_cast<int>(policy.parity())));
    return StripeEncoder(std::move(rs), ec::Layout{policy.data(), kCellBytes, object_size}, fd,
                         policy.data() + policy.parity());
  }
  const ec::Layout& layout() const { return layout_; }
  const std::vector<std::vector<uint8_t>>& cells() const { return cells_; }

  // Blocking: reads the data cells of stripe `s` (zero-padded past the object's end) and
  // computes its parity cells.
  Status fill(uint64_t s) {
    const uint32_t k = layout_.k;
    const uint64_t length = layout_.cell_length(s);
    std::vector<std::span<const uint8_t>> data;
    std::vector<std::span<uint8_t>> parity;
    for (uint32_t j = 0; j < k; ++j) {
      const uint64_t real = layout_.data_in_cell(s, j);
      const uint64_t at = layout_.object_offset(s) + j * length;
      uint64_t done = 0;
      while (done < real) {
        const ssize_t got =
            ::pread(fd_, cells_[j].data() + done, real - done, static_cast<off_t>(at + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return Status::data_loss("reading the object to encode it at {}", at + done);
        done += static_cast<uint64_t>(got);
      }
      std::memset(cells_[j].data() + real, 0, length - real);
      data.emplace_back(cells_[j].data(), length);
    }
    for (uint32_t j = k; j < cells_.size(); ++j) parity.emplace_back(cells_[j].data(), length);
    return rs_.encode(data, parity);
  }

  // Blocking: the XXH3 of every slice (a whole pass over the object).
  Result<std::vector<uint64_t>> slice_xxh3() {
    std::vector<hash::Xxh3Stream> hashes(cells_.size());
    for (uint64_t s = 0; s < layout_.stripes(); ++s) {
      RETURN_IF_ERROR(fill(s));
      const auto length = static_cast<size_t>(layout_.cell_length(s));
      for (size_t i = 0; i < cells_.size(); ++i) {
        hashes[i].update({reinterpret_cast<const char*>(cells_[i].data()), length});
      }
    }
    std::vector<uint64_t> digests;
    for (const auto& h : hashes) digests.push_back(h.digest());
    return digests;
  }

 private:
  StripeEncoder(ec::ReedSolomon rs, ec::Layout layout, int fd, uint32_t n)
      : rs_(std::move(rs)), layout_(layout), fd_(fd), cells_(n, std::vector<uint8_t>(kCellBytes)) {}

  ec::ReedSolomon rs_;
  ec::Layout layout_;
  int fd_;
  std::vector<std::vector<uint8_t>> cells_;
};

}  // namespace silo::erasure::detail
