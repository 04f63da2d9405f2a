#include "shards/shards.h"


#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "archive/compressed.h"
#include "archive/tar_writer.h"
#include "base/hash.h"
#include "base/log.h"
#include "wire/object_json.h"

namespace silo::shards {

Result<std::optional<ArchiveRead>> parse_archive_read(
    const std::function<std::optional<std::string>(std::string_view)>& param) {
  const std::optional<std::string> path = param("archpath");
  const std::optional<std::string> mode = param("archmode");
  const std::optional<std::string> list = param("archlist");
  std::optional<std::string> batch_prefix = param("batchprefix");
  if (batch_prefix && !mode) {
    return Status::invalid_argument("batchprefix names the members of a selection: it needs archmode")
        .with_reason("InvalidArgument");
  }
  if (!path && !mode && !list) return std::optional<ArchiveRead>();
  ArchiveRead read;
  if (list) {
    if (*list != "true" && *list != "false") {
      return Status::invalid_argument("archlist must be true or false, not '{}'", *list).with_reason("InvalidArgument");
    }
    read.lists = *list == "true";
    if (read.lists && (path || mode)) {
      return Status::invalid_argument("archlist lists every member: it takes no archpath or archmode")
          .with_reason("InvalidArgument");
    }
    if (!read.lists && !path) return std::optional<ArchiveRead>();
  }
  if (!read.lists) {
    if (!path || path->empty()) {
      return Status::invalid_argument("archmode needs an archpath (a member name or a pattern)")
          .with_reason("InvalidArgument");
    }
    read.path = *path;
    if (mode) {
      ASSIGN_OR_RETURN(read.mode, archive::parse_select_mode(*mode));
    }
    read.batch_prefix = std::move(batch_prefix);
  }
  return std::optional<ArchiveRead>(std::move(read));
}

Shards::Shards(store::Store& store, stats::Registry& stats)
    : store_(store),
      member_reads_(stats.counter("silo_target_archive_reads_total",
                                  "Reads of archive members: one member, a selection or the list.")),
      member_bytes_(stats.counter("silo_target_archive_read_bytes_total", "Member bytes sent by archive reads.")),
      index_builds_(stats.counter("silo_target_archive_index_builds_total",
                                  "Archive indexes built at a first member read (not at install).")),
      index_failures_(stats.counter("silo_target_archive_index_failures_total",
                                    "Member reads of objects that are no archive or a corrupt one.")),
      corrupt_found_(stats.counter("silo_target_corrupt_copies_total",
                                   "Copies whose bytes did not match their XXH3 (found by reads and scrubs).")) {}

http::Awaitable<Result<std::shared_ptr<const MemberIndex>>> Shards::index_of(
    const ObjectRef& object, const store::OpenObject& opened) {
  // None for this version (not named like an archive, or written before indexes): built
  // from the headers of the version this read opened, then kept. The builders are named
  // locals, never temporaries made in a co_await (docs/adr/0003 rule 1).
  const int fd = opened.fd();
  const wire::ObjectRecord* record = &opened.record();
  std::function<Result<wire::ArchiveIndex>()> build = [fd, record]() -> Result<wire::ArchiveIndex> {
    Result<wire::ArchiveIndex> index = store::index_of_fd(fd, record->size());
    if (index) store::add_member_sums(fd, *record, *index);
    return index;
  };
  co_return co_await index_with(object, record->generation(), std::move(build));
}

http::Awaitable<Result<std::shared_ptr<const MemberIndex>>> Shards::index_of_coded(const ObjectRef& object,
                                                                                   uint64_t generation, uint64_t size,
                                                                                   archive::ReadAt read) {
  // The members of a coded object have no sums of their own: its reads check slices.
  std::function<Result<wire::ArchiveIndex>()> build = [size, read = std::move(read)]() -> Result<wire::ArchiveIndex> {
    ASSIGN_OR_RETURN(const wire::ArchiveFormat format, archive::sniff_format(read, size));
    return archive::index_archive(format, read, size);
  };
  co_return co_await index_with(object, generation, std::move(build));
}

http::Awaitable<Result<std::shared_ptr<const MemberIndex>>> Shards::index_with(
    const ObjectRef& object, uint64_t generation, std::function<Result<wire::ArchiveIndex>()> build) {
  if (std::shared_ptr<const MemberIndex> cached = index_cache_.find(object, generation)) co_return cached;
  Result<std::string> kept = co_await store_.get_index(object);
  if (kept) {
    if (std::shared_ptr<const MemberIndex> decoded = cache_decoded(object, generation, *kept)) co_return decoded;
  } else if (kept.error().code() != Code::kNotFound) {
    co_return std::move(kept).error();
  }
  Result<wire::ArchiveIndex> built = co_await reader_.run(build);
  if (!built) {
    index_failures_.add();
    Status status = std::move(built).error();
    co_return status.annotate("{}", object.name);
  }
  index_builds_.add();
  built->set_generation(generation);
  const Status kept_now = co_await store_.put_index(object, generation, wire::encode(*built));
  if (!kept_now.is_ok()) SILO_LOG_INFO("the index of {} is not kept: {}", object.name, kept_now);
  auto made = std::make_shared<const MemberIndex>(std::move(*built));
  if (kept_now.is_ok()) index_cache_.put(object, made);
  co_return made;
}

std::shared_ptr<const MemberIndex> Shards::cache_decoded(const ObjectRef& object, uint64_t generation,
                                                         const std::string& bytes) {
  auto index = wire::decode<wire::ArchiveIndex>(bytes, wire::Source::kDisk);
  if (!index || index->generation() != generation) return nullptr;
  auto decoded = std::make_shared<const MemberIndex>(std::move(*index));
  index_cache_.put(object, decoded);
  return decoded;
}

std::shared_ptr<const MemberIndex> Shards::index_now(const ObjectRef& object, uint64_t generation) {
  if (std::shared_ptr<const MemberIndex> cached = index_cache_.find(object, generation)) return cached;
  Result<std::string> kept = store_.get_index_now(object);
  return kept ? cache_decoded(object, generation, *kept) : nullptr;
}

Status Shards::check_member_sum(const wire::ArchiveMember& member, std::span<const char> bytes,
                                std::string_view object_name) {
  hash::Xxh3Stream sum;
  sum.update(bytes);
  if (sum.digest() == member.xxh3()) return Status::ok();
  return Status::data_loss("member {} of {} does not match its XXH3 {}", member.name(), object_name,
                           hash::u64_hex(member.xxh3()));
}

Result<const wire::ArchiveMember*> Shards::find(const MemberIndex& index, std::string_view name,
                                                const ObjectRef& object) {
  const wire::ArchiveMember* member = index.find(name);
  if (member == nullptr) {
    return Status::not_found("archive {} has no member {}", object.name, name).with_reason(archive::kNoSuchMember);
  }
  return member;
}

http::Awaitable<Status> Shards::check_member(const store::OpenObject& opened, const wire::ArchiveMember& member) {
  const auto check = [&opened, &member](bool may_wait) -> std::optional<Status> {
    std::optional<Result<std::span<char>>> read = store::read_scratch(opened.fd(), member.offset(), member.size(), may_wait);
    if (!read) return std::nullopt;
    if (!*read) {
      return Status::data_loss("member {} of {} cannot be read whole: {}", member.name(), opened.record().name(),
                               read->error().message());
    }
    return check_member_sum(member, **read, opened.record().name());
  };
  // A warm member costs no thread hand-off (as a warm block, docs/adr/0024).
  if (std::optional<Status> now = check(/*may_wait=*/false)) co_return std::move(*now);
  co_return co_await reader_.run([&check] { return *check(/*may_wait=*/true); });
}

http::Awaitable<Status> Shards::verify_block(store::BlockVerifier& verifier, const store::OpenObject& opened,
                                             uint64_t offset) {
  if (verifier.verified_bytes(offset, 1) > 0) co_return Status::ok();
  Status checked = co_await store::verify_block(verifier, reader_, offset);
  if (checked.is_ok()) co_return checked;
  co_return found_corrupt(opened, checked);
}

Status Shards::found_corrupt(const store::OpenObject& opened, Status status) {
  corrupt_found_.add();
  SILO_LOG_ERROR("corrupt copy of {} (generation {}) found by a member read: {}", opened.record().name(),
                 opened.record().generation(), status.message());
  return status;
}

http::Awaitable<Status> Shards::send_checked(http::Exchange& exchange, store::BlockVerifier& verifier,
                                             const store::OpenObject& opened, uint64_t offset, uint64_t length) {
  const uint64_t end = offset + length;
  for (uint64_t at = offset; at < end;) {
    CO_RETURN_IF_ERROR(co_await verify_block(verifier, opened, at));
    const uint64_t ready = verifier.verified_bytes(at, end - at);
    CO_RETURN_IF_ERROR(co_await exchange.response().send_file(opened.fd(), at, ready));
    at += ready;
  }
  co_return Status::ok();
}

http::Awaitable<Status> Shards::send_member(http::Exchange& exchange, http::ResponseHead head,
                                            const store::OpenObject& opened, wire::ArchiveFormat format,
                                            const wire::ArchiveMember& member, uint64_t offset, uint64_t length,
                                            bool sends_bytes, store::ReadCheck check) {
  head.headers.set("Content-Type", "application/octet-stream");
  head.headers.set("Accept-Ranges", "bytes");
  if (format != wire::ARCHIVE_FORMAT_TAR) {
    // Decompressed as it goes: the object's blocks are checked as the decompressor reads them.
    CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
    if (!sends_bytes || length == 0) co_return Status::ok();
    const ArchiveBytes from_file = file_bytes(opened, check);
    CO_RETURN_IF_ERROR(co_await send_decompressed(exchange.response(), from_file, format, member, offset, length));
    note_member_read(length);
    co_return Status::ok();
  }
  const uint64_t start = member.offset() + offset;
  if (check == store::ReadCheck::kVerify && sends_bytes && length > 0 && checks_by_member_sum(member)) {
    // The member's own bytes, hashed whole before the head, then sent from the page cache.
    const int fd = opened.fd();
    const Status summed = co_await check_member(opened, member);
    if (!summed.is_ok()) co_return found_corrupt(opened, summed);
    CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
    CO_RETURN_IF_ERROR(co_await exchange.response().send_file(fd, start, length));
    note_member_read(length);
    co_return Status::ok();
  }
  store::BlockVerifier verifier(opened, check);
  // Only the member's blocks, the first before the head (nothing sent yet if it fails).
  if (sends_bytes && length > 0) CO_RETURN_IF_ERROR(co_await verify_block(verifier, opened, start));
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
  if (!sends_bytes || length == 0) co_return Status::ok();
  CO_RETURN_IF_ERROR(co_await send_checked(exchange, verifier, opened, start, length));
  note_member_read(length);
  co_return Status::ok();
}

uint64_t Shards::tar_length(std::span<const wire::ArchiveMember* const> members, std::string_view name_prefix,
                            bool ends) {
  std::string name;
  uint64_t length = ends ? 2 * 512 : 0;  // the end blocks
  for (const wire::ArchiveMember* m : members) {
    name.assign(name_prefix).append(m->name());
    length += archive::tar_member_bytes(name, m->size());
  }
  return length;
}

http::Awaitable<Status> Shards::send_tar(http::Exchange& exchange, http::ResponseHead head,
                                         const store::OpenObject& opened, wire::ArchiveFormat format,
                                         std::span<const wire::ArchiveMember* const> members,
                                         std::string_view name_prefix, bool ends, store::ReadCheck check) {
  const int64_t mtime = opened.record().mtime_unix_nanos() / 1'000'000'000;
  store::BlockVerifier verifier(opened, check);
  const bool is_tar = format == wire::ARCHIVE_FORMAT_TAR;
  // The first member's first block before the head: nothing is sent if it is corrupt.
  const auto first = std::find_if(members.begin(), members.end(),
                                  [](const wire::ArchiveMember* m) { return m->size() > 0; });
  if (is_tar && first != members.end()) {
    CO_RETURN_IF_ERROR(co_await verify_block(verifier, opened, (*first)->offset()));
  }
  if (!is_tar) {
    const ArchiveBytes compressed = file_bytes(opened, check);
    co_return co_await send_decompressed_tar(exchange, std::move(head), compressed, mtime, format, members,
                                             name_prefix, ends);
  }
  const ObjectBytes from_file = [this, &exchange, &verifier, &opened](uint64_t offset, uint64_t length,
                                                                      http::ResponseWriter&) {
    return send_checked(exchange, verifier, opened, offset, length);
  };
  co_return co_await send_tar_of(exchange, std::move(head), mtime, members, name_prefix, ends, from_file);
}

http::Awaitable<Status> Shards::send_tar_of(http::Exchange& exchange, http::ResponseHead head,
                                            int64_t mtime_unix_seconds,
                                            std::span<const wire::ArchiveMember* const> members,
                                            std::string_view name_prefix, bool ends, const ObjectBytes& bytes) {
  head.headers.set("Content-Type", "application/x-tar");
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), tar_length(members, name_prefix, ends)));
  std::string name;
  uint64_t sent = 0;
  for (const wire::ArchiveMember* m : members) {
    name.assign(name_prefix).append(m->name());
    const std::string header = archive::tar_header(name, m->size(), mtime_unix_seconds);
    CO_RETURN_IF_ERROR(co_await exchange.response().write(header));
    if (m->size() > 0) CO_RETURN_IF_ERROR(co_await bytes(m->offset(), m->size(), exchange.response()));
    const std::string padding = archive::tar_padding(m->size());
    if (!padding.empty()) CO_RETURN_IF_ERROR(co_await exchange.response().write(padding));
    sent += m->size();
  }
  if (ends) {
    const std::string end = archive::tar_end();
    CO_RETURN_IF_ERROR(co_await exchange.response().write(end));
  }
  note_member_read(sent);
  co_return Status::ok();
}

void Shards::note_member_read(uint64_t bytes) {
  member_reads_.add();
  member_bytes_.add(bytes);
}

}  // namespace silo::shards
