#include "batch/batch_stream.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "archive/tar_writer.h"
#include "async/signal.h"
#include "base/mutex.h"

namespace silo::batch {
namespace {

namespace asio = boost::asio;

constexpr std::string_view kMissingPrefix = "__404__/";

// One entry on its way: what its read-ahead task left for the writer. With neither a body,
// bytes nor an error, the writer asks again (a read ahead that failed midway).
struct Slot {
  std::unique_ptr<EntryBody> body;  // the answer, unread: the writer streams it
  std::string bytes;                // the answer read ahead whole
  bool is_read_ahead = false;
  int64_t mtime_unix_seconds = 0;   // of what was read ahead
  std::optional<Status> error;      // the entry's own error
  bool is_done = false;             // its task ended: the writer may take it
};

// Shared by the writer and the read-ahead tasks, which may run on other threads of the
// io_context. Slots are a ring: entry i lives in slots[i % slots.size()], and entry
// i + window_entries + 1 starts only once the writer took entry i out.
struct Window {
  Mutex mutex;
  std::vector<Slot> slots GUARDED_BY(mutex);
  size_t turn GUARDED_BY(mutex) = 0;           // the entry the writer waits for or sends
  uint64_t bytes_ahead GUARDED_BY(mutex) = 0;  // bytes read ahead and not sent yet
  size_t running GUARDED_BY(mutex) = 0;        // tasks not ended
  bool is_cancelled GUARDED_BY(mutex) = false;
  async::Signal changed;  // a task ended, the turn moved, bytes were sent, or cancelled
};

void settle(Window& window, size_t index, Slot result) {
  {
    MutexLock lock(window.mutex);
    if (!window.is_cancelled) {
      Slot& slot = window.slots[index % window.slots.size()];
      slot = std::move(result);
      slot.is_done = true;
    }
    --window.running;
  }
  window.changed.notify();
}

// Reads `size` bytes of `body` into `out`; kUnavailable when it ends short.
http::Awaitable<Status> read_whole(EntryBody& body, std::string& out) {
  const uint64_t size = body.size();
  out.resize(size);
  uint64_t got = 0;
  while (got < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size - got, kStreamChunk));
    Result<size_t> n = co_await body.read(std::span<char>(out.data() + got, want));
    if (!n) co_return std::move(n).error();
    if (*n == 0) co_return Status::unavailable("the answer ended after {} of its {} bytes", got, size);
    got += *n;
  }
  co_return Status::ok();
}

// Entry `index`'s task: asks its owner, then reads the answer ahead once it fits in the
// window's bytes, or leaves it unread for the writer when its turn comes first. A named
// coroutine: its parameters are copied into its frame (docs/adr/0003).
http::Awaitable<void> read_ahead(std::shared_ptr<Window> window, Fetcher* fetcher, const wire::BatchEntry* entry,
                                 size_t index, uint64_t window_bytes) {
  Slot result;
  Result<std::unique_ptr<EntryBody>> opened = co_await fetcher->open(*entry);
  if (!opened) {
    result.error = std::move(opened).error();
    settle(*window, index, std::move(result));
    co_return;
  }
  std::unique_ptr<EntryBody> body = std::move(*opened);
  const uint64_t size = body->size();
  bool fits = false;
  while (true) {
    const uint64_t seen = window->changed.count();
    {
      MutexLock lock_turn(window->mutex);
      if (window->is_cancelled || window->turn == index) break;
      if (window->bytes_ahead + size <= window_bytes) {
        window->bytes_ahead += size;
        fits = true;
        break;
      }
    }
    co_await window->changed.wait(seen);
  }
  if (fits) {
    result.mtime_unix_seconds = body->mtime_unix_seconds();
    std::optional<std::string> whole = body->take_whole();
    Status read;
    if (whole) {
      result.bytes = std::move(*whole);
    } else {
      read = co_await read_whole(*body, result.bytes);
    }
    body.reset();  // the connection goes back to the pool, or closes
    if (read.is_ok()) {
      result.is_read_ahead = true;
    } else {
      // The writer asks again when its turn comes (an owner may close a connection left
      // waiting, or go away).
      result.bytes = std::string();
      MutexLock lock_bytes(window->mutex);
      window->bytes_ahead -= size;
    }
  } else {
    result.body = std::move(body);
  }
  settle(*window, index, std::move(result));
}

// The writer's side of one batch.
class BatchWriter {
 public:
  BatchWriter(http::ResponseWriter& out, const wire::BatchRequest& request, Fetcher& fetcher, Window& window,
              StreamTally& tally)
      : out_(out), request_(request), fetcher_(fetcher), window_(window), tally_(tally) {}

