#include "shards/shards.h"


#include <fmt/format.h>

#include "archive/tar_writer.h"
#include "base/log.h"
#include "wire/object_json.h"

namespace silo::shards {

Result<std::optional<ArchiveRead>> parse_archive_read(
    const std::function<std::optional<std::string>(std::string_view)>& param) {
  const std::optional<std::string> path = param("archpath");
  const std::optional<std::string> mode = param("archmode");
  const std::optional<std::string> list = param("archlist");
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
                                    "Member reads of objects that are no archive or a corrupt one.")) {}

http::Awaitable<Result<std::shared_ptr<const wire::ArchiveIndex>>> Shards::index_of(
    const ObjectRef& object, const store::OpenObject& opened) {
  const uint64_t generation = opened.record().generation();
  Result<std::string> kept = co_await store_.get_index(object);
  if (kept) {
    auto index = wire::decode<wire::ArchiveIndex>(*kept, wire::Source::kDisk);
    if (index && index->generation() == generation) {
      co_return std::make_shared<const wire::ArchiveIndex>(std::move(*index));
    }
  } else if (kept.error().code() != Code::kNotFound) {
    co_return std::move(kept).error();
  }
  // None for this version (not named like an archive, or written before indexes): built
  // from the headers of the version this read opened, then kept.
  const int fd = opened.fd();
  const uint64_t size = opened.record().size();
  Result<wire::ArchiveIndex> built =
      co_await reader_.run([fd, size]() -> Result<wire::ArchiveIndex> { return store::index_of_fd(fd, size); });
  if (!built) {
    index_failures_.add();
    Status status = std::move(built).error();
    co_return status.annotate("{}", object.name);
  }
  index_builds_.add();
  built->set_generation(generation);
  const Status kept_now = co_await store_.put_index(object, generation, wire::encode(*built));
  if (!kept_now.is_ok()) SILO_LOG_INFO("the index of {} is not kept: {}", object.name, kept_now);
  co_return std::make_shared<const wire::ArchiveIndex>(std::move(*built));
}

Result<const wire::ArchiveMember*> Shards::find(const wire::ArchiveIndex& index, std::string_view name,
                                                const ObjectRef& object) {
  const wire::ArchiveMember* member = archive::find_member(index, name);
  if (member == nullptr) {
    return Status::not_found("archive {} has no member {}", object.name, name).with_reason(archive::kNoSuchMember);
  }
  return member;
}

http::Awaitable<Status> Shards::send_member(http::Exchange& exchange, http::ResponseHead head,
                                            const store::OpenObject& opened, const wire::ArchiveMember& member,
                                            uint64_t offset, uint64_t length, bool sends_bytes) {
  head.headers.set("Content-Type", "application/octet-stream");
  head.headers.set("Accept-Ranges", "bytes");
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
  if (!sends_bytes || length == 0) co_return Status::ok();
  CO_RETURN_IF_ERROR(co_await exchange.response().send_file(opened.fd(), member.offset() + offset, length));
  note_member_read(length);
  co_return Status::ok();
}

http::Awaitable<Status> Shards::send_tar(http::Exchange& exchange, http::ResponseHead head,
                                         const store::OpenObject& opened,
                                         std::span<const wire::ArchiveMember* const> members) {
  const int64_t mtime = opened.record().mtime_unix_nanos() / 1'000'000'000;
  uint64_t length = 2 * 512;  // the end blocks
  for (const wire::ArchiveMember* m : members) length += archive::tar_member_bytes(m->name(), m->size());
  head.headers.set("Content-Type", "application/x-tar");
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), length));
  uint64_t sent = 0;
  for (const wire::ArchiveMember* m : members) {
    const std::string header = archive::tar_header(m->name(), m->size(), mtime);
    CO_RETURN_IF_ERROR(co_await exchange.response().write(header));
    if (m->size() > 0) CO_RETURN_IF_ERROR(co_await exchange.response().send_file(opened.fd(), m->offset(), m->size()));
    const std::string padding = archive::tar_padding(m->size());
    if (!padding.empty()) CO_RETURN_IF_ERROR(co_await exchange.response().write(padding));
    sent += m->size();
  }
  const std::string end = archive::tar_end();
  CO_RETURN_IF_ERROR(co_await exchange.response().write(end));
  note_member_read(sent);
  co_return Status::ok();
}

void Shards::note_member_read(uint64_t bytes) {
  member_reads_.add();
  member_bytes_.add(bytes);
}

}  // namespace silo::shards
