#pragma once

// Per-block checksums of object files (docs/data-protection.md "Verified reads"): the
// XXH3-64 of each kBlockSize block of an object's bytes (the last one shorter), kept in
// its record (ObjectRecord.block_size, block_xxh3) beside the whole-file xxh3, so a read
// hashes only the blocks it touches, each just before it is sent.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "async/disk_executor.h"
#include "base/hash.h"
#include "base/result.h"
#include "store/store.h"

namespace silo::store {

inline constexpr uint64_t kBlockSize = uint64_t{256} << 10;
// Past this many blocks (objects over 256 GiB) a record keeps no block sums: 8 bytes per
// block would take the record past what the copy wire carries (16 MiB). Such objects are
// checked whole, as records written before block sums are.
inline constexpr uint64_t kMaxBlocks = uint64_t{1} << 20;

// Whether `record` carries block sums that describe its bytes: a block size and one sum
// per block of `size` bytes. A slice of an erasure-coded object (has_ec) never does: it
// is checked whole (docs/data-protection.md).
bool has_block_sums(const wire::ObjectRecord& record);
// Sets the block sums of `record`, whose size is set; clears them when `block_size` is 0
// or `sums` is empty for a non-empty record (an object over kMaxBlocks).
void set_block_sums(wire::ObjectRecord& record, uint64_t block_size, std::span<const uint64_t> sums);

// The block sums of bytes that arrive in order, in pieces of any size (a writer's).
// Not thread-safe; one per stream of bytes.
class BlockSummer {
 public:
  explicit BlockSummer(uint64_t block_size = kBlockSize) : block_size_(block_size) {}
  void update(std::span<const char> data);
  // The sums of everything given to update(), the last block shorter; empty past
  // kMaxBlocks. Call once, after the last update().
  std::vector<uint64_t> finish();
  uint64_t block_size() const { return block_size_; }

 private:
  uint64_t block_size_;
  std::optional<hash::Xxh3Stream> block_;  // of the block being filled
  uint64_t in_block_ = 0;                  // bytes of it so far
  std::vector<uint64_t> sums_;
  bool is_over_limit_ = false;
};

// The whole-file XXH3 and the block sums of one file.
struct FileSums {
  uint64_t xxh3 = 0;
  uint64_t block_size = kBlockSize;
  std::vector<uint64_t> blocks;  // empty past kMaxBlocks
};
// Both sums of the first `size` bytes of `fd`, in one pass of preads into one block
// buffer. kDataLoss when the file is shorter. Blocking: call on a disk executor.
Result<FileSums> sums_of_fd(int fd, uint64_t size);

// Whether a read checks the bytes it sends (a bucket's verify_reads, on by default).
enum class ReadCheck { kNone, kVerify };

// The checks of one read of an opened object (a GET, a member read, a tar of members, a
// copy sent to a peer): which of its bytes are verified by now. Each block a read touches
// is hashed from the file (pread into a block buffer of the calling thread, normally from the page
// cache) and compared with its sum right before the caller sends its bytes, so a corrupt
// block is never sent and nothing is read twice. A record without block sums (written
// before them, a slice) is checked whole at the first verify(), as before. The verified
// span is the run of consecutive blocks checked last, so reads in order (ranges, members
// sharing a block) hash each block once. Owned by one read on one thread at a time;
// `object` outlives it.
class BlockVerifier {
 public:
  BlockVerifier(const OpenObject& object, ReadCheck check);
  BlockVerifier(const BlockVerifier&) = delete;
  BlockVerifier& operator=(const BlockVerifier&) = delete;

  // How many of the `length` bytes from `offset` may be sent now, without I/O: 0 when the
  // block holding `offset` is not verified yet (call verify()); all of them with kNone.
  uint64_t verified_bytes(uint64_t offset, uint64_t length) const;
  // Hashes the block holding `offset` (the whole file when the record has no block sums)
  // and compares it with its sum. kDataLoss (S3 DataLoss) when it differs,
  // cannot be read, or the file is shorter than its record: the message says which block.
  // Blocking: call on a disk executor.
  // Requires: offset < the record's size.
  Status verify(uint64_t offset);
  // verify() without blocking, on any thread: nullopt when that would wait for the disk
  // (a byte of the block is not in the page cache: preadv2 RWF_NOWAIT) or hash more than
  // one block (a record without block sums).
  std::optional<Status> verify_cached(uint64_t offset);
  // Blocks hashed so far (and bytes), for tests and metrics.
  uint64_t blocks_hashed() const { return blocks_hashed_; }
  uint64_t bytes_hashed() const { return bytes_hashed_; }

 private:
  Status corrupt(const std::string& why) const;
  // Reads the block holding `offset` (waiting for the disk, or only from the page cache:
  // nullopt when it is not all there), compares it with its sum and extends the verified
  // span.
  std::optional<Status> check_block(uint64_t offset, bool may_wait);

  const OpenObject& object_;
  ReadCheck check_;
  bool has_blocks_;
  uint64_t verified_begin_ = 0;  // [begin, end) of the file: verified
  uint64_t verified_end_ = 0;
  uint64_t blocks_hashed_ = 0;
  uint64_t bytes_hashed_ = 0;
};

// Verifies the block of `verifier`'s object that holds `offset`: on this thread when it is
// in the page cache (a warm read costs no thread hand-off, docs/adr/0024), else on `disk`.
Awaitable<Status> verify_block(BlockVerifier& verifier, async::DiskExecutor& disk, uint64_t offset);

}  // namespace silo::store