  // Whether entry `index`'s task has ended (take() would not wait).
  bool is_ready(size_t index) {
    MutexLock lock(window_.mutex);
    return window_.slots[index % window_.slots.size()].is_done;
  }

  // Sends what small members wait in the output buffer (before waiting for an entry, and
  // once it holds kStreamChunk bytes): many samples leave in one write.
  http::Awaitable<Status> flush() {
    if (pending_.empty()) co_return Status::ok();
    const Status written = co_await out_.write(pending_);
    pending_.clear();
    co_return written;
  }

  // Waits for entry `index`'s task and takes its slot.
  http::Awaitable<Slot> take(size_t index) {
    {
      MutexLock lock_turn(window_.mutex);
      window_.turn = index;
    }
    window_.changed.notify();
    while (true) {
      const uint64_t seen = window_.changed.count();
      {
        MutexLock lock_slot(window_.mutex);
        Slot& slot = window_.slots[index % window_.slots.size()];
        if (slot.is_done) {
          Slot taken = std::move(slot);
          slot = Slot();
          co_return taken;
        }
      }
      co_await window_.changed.wait(seen);
    }
  }

  // Sends entry `index` from its slot.
  http::Awaitable<Status> send(size_t index, Slot& slot) {
    const wire::BatchEntry& entry = request_.entries[index];
    if (!slot.is_read_ahead && !slot.body && !slot.error) co_await reopen(entry, slot);
    if (slot.error) co_return co_await send_failed(entry, index, *slot.error);
    ++tally_.entries;
    if (slot.is_read_ahead) {
      const uint64_t size = slot.bytes.size();
      const Status sent = co_await send_member(entry, slot.bytes, size, slot.mtime_unix_seconds);
      {
        MutexLock lock(window_.mutex);
        window_.bytes_ahead -= size;
      }
      window_.changed.notify();
      co_return sent;
    }
    co_return co_await stream(entry, index, slot);
  }

  // After the last entry: the end-of-archive blocks.
  http::Awaitable<Status> end() {
    CO_RETURN_IF_ERROR(co_await begin());
    pending_.append(archive::tar_end());
    co_return co_await flush();
  }

 private:
  http::Awaitable<void> reopen(const wire::BatchEntry& entry, Slot& slot) {
    Result<std::unique_ptr<EntryBody>> again = co_await fetcher_.open(entry);
    if (again) {
      slot.body = std::move(*again);
    } else {
      slot.error = std::move(again).error();
    }
  }

  http::Awaitable<Status> begin() {
    if (out_.has_begun()) co_return Status::ok();
    http::ResponseHead head;
    head.headers.set("Content-Type", "application/x-tar");
    co_return co_await out_.begin(std::move(head), std::nullopt);
  }

  // A missing entry with continue_on_error: an empty member under __404__/; else the error.
  http::Awaitable<Status> send_failed(const wire::BatchEntry& entry, size_t index, Status& error) {
    if (error.code() != Code::kNotFound || !request_.continue_on_error) {
      co_return error.annotate("batch entry {} ({})", index, entry.tar_name());
    }
    ++tally_.entries;
    ++tally_.missing;
    CO_RETURN_IF_ERROR(co_await begin());
    std::string missing(kMissingPrefix);
    missing += entry.tar_name();
    pending_.append(archive::tar_header(missing, 0, 0));
    if (pending_.size() >= kStreamChunk) co_return co_await flush();
    co_return Status::ok();
  }

  // A whole answer in memory: its header, the bytes, the padding; a small one into the
  // output buffer (one write for many samples rather than three each).
  http::Awaitable<Status> send_member(const wire::BatchEntry& entry, std::string_view bytes, uint64_t size,
                                      int64_t mtime) {
    CO_RETURN_IF_ERROR(co_await begin());
    const std::string header = header_of(entry, size, mtime);
    const std::string padding = padding_of(entry, size);
    tally_.bytes += size;
    if (bytes.size() <= kStreamChunk) {
      pending_.append(header).append(bytes).append(padding);
      if (pending_.size() >= kStreamChunk) co_return co_await flush();
      co_return Status::ok();
    }
    pending_.append(header);
    CO_RETURN_IF_ERROR(co_await flush());
    CO_RETURN_IF_ERROR(co_await out_.write(bytes));
    pending_.append(padding);
    co_return Status::ok();
  }

  // What goes around an entry's answer of `size` bytes in the stream: its tar header and
  // padding; nothing for a selection, whose answer is members already.
  static std::string header_of(const wire::BatchEntry& entry, uint64_t size, int64_t mtime) {
    return entry.archmode ? std::string() : archive::tar_header(entry.tar_name(), size, mtime);
  }
  static std::string padding_of(const wire::BatchEntry& entry, uint64_t size) {
    return entry.archmode ? std::string() : archive::tar_padding(size);
  }

