#pragma once

// A remote store behind a bucket (DESIGN.md "Backends"): what a cold GET, a prefetch, an
// evict and a write-through need of S3 or GCS, behind one interface.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/message.h"

namespace silo::backend {

// An object as the backend lists or describes it.
struct RemoteObject {
  std::string name;
  uint64_t size = 0;
  std::string etag;                // unquoted
  int64_t mtime_unix_seconds = 0;  // Last-Modified
  std::string content_type;        // HEAD and GET only
};

struct RemotePage {
  std::vector<RemoteObject> objects;  // in name order
  std::string next_token;             // the last name when more follow; empty on the last page
};

// Bytes [offset, offset + length) of an object.
struct RemoteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// How to read an object.
struct GetOptions {
  std::optional<RemoteRange> range;  // unset: the whole object
  std::string if_match;              // set: only this ETag (else kFailedPrecondition)
  // Called once, before the first byte reaches the sink, with what the backend says of the
  // object (its whole size, ETag, Last-Modified).
  std::function<void(const RemoteObject&)> on_object;
};

// Takes object bytes in order; an error stops the transfer.
using Sink = std::function<http::Awaitable<Status>(std::span<const char> bytes)>;
// Fills `out` with object bytes from `offset` on and says how many (it may be asked for
// the same bytes again: a retry or a multipart part starts over).
using Source = std::function<http::Awaitable<Result<size_t>>(uint64_t offset, std::span<char> out)>;

// One bucket of a remote store. Errors: kNotFound (reason NoSuchKey / NoSuchBucket),
// kPermissionDenied (bad keys or no access), kInvalidArgument (refused request),
// kFailedPrecondition (the object changed under a resumed read), kUnavailable and
// kDeadlineExceeded (the backend failed after every retry). Thread-safe.
class ObjectBackend {
 public:
  virtual ~ObjectBackend() = default;
  // Whether the bucket exists and these credentials reach it.
  virtual http::Awaitable<Status> check_bucket() = 0;
  virtual http::Awaitable<Result<RemoteObject>> head(std::string name) = 0;
  // Sends the object's bytes (or a range of them) to `sink`, each once and in order; a
  // transfer cut by the network resumes where it stopped, from the same version only.
  virtual http::Awaitable<Result<RemoteObject>> get(std::string name, GetOptions options,
                                                    Sink sink) = 0;
  // Writes `size` bytes read from `source` as object `name` (multipart past the part size).
  virtual http::Awaitable<Result<RemoteObject>> put(std::string name, uint64_t size,
                                                    Source source) = 0;
  // Deleting an object that is not there succeeds.
  virtual http::Awaitable<Status> remove(std::string name) = 0;
  // Up to `limit` objects whose names start with `prefix` and sort after `token` (any name;
  // a page's next_token continues the listing).
  virtual http::Awaitable<Result<RemotePage>> list(std::string prefix, std::string token,
                                                   size_t limit) = 0;
};

}  // namespace silo::backend
