#pragma once

// batch::stream_batch: the answer of a batch GET (docs/shards.md "Batch GET"), one tar
// stream whose members are the request's entries in order, read from their owners ahead of
// the writer within a window of entries and bytes.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"
#include "http/server.h"
#include "wire/batch_json.h"

namespace silo::batch {

// One entry's answer: its head came, its body is still to be read (from the owner's
// connection, which stays open until this is destroyed).
class EntryBody {
 public:
  EntryBody(uint64_t size, int64_t mtime_unix_seconds, bool is_tar)
      : size_(size), mtime_unix_seconds_(mtime_unix_seconds), is_tar_(is_tar) {}
  virtual ~EntryBody() = default;
  // Reads up to out.size() bytes; 0 at the end. Errors: the connection's.
  virtual http::Awaitable<Result<size_t>> read(std::span<char> out) = 0;
  // All of it at once when it is in memory already (nothing read yet), else nullopt.
  virtual std::optional<std::string> take_whole() { return std::nullopt; }

  uint64_t size() const { return size_; }
  int64_t mtime_unix_seconds() const { return mtime_unix_seconds_; }
  // A selection's answer: tar members already (named, padded, no end blocks), sent as is.
  bool is_tar() const { return is_tar_; }

 private:
  uint64_t size_;
  int64_t mtime_unix_seconds_;
  bool is_tar_;
};

// Where the entries' bytes come from: the owners over HTTP (OwnerFetcher), a fake in tests.
class Fetcher {
 public:
  virtual ~Fetcher() = default;
  // Asks for `entry` and returns once its answer's head came. Errors: the entry's own
  // (kNotFound for a missing bucket, object or member, with its reason; kOutOfRange for a
  // range past its end; ...) or the owners' (kUnavailable).
  virtual http::Awaitable<Result<std::unique_ptr<EntryBody>>> open(const wire::BatchEntry& entry) = 0;
};

// The window (docs/shards.md "Batch GET"): requests in flight for the entries after the
// one being sent, and the bytes of those entries read ahead and held in memory. An entry
// that does not fit waits on its owner's connection, unread, until it fits or its turn
// comes (then it streams through a buffer of kStreamChunk bytes). Peak memory of one
// batch: window_bytes + kStreamChunk + the request.
struct StreamOptions {
  size_t window_entries = 64;
  uint64_t window_bytes = 64ull << 20;
};
inline constexpr size_t kStreamChunk = 256 * 1024;

// What a batch did, for its metrics.
struct StreamTally {
  uint64_t entries = 0;  // entries answered (the missing ones included)
  uint64_t missing = 0;  // entries answered as __404__/
  uint64_t bytes = 0;    // entry bytes sent (headers and padding not counted)
};

// Answers `request` on `exchange`: 200, application/x-tar, chunked, the entries' members in
// request order as each is ready, then the end-of-archive blocks. Returns an error when
// nothing was sent (the caller answers it: the first entry's own error, such as 404); a
// failure after the first byte (an entry that fails without continue_on_error, an owner
// that goes away mid-entry, the client gone) cuts the response (http::ResponseWriter::cut)
// and is returned too. Every read it started has ended when it returns.
http::Awaitable<Status> stream_batch(http::Exchange& exchange, const wire::BatchRequest& request, Fetcher& fetcher,
                                     const StreamOptions& options, StreamTally& tally);

}  // namespace silo::batch