  // An answer left unread on its owner's connection: through one buffer, chunk by chunk.
  // The first chunk is read before the member's header goes out, so an owner that closed
  // the waiting connection costs one more request rather than the batch.
  http::Awaitable<Status> stream(const wire::BatchEntry& entry, size_t index, Slot& slot) {
    if (chunk_.empty()) chunk_.resize(kStreamChunk);
    Result<size_t> first = co_await first_chunk(*slot.body);
    if (!first) {
      slot.body.reset();
      co_await reopen(entry, slot);
      if (slot.error) co_return co_await send_failed(entry, index, *slot.error);
      first = co_await first_chunk(*slot.body);
      if (!first) co_return std::move(first).error().annotate("batch entry {} ({})", index, entry.tar_name());
    }
    EntryBody& body = *slot.body;
    const uint64_t size = body.size();
    CO_RETURN_IF_ERROR(co_await begin());
    pending_.append(header_of(entry, size, body.mtime_unix_seconds()));
    CO_RETURN_IF_ERROR(co_await flush());
    uint64_t sent = 0;
    size_t n = *first;
    while (true) {
      if (n > 0) CO_RETURN_IF_ERROR(co_await out_.write(std::span<const char>(chunk_.data(), n)));
      sent += n;
      if (sent == size) break;
      Result<size_t> more = co_await body.read(std::span<char>(chunk_.data(), read_size(size - sent)));
      if (!more) co_return std::move(more).error().annotate("batch entry {} ({})", index, entry.tar_name());
      if (*more == 0) {
        co_return Status::unavailable("batch entry {} ({}): the answer ended after {} of its {} bytes", index,
                                      entry.tar_name(), sent, size);
      }
      n = *more;
    }
    tally_.bytes += size;
    pending_.append(padding_of(entry, size));
    co_return Status::ok();
  }

  http::Awaitable<Result<size_t>> first_chunk(EntryBody& body) {
    if (body.size() == 0) co_return size_t{0};
    Result<size_t> n = co_await body.read(std::span<char>(chunk_.data(), read_size(body.size())));
    if (n && *n == 0) co_return Status::unavailable("the answer ended before its first byte");
    co_return n;
  }

  size_t read_size(uint64_t remaining) const {
    return static_cast<size_t>(std::min<uint64_t>(remaining, chunk_.size()));
  }

  http::ResponseWriter& out_;
  const wire::BatchRequest& request_;
  Fetcher& fetcher_;
  Window& window_;
  StreamTally& tally_;
  std::vector<char> chunk_;  // the buffer of streamed entries, sized at the first
  std::string pending_;      // small members not written yet (up to about kStreamChunk)
};

// Stops every task: they end at their next step, dropping what they hold.
http::Awaitable<void> cancel_and_wait(Window& window) {
  {
    MutexLock lock_cancel(window.mutex);
    window.is_cancelled = true;
  }
  window.changed.notify();
  while (true) {
    const uint64_t seen = window.changed.count();
    {
      MutexLock lock_running(window.mutex);
      if (window.running == 0) {
        window.slots.clear();  // answers left unread close their connections
        co_return;
      }
    }
    co_await window.changed.wait(seen);
  }
}

}  // namespace

http::Awaitable<Status> stream_batch(http::Exchange& exchange, const wire::BatchRequest& request, Fetcher& fetcher,
                                     const StreamOptions& options, StreamTally& tally) {
  auto window = std::make_shared<Window>();
  {
    MutexLock lock_slots(window->mutex);
    window->slots.resize(options.window_entries + 1);
  }
  BatchWriter writer(exchange.response(), request, fetcher, *window, tally);
  const auto executor = exchange.executor();
  const size_t count = request.entries.size();
  size_t next = 0;  // the next entry to ask for
  Status outcome;
  for (size_t i = 0; i < count && outcome.is_ok(); ++i) {
    while (next < count && next <= i + options.window_entries) {
      {
        MutexLock lock_running(window->mutex);
        ++window->running;
      }
      asio::co_spawn(executor, read_ahead(window, &fetcher, &request.entries[next], next, options.window_bytes),
                     asio::detached);
      ++next;
    }
    if (!writer.is_ready(i)) outcome = co_await writer.flush();
    if (!outcome.is_ok()) break;
    Slot slot = co_await writer.take(i);
    outcome = co_await writer.send(i, slot);
  }
  if (outcome.is_ok()) outcome = co_await writer.end();
  co_await cancel_and_wait(*window);
  if (!outcome.is_ok() && exchange.response().has_begun()) exchange.response().cut();
  co_return outcome;
}

}  // namespace silo::batch
