// Members of compressed archives (tgz, tar.lz4, zip; docs/shards.md "Formats"): a disk
// thread decompresses them (archive::read_member, blocking; from a file or through an
// erasure-coded object's slices: Shards::ArchiveBytes) into a queue of a few chunks
// that the network side sends, so memory stays a few chunks whatever the member's size
// and a slow client holds the decompression back rather than filling memory.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <condition_variable>
#include <deque>

#include "archive/compressed.h"
#include "archive/tar_writer.h"
#include "async/signal.h"
#include "base/mutex.h"
#include "shards/shards.h"

namespace silo::shards {
namespace {

namespace asio = boost::asio;

// Chunks from the thread that decompresses to the coroutine that sends them.
class ChunkQueue {
 public:
  static constexpr size_t kMaxChunks = 4;

  // The decompressing thread: waits while the queue is full; false once the sender gave up.
  bool push(std::span<const char> bytes) {
    MutexLock lock(mutex_);
    while (chunks_.size() >= kMaxChunks && !is_abandoned_) lock.wait(room_);
    if (is_abandoned_) return false;
    chunks_.emplace_back(bytes.data(), bytes.size());
    lock.unlock();
    changed_.notify();
    return true;
  }
  // The decompressing thread, at its end.
  void close(Status end) {
    {
      MutexLock lock(mutex_);
      end_ = std::move(end);
      is_closed_ = true;
    }
    changed_.notify();
  }
  // The sender: the next chunk, or nullopt at the end (end() then says how it ended).
  http::Awaitable<std::optional<std::string>> pop() {
    while (true) {
      const uint64_t seen = changed_.count();
      {
        MutexLock lock(mutex_);
        if (!chunks_.empty()) {
          std::optional<std::string> chunk(std::move(chunks_.front()));
          chunks_.pop_front();
          room_.notify_one();
          co_return chunk;
        }
        if (is_closed_) co_return std::nullopt;
      }
      co_await changed_.wait(seen);
    }
  }
  Status end() const {
    MutexLock lock(mutex_);
    return end_;
  }
  // The sender gave up (its client went away): the thread's next push() fails; waits for
  // the thread to end, as it reads the object the caller holds open.
  http::Awaitable<void> abandon() {
    {
      MutexLock lock(mutex_);
      is_abandoned_ = true;
      room_.notify_all();
    }
    while (true) {
      std::optional<std::string> dropped = co_await pop();
      if (!dropped) break;
    }
  }

 private:
  mutable Mutex mutex_;
  std::condition_variable room_;
  std::deque<std::string> chunks_ GUARDED_BY(mutex_);
  bool is_abandoned_ GUARDED_BY(mutex_) = false;
  bool is_closed_ GUARDED_BY(mutex_) = false;
  Status end_ GUARDED_BY(mutex_);
  async::Signal changed_;
};

// Runs the decompression of `range` of `member` on `pool`, into `queue`. A named
// coroutine: its parameters are copied into its frame (docs/adr/0003).
http::Awaitable<void> decompress(async::DiskExecutor* pool, std::shared_ptr<ChunkQueue> queue,
                                 const Shards::ArchiveBytes* bytes, wire::ArchiveFormat format,
                                 const wire::ArchiveMember* member, archive::MemberRange range) {
  ChunkQueue* q = queue.get();
  Status outcome = co_await pool->run([q, bytes, format, member, range]() -> Status {
    return archive::read_member(format, bytes->read, bytes->size, *member, range,
                                [q](std::span<const char> chunk) -> Status {
                                  if (!q->push(chunk)) return Status::cancelled("the reader went away");
                                  return Status::ok();
                                });
  });
  queue->close(std::move(outcome));
}

}  // namespace

Shards::ArchiveBytes Shards::file_bytes(const store::OpenObject& opened, store::ReadCheck check) {
  auto verifier = std::make_shared<store::BlockVerifier>(opened, check);
  const uint64_t size = opened.record().size();
  archive::ReadAt read = [verifier, pread = store::pread_of(opened.fd()), size](uint64_t offset,
                                                                                 std::span<char> out) -> Result<size_t> {
    const uint64_t last = std::min<uint64_t>(offset + out.size(), size);
    for (uint64_t at = offset; at < last;) {
      const uint64_t ready = verifier->verified_bytes(at, last - at);
      if (ready > 0) {
        at += ready;
      } else {
        RETURN_IF_ERROR(verifier->verify(at));
      }
    }
    return pread(offset, out);
  };
  return ArchiveBytes{std::move(read), size};
}

http::Awaitable<Status> Shards::send_decompressed(http::ResponseWriter& out, const ArchiveBytes& bytes,
                                                  wire::ArchiveFormat format, const wire::ArchiveMember& member,
                                                  uint64_t offset, uint64_t length) {
  if (length == 0) co_return Status::ok();
  auto queue = std::make_shared<ChunkQueue>();
  const archive::MemberRange range{.offset = offset, .length = length};
  const auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, decompress(&decompressor_, queue, &bytes, format, &member, range), asio::detached);
  uint64_t sent = 0;
  Status written;
  while (true) {
    std::optional<std::string> chunk = co_await queue->pop();
    if (!chunk) break;
    written = co_await out.write(*chunk);
    if (!written.is_ok()) break;
    sent += chunk->size();
  }
  if (!written.is_ok()) {
    co_await queue->abandon();
    co_return written;
  }
  Status ended = queue->end();
  if (!ended.is_ok()) co_return ended;
  if (sent != length) co_return Status::internal("{} of {} member bytes decompressed", sent, length);
  co_return Status::ok();
}

http::Awaitable<Status> Shards::send_decompressed_tar(http::Exchange& exchange, http::ResponseHead head,
                                                      const ArchiveBytes& bytes, int64_t mtime_unix_seconds,
                                                      wire::ArchiveFormat format,
                                                      std::span<const wire::ArchiveMember* const> members,
                                                      std::string_view name_prefix, bool ends) {
  head.headers.set("Content-Type", "application/x-tar");
  http::ResponseWriter& out = exchange.response();
  CO_RETURN_IF_ERROR(co_await out.begin(std::move(head), tar_length(members, name_prefix, ends)));
  std::string name;
  uint64_t sent = 0;
  for (const wire::ArchiveMember* m : members) {
    name.assign(name_prefix).append(m->name());
    const std::string header = archive::tar_header(name, m->size(), mtime_unix_seconds);
    CO_RETURN_IF_ERROR(co_await out.write(header));
    CO_RETURN_IF_ERROR(co_await send_decompressed(out, bytes, format, *m, 0, m->size()));
    const std::string padding = archive::tar_padding(m->size());
    if (!padding.empty()) CO_RETURN_IF_ERROR(co_await out.write(padding));
    sent += m->size();
  }
  if (ends) {
    const std::string end_blocks = archive::tar_end();
    CO_RETURN_IF_ERROR(co_await out.write(end_blocks));
  }
  note_member_read(sent);
  co_return Status::ok();
}

}  // namespace silo::shards
