// Archive indexes (docs/shards.md): built from an archive's bytes when it is installed,
// kept in the `indexes` family of the mountpath that holds its record, removed with it.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "archive/compressed.h"
#include "archive/members.h"
#include "base/hash.h"
#include "base/log.h"
#include "store/detail/store_impl.h"

namespace silo::store {

archive::ReadAt pread_of(int fd) {
  return [fd](uint64_t offset, std::span<char> out) -> Result<size_t> {
    const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0) return Status::from_errno(errno, "read an archive");
    return static_cast<size_t>(n);
  };
}

Result<wire::ArchiveIndex> index_of_fd(int fd, uint64_t size) {
  const archive::ReadAt read = pread_of(fd);
  ASSIGN_OR_RETURN(const wire::ArchiveFormat format, archive::sniff_format(read, size));
  return archive::index_archive(format, read, size);
}

Result<wire::ArchiveIndex> index_of_fd(int fd, uint64_t size, wire::ArchiveFormat format) {
  return archive::index_archive(format, pread_of(fd), size);
}

void add_member_sums(int fd, const wire::ObjectRecord& record, wire::ArchiveIndex& index) {
  if (index.format() != wire::ARCHIVE_FORMAT_TAR || index.members().empty()) return;
  constexpr size_t kChunk = 1 << 20;
  std::vector<char> buffer(kChunk);
  hash::Xxh3Stream whole;
  std::vector<uint64_t> sums(static_cast<size_t>(index.members_size()));
  std::optional<hash::Xxh3Stream> member;  // of members[m], while its bytes come
  int m = 0;
  const uint64_t size = record.size();
  for (uint64_t at = 0; at < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - at));
    const ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(at));
    if (n <= 0) return;  // unreadable or shorter: no sums (reads check blocks instead)
    const auto got = static_cast<uint64_t>(n);
    whole.update(std::span<const char>(buffer.data(), got));
    // Members whose data lies in [at, at + got), in archive order.
    while (m < index.members_size()) {
      const wire::ArchiveMember& it = index.members(m);
      const uint64_t begin = std::max(it.offset(), at);
      const uint64_t end = std::min(it.offset() + it.size(), at + got);
      if (it.offset() >= at + got && it.size() > 0) break;  // starts in a later chunk
      if (!member) member.emplace();
      if (begin < end) member->update(std::span<const char>(buffer.data() + (begin - at), end - begin));
      if (it.offset() + it.size() > at + got) break;  // goes on in the next chunk
      sums[static_cast<size_t>(m)] = member->digest();
      member.reset();
      ++m;
    }
    at += got;
  }
  if (m != index.members_size() || whole.digest() != record.xxh3()) return;
  for (int i = 0; i < index.members_size(); ++i) index.mutable_members(i)->set_xxh3(sums[static_cast<size_t>(i)]);
}

namespace detail {

std::string index_of_archive(const std::string& path, const ObjectRef& object, const wire::ObjectRecord& record) {
  const std::optional<wire::ArchiveFormat> format = archive::format_of_name(object.name);
  if (!format) return "";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";  // the install that follows reports it
  Result<wire::ArchiveIndex> index = index_of_fd(fd, record.size(), *format);
  if (index) add_member_sums(fd, record, *index);
  ::close(fd);
  if (!index) {
    SILO_LOG_INFO("{}/{} is named like an archive but has no index: {}", object.bucket_id, object.name,
                  index.status());
    return "";
  }
  index->set_generation(record.generation());
  return wire::encode(std::move(*index));
}

Awaitable<Result<std::string>> StoreImpl::get_index(const ObjectRef& object) {
  const OpGate::Ticket ticket = gate_.enter();
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run([this, &object, owner]() -> Result<std::string> {
    return index_blocking(object, owner);
  });
}

Result<std::string> StoreImpl::get_index_now(const ObjectRef& object) {
  const OpGate::Ticket ticket = gate_.enter();
  return index_blocking(object, owner_of(object));
}

Result<std::string> StoreImpl::index_blocking(const ObjectRef& object, size_t owner) {
  ASSIGN_OR_RETURN(const Found found, find_record(object, owner));
  return mountpaths_[found.index]->meta().get_index(object.bucket_id, object.name);
}

Awaitable<Status> StoreImpl::put_index(const ObjectRef& object, uint64_t generation, std::string bytes) {
  const OpGate::Ticket ticket = gate_.enter();
  if (is_closed_.load()) co_return Status::failed_precondition("store is closed");
  const size_t owner = owner_of(object);
  co_return co_await mountpaths_[owner]->disk().run([this, &object, owner, generation, &bytes]() -> Status {
    const auto lock = locks_.lock(object);
    ASSIGN_OR_RETURN(const Found found, find_record(object, owner));
    if (found.record.generation() != generation) {
      return Status::aborted("{}/{} changed while its archive index was built", object.bucket_id, object.name);
    }
    return mountpaths_[found.index]->meta().put_index(object.bucket_id, object.name, bytes);
  });
}

}  // namespace detail
}  // namespace silo::store
