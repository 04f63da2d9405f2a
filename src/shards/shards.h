#pragma once

// shards::Shards: a target's reads of an archive object's members (docs/shards.md): the
// member index of the version it opened (kept by the store beside the record, built here
// from the bytes when missing), one member, a tar of several, the member list.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "archive/members.h"
#include "archive/tar_reader.h"
#include "shards/index_cache.h"
#include "async/disk_executor.h"
#include "base/result.h"
#include "http/server.h"
#include "stats/registry.h"
#include "store/block_sums.h"
#include "store/store.h"
#include "wire/codec.h"

namespace silo::shards {

// What a read of an archive object asks for: ?archpath=MEMBER (one member), with
// &archmode=MODE a tar of the members the pattern selects, or ?archlist=true the list.
struct ArchiveRead {
  std::string path;
  std::optional<archive::SelectMode> mode;
  bool lists = false;
  // &batchprefix=PREFIX (with archmode; batch GET asks it of the owner, docs/shards.md
  // "Batch GET"): the members are named PREFIX + their name and the tar has no end
  // blocks: a piece of the batch's stream, sent on as it comes.
  std::optional<std::string> batch_prefix;
  bool operator==(const ArchiveRead&) const = default;
};
// From the query parameters `param` returns; nullopt when the request names none.
// Errors (kInvalidArgument, InvalidArgument): archmode without archpath or with an
// unknown mode, an empty archpath, archlist other than true/false, batchprefix without
// archmode.
Result<std::optional<ArchiveRead>> parse_archive_read(
    const std::function<std::optional<std::string>(std::string_view)>& param);

// Lives as long as the node; its coroutines run on the node's io_context.
class Shards {
 public:
  Shards(store::Store& store, stats::Registry& stats);

  // The member index of the opened version of `object`: the store's, else built from the
  // bytes now (headers only) and handed to the store. Errors: kInvalidArgument with
  // reason NotAnArchive or CorruptArchive (400), read errors.
  http::Awaitable<Result<std::shared_ptr<const MemberIndex>>> index_of(const ObjectRef& object,
                                                                              const store::OpenObject& opened);
  // The member index of an erasure-coded `object` whose slice at `generation` is here:
  // cached, else the store's (kept beside the slice's record), else built now from the
  // headers that `read` reads of the whole object (a blocking ReadAt over the object's
  // `size` bytes, called on a reader thread) and handed to the store. Errors as
  // index_of().
  http::Awaitable<Result<std::shared_ptr<const MemberIndex>>> index_of_coded(const ObjectRef& object,
                                                                             uint64_t generation, uint64_t size,
                                                                             archive::ReadAt read);
  // The index of `object` at `generation`: cached, else the store's (then cached); null
  // when neither has it (index_of() builds one). Blocking (RocksDB): on a reader thread.
  std::shared_ptr<const MemberIndex> index_now(const ObjectRef& object, uint64_t generation);
  // The member `name`; kNotFound, reason NoSuchArchiveMember.
  static Result<const wire::ArchiveMember*> find(const MemberIndex& index, std::string_view name,
                                                 const ObjectRef& object);
  // The largest member read checked against its own XXH3 (ArchiveMember.xxh3, read whole
  // first) rather than block by block as it goes.
  static constexpr uint64_t kMaxMemberSumCheck = 1ull << 20;
  // Whether a read of `member` is checked by its own sum: it has one and is small enough.
  static bool checks_by_member_sum(const wire::ArchiveMember& member) {
    return member.has_xxh3() && member.size() <= kMaxMemberSumCheck;
  }
  // Compares `bytes`, all of `member`'s data, with its sum: kDataLoss (S3
  // DataLoss) naming the member of `object_name` when they differ.
  static Status check_member_sum(const wire::ArchiveMember& member, std::span<const char> bytes,
                                 std::string_view object_name);
  // Reads `member` of `opened` whole and checks it with check_member_sum(): on this thread
  // when all of it is in the page cache (preadv2 RWF_NOWAIT), else on a reader thread.
  http::Awaitable<Status> check_member(const store::OpenObject& opened, const wire::ArchiveMember& member);
  // Sends `head` (Content-Type and length set here) and, when `sends_bytes` (a GET, not a
  // HEAD), `length` bytes of `member` from `offset` within it, by sendfile from the shard.
  // With kVerify a small member with a sum (checks_by_member_sum) is read and checked
  // whole before `head`; else only the blocks of those bytes are checked, each just before it goes
  // (store::BlockVerifier), the first before `head`: a corrupt one fails with kDataLoss
  // (DataLoss), before anything was sent when it is the first (the reader then turns
  // to another copy), else cutting the response short. Counted in
  // silo_target_corrupt_copies_total.
  http::Awaitable<Status> send_member(http::Exchange& exchange, http::ResponseHead head,
                                      const store::OpenObject& opened,
                                      wire::ArchiveFormat format, const wire::ArchiveMember& member,
                                      uint64_t offset, uint64_t length, bool sends_bytes,
                                      store::ReadCheck check = store::ReadCheck::kVerify);
  // Sends `head` (Content-Type and length set here), then `members` of the opened object
  // as one tar stream (sendfile for the bytes), members named as in the archive after
  // `name_prefix`; with `ends`, closed by the end-of-archive blocks. With kVerify each
  // member's blocks are checked as it is sent (a block two members share, once), as
  // send_member() does; the first member's first block before `head`.
  http::Awaitable<Status> send_tar(http::Exchange& exchange, http::ResponseHead head,
                                   const store::OpenObject& opened, wire::ArchiveFormat format,
                                   std::span<const wire::ArchiveMember* const> members,
                                   std::string_view name_prefix = "", bool ends = true,
                                   store::ReadCheck check = store::ReadCheck::kVerify);
  // Writes bytes [offset, offset + length) of the archive object to `out` (which was begun).
  using ObjectBytes =
      std::function<http::Awaitable<Status>(uint64_t offset, uint64_t length, http::ResponseWriter& out)>;
  // send_tar() for a plain tar whose bytes are not a file here (an erasure-coded object's):
  // `bytes` writes each member's data; nothing is checked here (`bytes` checks what it
  // reads). `mtime_unix_seconds` stamps every member.
  http::Awaitable<Status> send_tar_of(http::Exchange& exchange, http::ResponseHead head, int64_t mtime_unix_seconds,
                                      std::span<const wire::ArchiveMember* const> members,
                                      std::string_view name_prefix, bool ends, const ObjectBytes& bytes);
  // Counts a member read of `bytes` bytes.
  void note_member_read(uint64_t bytes);

