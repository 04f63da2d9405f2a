#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "base/hash.h"
#include "store/block_sums.h"
#include "store/detail/mountpath.h"
#include "store/detail/object_file.h"
#include "store/detail/op_gate.h"
#include "store/store.h"

namespace silo::store::detail {

class StoreImpl;

// What a writer of a multipart upload's part commits to.
struct PartTarget {
  std::string upload_id;
  uint32_t part_number = 0;
};

// The ObjectWriter of the store: a work file on the owner mountpath plus running XXH3, the
// XXH3 of each block (store/block_sums.h; not for parts) and MD5. All file work runs on that mountpath's DiskExecutor. Callers issue one write() or
// commit() at a time. Destroyed without a successful commit, it hands closing and
// unlinking the work file to the executor (it may be destroyed on a network thread).
// With a PartTarget it writes one part of an upload (StoreImpl::install_part) instead of
// an object; `owner` is then the mountpath holding the upload.
class WorkFileWriter final : public ObjectWriter {
 public:
  // `ticket` keeps the mountpath in the store until the writer is gone (detach waits).
  WorkFileWriter(StoreImpl& store, OpGate::Ticket ticket, size_t owner, Mountpath& mountpath, ObjectRef object,
                 PutOptions options, WorkFile work, std::optional<PartTarget> part = std::nullopt);
  ~WorkFileWriter() override;
  WorkFileWriter(const WorkFileWriter&) = delete;
  WorkFileWriter& operator=(const WorkFileWriter&) = delete;

  Awaitable<Status> write(std::span<const char> data) override;
  void set_checksum(std::string algorithm, std::string base64_value) override;
  wire::ObjectRecord& attributes() override { return options_.attributes; }
  Result<int> open_reader() override;
  Awaitable<Result<wire::ObjectRecord>> commit() override;
  Awaitable<Result<wire::ObjectRecord>> seal() override;
  Awaitable<void> discard() override;

 private:
  enum class State { kWriting, kFailed, kSealed, kCommitted };

  Status write_blocking(std::span<const char> data);
  Result<wire::ObjectRecord> commit_blocking();
  Result<wire::ObjectRecord> seal_blocking();
  // The record the bytes written get (generation 0): size, hashes, now, descriptive fields
  // and checksums.
  wire::ObjectRecord record_of_bytes(const std::string& md5_hex);
  Status check_expected(const std::string& md5_hex) const;
  // A copy of an object that exists elsewhere (PutOptions::original) with no MD5 to check.
  bool is_copy() const { return options_.original && !part_ && !options_.expected_md5_hex; }
  // Whether write() hashes MD5: not for a copy (its record has it) nor for a fetched object
  // (PutOptions::skips_md5), unless a Content-MD5 is to be checked.
  bool computes_md5() const {
    if (options_.expected_md5_hex) return true;
    return !is_copy() && !(options_.skips_md5 && !part_);
  }
  void discard_blocking();

  StoreImpl& store_;
  OpGate::Ticket ticket_;
  size_t owner_;
  Mountpath& mountpath_;
  ObjectRef object_;
  PutOptions options_;
  std::optional<PartTarget> part_;
  std::map<std::string, std::string> checksums_;  // from set_checksum()
  int fd_;
  std::string work_path_;  // empty once the work file is gone (renamed or removed)
  uint64_t size_ = 0;
  hash::Xxh3Stream xxh3_;
  BlockSummer blocks_;
  Md5Stream md5_;
  State state_ = State::kWriting;
};

}  // namespace silo::store::detail
