#include "store/block_sums.h"

#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace silo::store {
namespace {

uint64_t blocks_of(uint64_t size, uint64_t block_size) { return (size + block_size - 1) / block_size; }

// read_scratch()'s buffer: `length` bytes this thread keeps.
std::span<char> thread_scratch(uint64_t length) {
  thread_local std::unique_ptr<char[]> buffer;
  thread_local uint64_t capacity = 0;
  if (capacity < length) {
    buffer.reset(new char[length]);
    capacity = length;
  }
  return {buffer.get(), static_cast<size_t>(length)};
}

// Fills `into` only from the page cache: false when a byte is not there (EAGAIN), the file
// system cannot say (EOPNOTSUPP), or the read fails or ends early.
bool read_cached(int fd, std::span<char> into, uint64_t offset) {
  for (size_t done = 0; done < into.size();) {
    iovec piece{into.data() + done, into.size() - done};
    const ssize_t n = ::preadv2(fd, &piece, 1, static_cast<off_t>(offset + done), RWF_NOWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<Result<std::span<char>>> read_scratch(int fd, uint64_t offset, uint64_t length, bool may_wait) {
  const std::span<char> bytes = thread_scratch(length);
  if (!may_wait) {
    if (!read_cached(fd, bytes, offset)) return std::nullopt;
    return bytes;
  }
  const Status read = read_fully(fd, bytes.data(), bytes.size(), offset);
  if (!read.is_ok()) return Result<std::span<char>>(read);
  return bytes;
}

Status read_fully(int fd, char* into, uint64_t length, uint64_t offset) {
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd, into + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::from_errno(errno, fmt::format("read at {}", offset + done));
    if (n == 0) return Status::data_loss("the file ends at {}", offset + done);
    done += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

bool has_block_sums(const wire::ObjectRecord& record) {
  if (record.has_ec() || record.block_size() == 0) return false;
  return static_cast<uint64_t>(record.block_xxh3_size()) == blocks_of(record.size(), record.block_size());
}

void set_block_sums(wire::ObjectRecord& record, uint64_t block_size, std::span<const uint64_t> sums) {
  record.clear_block_xxh3();
  // No sums for bytes (over kMaxBlocks): the record has none; an empty object has none
  // to keep but its block size says it was summed.
  if (block_size == 0 || (sums.empty() && record.size() > 0)) {
    record.set_block_size(0);
    return;
  }
  record.set_block_size(block_size);
  record.mutable_block_xxh3()->Reserve(static_cast<int>(sums.size()));
  for (const uint64_t sum : sums) record.add_block_xxh3(sum);
}

void BlockSummer::update(std::span<const char> data) {
  while (!data.empty() && !is_over_limit_) {
    if (!block_) block_.emplace();
    const size_t take = static_cast<size_t>(std::min<uint64_t>(data.size(), block_size_ - in_block_));
    block_->update(data.first(take));
    in_block_ += take;
    data = data.subspan(take);
    if (in_block_ == block_size_) {
      sums_.push_back(block_->digest());
      block_.reset();
      in_block_ = 0;
      if (sums_.size() > kMaxBlocks) is_over_limit_ = true;
    }
  }
}

std::vector<uint64_t> BlockSummer::finish() {
  if (!is_over_limit_ && in_block_ > 0) sums_.push_back(block_->digest());
  block_.reset();
  in_block_ = 0;
  if (is_over_limit_ || sums_.size() > kMaxBlocks) sums_.clear();
  return std::move(sums_);
}

Result<FileSums> sums_of_fd(int fd, uint64_t size) {
  FileSums sums;
  hash::Xxh3Stream whole;
  BlockSummer blocks(sums.block_size);
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, sums.block_size)));
  for (uint64_t offset = 0; offset < size;) {
    const uint64_t want = std::min<uint64_t>(buffer.size(), size - offset);
    const Status read = read_fully(fd, buffer.data(), want, offset);
    if (!read.is_ok()) {
      Status status = read;
      return status.annotate("the record says {} bytes", size);
    }
    const std::span<const char> bytes(buffer.data(), static_cast<size_t>(want));
    whole.update(bytes);
    blocks.update(bytes);
    offset += want;
  }
  sums.xxh3 = whole.digest();
  sums.blocks = blocks.finish();
  return sums;
}

BlockVerifier::BlockVerifier(const OpenObject& object, ReadCheck check)
    : object_(object), check_(check), has_blocks_(has_block_sums(object.record())) {}

uint64_t BlockVerifier::verified_bytes(uint64_t offset, uint64_t length) const {
  if (check_ == ReadCheck::kNone) return length;
  if (offset < verified_begin_ || offset >= verified_end_) return 0;
  return std::min(length, verified_end_ - offset);
}

Status BlockVerifier::corrupt(const std::string& why) const {
  return Status::data_loss("the stored bytes of {} do not match their checksum ({})", object_.record().name(), why);
}

Status BlockVerifier::verify(uint64_t offset) {
  const wire::ObjectRecord& record = object_.record();
  if (check_ == ReadCheck::kNone || verified_bytes(offset, 1) > 0) return Status::ok();
  if (!has_blocks_) {
    // Written before block sums (or a slice): the whole file, as reads always did.
    const Result<uint64_t> xxh3 = xxh3_of_fd(object_.fd(), record.size());
    ++blocks_hashed_;
    bytes_hashed_ += record.size();
    if (!xxh3) return corrupt(xxh3.error().to_string());
    if (*xxh3 != record.xxh3()) {
      return corrupt(fmt::format("XXH3 {} instead of {}", hash::u64_hex(*xxh3), hash::u64_hex(record.xxh3())));
    }
    verified_begin_ = 0;
    verified_end_ = record.size();
    return Status::ok();
  }
  return *check_block(offset, /*may_wait=*/true);
}

std::optional<Status> BlockVerifier::verify_cached(uint64_t offset) {
  if (check_ == ReadCheck::kNone || verified_bytes(offset, 1) > 0) return Status::ok();
  if (!has_blocks_) return std::nullopt;
  return check_block(offset, /*may_wait=*/false);
}

std::optional<Status> BlockVerifier::check_block(uint64_t offset, bool may_wait) {
  const wire::ObjectRecord& record = object_.record();
  const uint64_t index = offset / record.block_size();
  const uint64_t begin = index * record.block_size();
  std::optional<Result<std::span<char>>> read =
      read_scratch(object_.fd(), begin, std::min(record.block_size(), record.size() - begin), may_wait);
  if (!read) return std::nullopt;
  if (!*read) return corrupt(fmt::format("block {}: {}", index, read->error().to_string()));
  const std::span<const char> block = **read;
  ++blocks_hashed_;
  bytes_hashed_ += block.size();
  const uint64_t actual = hash::xxh3(block);
  const uint64_t expected = record.block_xxh3(static_cast<int>(index));
  if (actual != expected) {
    return corrupt(fmt::format("block {} at {}: XXH3 {} instead of {}", index, begin, hash::u64_hex(actual),
                               hash::u64_hex(expected)));
  }
  const uint64_t end = begin + block.size();
  if (begin == verified_end_ && verified_end_ > verified_begin_) {
    verified_end_ = end;  // extends the run
  } else {
    verified_begin_ = begin;
    verified_end_ = end;
  }
  return Status::ok();
}

Awaitable<Status> verify_block(BlockVerifier& verifier, async::DiskExecutor& disk, uint64_t offset) {
  if (std::optional<Status> now = verifier.verify_cached(offset)) co_return std::move(*now);
  co_return co_await disk.run([&verifier, offset] { return verifier.verify(offset); });
}

}  // namespace silo::store