  // The bytes of a compressed archive, as its decompressor reads them: `read` is a blocking
  // ReadAt over the archive's `size` bytes, called on a thread of this module's pool.
  struct ArchiveBytes {
    archive::ReadAt read;
    uint64_t size = 0;
  };
  // An object's file here as ArchiveBytes: every block a read touches is verified per
  // `check` before its bytes are used (kDataLoss, S3 DataLoss, when it fails).
  // `opened` must outlive what reads through it.
  static ArchiveBytes file_bytes(const store::OpenObject& opened, store::ReadCheck check);

  // Compressed archives (tgz, tar.lz4, zip; decompressed.cc): writes bytes [offset,
  // offset + length) of `member`, decompressed from `bytes` on a thread of this module's
  // own pool while they are sent (a few 256 KiB chunks in memory), to `out`, which was
  // begun with their length. An error after bytes went out (a CRC-32 that fails at the
  // member's end) leaves `out` short: the caller returns it and the connection closes.
  http::Awaitable<Status> send_decompressed(http::ResponseWriter& out, const ArchiveBytes& bytes,
                                            wire::ArchiveFormat format, const wire::ArchiveMember& member,
                                            uint64_t offset, uint64_t length);
  // Sends `head` (Content-Type and length set here), then `members` decompressed from
  // `bytes` as one tar stream, as send_tar() writes one; each member stamped with
  // `mtime_unix_seconds`.
  http::Awaitable<Status> send_decompressed_tar(http::Exchange& exchange, http::ResponseHead head,
                                                const ArchiveBytes& bytes, int64_t mtime_unix_seconds,
                                                wire::ArchiveFormat format,
                                                std::span<const wire::ArchiveMember* const> members,
                                                std::string_view name_prefix, bool ends);

 private:
  // Checks the block of `opened` holding `offset` unless `verifier` has; a failure is
  // counted and logged as a corrupt copy.
  http::Awaitable<Status> verify_block(store::BlockVerifier& verifier, const store::OpenObject& opened,
                                       uint64_t offset);
  // Sends [offset, offset + length) of `opened` (after begin()), each block checked just
  // before its bytes go.
  http::Awaitable<Status> send_checked(http::Exchange& exchange, store::BlockVerifier& verifier,
                                       const store::OpenObject& opened, uint64_t offset, uint64_t length);

  // Counts and logs a corrupt copy found by a member read; returns `status`.
  Status found_corrupt(const store::OpenObject& opened, Status status);
  // index_of() and index_of_coded(): cached, else the store's, else `build` run on a
  // reader thread, then kept.
  http::Awaitable<Result<std::shared_ptr<const MemberIndex>>> index_with(
      const ObjectRef& object, uint64_t generation, std::function<Result<wire::ArchiveIndex>()> build);
  // The length of a tar of `members` named after `name_prefix`, with `ends` its end blocks.
  static uint64_t tar_length(std::span<const wire::ArchiveMember* const> members, std::string_view name_prefix,
                             bool ends);
  // Decodes an index read from the store and caches it when it describes `generation`.
  std::shared_ptr<const MemberIndex> cache_decoded(const ObjectRef& object, uint64_t generation,
                                                   const std::string& bytes);

  store::Store& store_;
  async::DiskExecutor reader_{2};  // builds indexes (preads of the headers), checks blocks
  // Decompresses members of compressed archives: a thread per read in progress, held back
  // by a slow client, so a pool of its own.
  async::DiskExecutor decompressor_{8};
  IndexCache index_cache_{64ull << 20};  // decoded indexes of recent reads
  stats::Counter& member_reads_;
  stats::Counter& member_bytes_;
  stats::Counter& index_builds_;
  stats::Counter& index_failures_;
  stats::Counter& corrupt_found_;
};

}  // namespace silo::shards
