#pragma once

// cache::Fetch: one object coming from its backend into the store (docs/remote-buckets.md
// "Cold GET").
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "base/mutex.h"
#include "base/object_ref.h"
#include "base/result.h"
#include "base/thread_annotations.h"
#include "async/signal.h"
#include "wire/codec.h"

namespace silo::cache {

// One object being fetched from its backend into the store. The fetch coroutine (owned by
// the Cache, detached from any request) appends bytes to a work file and moves `written`
// on; readers send what is written so far from their own descriptor of that file
// (read_fd()) and wait on signal() for more. Shared (shared_ptr) by the Cache's table of
// fetches in flight, the fetch coroutine and every reader. Thread-safe.
class Fetch {
 public:
  Fetch(wire::Bucket bucket, ObjectRef object) : bucket_(std::move(bucket)), object_(std::move(object)) {}
  ~Fetch();
  Fetch(const Fetch&) = delete;
  Fetch& operator=(const Fetch&) = delete;

  // What a reader sees at one moment.
  struct Progress {
    std::optional<wire::ObjectRecord> record;  // set once the backend described the object
    uint64_t written = 0;                      // bytes in the work file
    bool is_done = false;
    Status failure;  // once done: ok when committed
  };
  Progress progress() const;
  // Notified on every change of the progress.
  async::Signal& signal() { return signal_; }
  const wire::Bucket& bucket() const { return bucket_; }
  const ObjectRef& object() const { return object_; }
  // A read-only descriptor of the work file; valid once the record is set (it stays
  // valid after the commit or discard).
  int read_fd() const { return read_fd_; }

  // The fetch coroutine's side.
  // Requires: called once, before set_record().
  void set_read_fd(int fd) { read_fd_ = fd; }
  void set_record(wire::ObjectRecord record);
  void add_written(uint64_t n);
  void finish(Status status);

  // A DELETE of the object ran while it was being fetched: the commit is refused (checked
  // under the object lock), so a deleted object is never cached behind the delete.
  void mark_deleted() { is_deleted_ = true; }
  bool is_deleted() const { return is_deleted_; }

 private:
  const wire::Bucket bucket_;
  const ObjectRef object_;
  async::Signal signal_;
  mutable Mutex mutex_;
  std::optional<wire::ObjectRecord> record_ GUARDED_BY(mutex_);
  uint64_t written_ GUARDED_BY(mutex_) = 0;
  bool is_done_ GUARDED_BY(mutex_) = false;
  Status failure_ GUARDED_BY(mutex_);
  int read_fd_ = -1;  // set before the record, then only read
  std::atomic<bool> is_deleted_{false};
};

}  // namespace silo::cache
