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
#include "async/disk_executor.h"
#include "base/result.h"
#include "http/server.h"
#include "stats/registry.h"
#include "store/store.h"
#include "wire/codec.h"

namespace silo::shards {

// What a read of an archive object asks for: ?archpath=MEMBER (one member), with
// &archmode=MODE a tar of the members the pattern selects, or ?archlist=true the list.
struct ArchiveRead {
  std::string path;
  std::optional<archive::SelectMode> mode;
  bool lists = false;
  bool operator==(const ArchiveRead&) const = default;
};
// From the query parameters `param` returns; nullopt when the request names none.
// Errors (kInvalidArgument, InvalidArgument): archmode without archpath or with an
// unknown mode, an empty archpath, archlist other than true/false.
Result<std::optional<ArchiveRead>> parse_archive_read(
    const std::function<std::optional<std::string>(std::string_view)>& param);

// Lives as long as the node; its coroutines run on the node's io_context.
class Shards {
 public:
  Shards(store::Store& store, stats::Registry& stats);

  // The member index of the opened version of `object`: the store's, else built from the
  // bytes now (headers only) and handed to the store. Errors: kInvalidArgument with
  // reason NotAnArchive or CorruptArchive (400), read errors.
  http::Awaitable<Result<std::shared_ptr<const wire::ArchiveIndex>>> index_of(const ObjectRef& object,
                                                                              const store::OpenObject& opened);
  // The member `name`; kNotFound, reason NoSuchArchiveMember.
  static Result<const wire::ArchiveMember*> find(const wire::ArchiveIndex& index, std::string_view name,
                                                 const ObjectRef& object);
  // Sends `head` (Content-Type and length set here) and, when `sends_bytes` (a GET, not a
  // HEAD), `length` bytes of `member` from `offset` within it, by sendfile from the shard.
  http::Awaitable<Status> send_member(http::Exchange& exchange, http::ResponseHead head,
                                      const store::OpenObject& opened, const wire::ArchiveMember& member,
                                      uint64_t offset, uint64_t length, bool sends_bytes);
  // Sends `head` (Content-Type and length set here), then `members` of the opened object
  // as one tar stream (sendfile for the bytes), members named as in the archive.
  http::Awaitable<Status> send_tar(http::Exchange& exchange, http::ResponseHead head,
                                   const store::OpenObject& opened,
                                   std::span<const wire::ArchiveMember* const> members);
  // Counts a member read of `bytes` bytes.
  void note_member_read(uint64_t bytes);

 private:
  store::Store& store_;
  async::DiskExecutor reader_{2};  // builds indexes (preads of the headers)
  stats::Counter& member_reads_;
  stats::Counter& member_bytes_;
  stats::Counter& index_builds_;
  stats::Counter& index_failures_;
};

}  // namespace silo::shards
