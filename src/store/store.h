#pragma once

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "archive/tar_reader.h"
#include "base/object_ref.h"
#include "base/result.h"
#include "store/file_system.h"
#include "wire/codec.h"

namespace silo::store {

template <typename T>
using Awaitable = boost::asio::awaitable<T>;

enum class Durability { kFsync, kPageCache };

// Decides under the object's lock whether a write may replace what is there now
// (`current`, nullptr when the object does not exist): S3's If-Match / If-None-Match.
// An error is returned to the writer as is, and nothing becomes visible.
using Precondition = std::function<Status(const wire::ObjectRecord* current)>;

struct PutOptions {
  Durability durability = Durability::kFsync;
  // Only the descriptive fields are used: content_type, content_encoding,
  // content_disposition, content_language, cache_control, expires, user_metadata, tags
  // checksums and remote are copied into the committed record. The store fills the rest (size,
  // generation, xxh3, md5_hex, mtime...).
  wire::ObjectRecord attributes;
  // When set, commit() fails with kInvalidArgument, reason "BadDigest", if the bytes' MD5
  // (hex, any case) differs.
  std::optional<std::string> expected_md5_hex;
  // When set, commit() fails with kInvalidArgument, reason "IncompleteBody", unless
  // exactly this many bytes came.
  std::optional<uint64_t> expected_size;
  // Evaluated in commit (and complete_upload) just before the new object is renamed into
  // place. Not used for parts.
  Precondition precondition;
  // The bytes' MD5 is not computed and md5_hex stays empty: an object fetched from a remote
  // bucket's backend, whose ETag is the backend's (MD5 was half of a cold GET's CPU).
  bool skips_md5 = false;
  // A copy of an object that exists elsewhere (rebalance, get-from-neighbor): the record
  // keeps this one's times, ETag, MD5 and parts, and commit() fails with kDataLoss unless
  // the bytes have its size and XXH3. Set `attributes` to the same record.
  std::optional<wire::ObjectRecord> original;
};

// One PUT in flight: bytes go to a work file on the object's mountpath while XXH3 and
// MD5 are computed (on the disk executor). commit() makes it visible atomically; an
// uncommitted writer removes its work file when destroyed. Owned by the request handler.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  virtual Awaitable<Status> write(std::span<const char> data) = 0;
  // Records an `x-amz-checksum-*` value (algorithm "CRC32", "SHA256"...; base64) that the
  // caller verified itself, e.g. from a trailer that arrives after the body. Overrides
  // the same algorithm in PutOptions::attributes. Call before commit().
  virtual void set_checksum(std::string algorithm, std::string base64_value) = 0;
  // The descriptive fields commit() copies into the record (PutOptions::attributes): a
  // writer that learns them while the bytes arrive (a cold GET) sets them here.
  virtual wire::ObjectRecord& attributes() = 0;
  // A new read-only descriptor of the work file, for reading the bytes written so far
  // while the writer goes on (pread); it stays valid after commit or discard. The caller
  // closes it.
  virtual Result<int> open_reader() = 0;
  // fsync per durability, rename into place, commit the metadata record, then remove the
  // previous generation's file. Only after this returns ok may the PUT be acknowledged.
  virtual Awaitable<Result<wire::ObjectRecord>> commit() = 0;
  // Ends the bytes without installing them, for a caller that installs them in another
  // form (an erasure-coded object's slices, docs/adr/0014): checks the expected size and
  // MD5 and evaluates PutOptions::precondition against the object there now (under its
  // lock) as commit() would, and returns the record commit() would install, with
  // generation 0 and no fsync. The work file stays readable (open_reader()) until
  // discard() or the writer's end; write() and commit() fail afterwards. Errors: commit()'s
  // ("IncompleteBody", "BadDigest", the precondition's as is).
  virtual Awaitable<Result<wire::ObjectRecord>> seal() = 0;
  // After seal(), for a caller that installed the bytes in another form: ends the writer
  // as a commit() would have, without installing anything (the work file goes; an
  // assembled upload is forgotten with its parts, Store::assemble_upload).
  virtual Awaitable<void> finish_sealed() { co_await discard(); }
  // Removes the work file now, before returning (a writer destroyed without a commit
  // removes it in the background). Later write() and commit() fail. For a caller that
  // reports the failure and must leave nothing behind when it does.
  virtual Awaitable<void> discard() = 0;
};

// An object's file opened for reading, with the record it was opened under. Closes the fd
// when the last holder lets go. Shared: a target keeps its hot objects' files open
// (detail::OpenFiles) and every read of one holds it.
struct OpenFile {
  OpenFile(int file, wire::ObjectRecord opened_under) : fd(file), record(std::move(opened_under)) {}
  ~OpenFile();
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  // Whether the file is still what the record names (one fstat): kDataLoss when its size
  // is not the record's; false when it was unlinked (replaced or removed: open the object
  // again).
  Result<bool> is_current(std::string_view path_for_errors = {}) const;

  const int fd;
  const wire::ObjectRecord record;
};

// An object opened for reading: the fd stays valid (and its bytes unchanged) even if the
// object is overwritten or deleted meanwhile.
class OpenObject {
 public:
  OpenObject(int fd, wire::ObjectRecord record)
      : file_(std::make_shared<const OpenFile>(fd, std::move(record))) {}
  explicit OpenObject(std::shared_ptr<const OpenFile> file) : file_(std::move(file)) {}
  OpenObject(OpenObject&& other) noexcept = default;
  OpenObject& operator=(OpenObject&&) = delete;
  OpenObject(const OpenObject&) = delete;
  int fd() const { return file_->fd; }
  const wire::ObjectRecord& record() const { return file_->record; }
  const std::shared_ptr<const OpenFile>& file() const { return file_; }

 private:
  std::shared_ptr<const OpenFile> file_;
};

struct ListOptions {
  std::string prefix;
  std::string start_after;  // exclusive
  size_t limit = 1000;
};

struct ListResult {
  std::vector<wire::ListEntry> entries;  // sorted by name, at most `limit`
  bool is_truncated = false;             // more entries follow the last one
};

// In service: takes new objects. Disabled (by an operator; kept across restarts by
// <path>/.silo-disabled): takes none, and the objects still on it are read until resilver
// has moved them to the other mountpaths. Failed (its directory or drive stopped working):
// read no more; its objects are lost on this target.
enum class MountpathState { kInService, kDisabled, kFailed };
std::string_view mountpath_state_name(MountpathState state);

struct MountpathInfo {
  std::string path;
  std::string id;  // stable id kept in <path>/.silo-mountpath, used by placement
  uint64_t capacity_bytes = 0;
  uint64_t available_bytes = 0;
  MountpathState state = MountpathState::kInService;
  std::string failure;   // why it failed
  uint64_t objects = 0;  // an estimate of the object records on it
  // Objects found without their bytes (file missing or torn) when it was opened after an
  // unclean shutdown: still listed, reads answer DataLoss (docs/adr/0021).
  uint64_t lost_objects = 0;
};

// What a resilver did.
struct ResilverStats {
  uint64_t objects_scanned = 0;
  uint64_t objects_moved = 0;  // to the mountpath that owns them now
  uint64_t bytes_moved = 0;
  uint64_t stale_removed = 0;  // copies left behind where the owner already had the object
};

// Mountpaths attached in one process's life, at start and at run time together.
inline constexpr size_t kMaxMountpaths = 128;

struct StoreOptions {
  std::vector<std::string> mountpaths;  // directories, created if missing
  size_t threads_per_mountpath = 4;
  // Files of hot objects kept open with their records, all mountpaths together
  // (detail::OpenFiles): a warm GET then needs no metadata lookup and no open. Each holds
  // an fd; 0 keeps none. silod sets it from node.open_files within its open-file limit;
  // this default is for stores opened by tests and tools.
  size_t open_files = 4096;
  // complete_upload refuses a part below this size unless it is the last (S3: 5 MiB).
  uint64_t min_part_size = uint64_t{5} << 20;
  // Every change to object, part and work files goes through it (file_system.h); tests
  // pass one that injects faults.
  std::shared_ptr<FileSystem> file_system = posix_file_system();
};

// A multipart upload in flight.
// The checksum a multipart upload sums its parts with, and the object's checksum made of
// theirs: COMPOSITE (the checksum of the parts' checksums, "-N" appended) or FULL_OBJECT
// (the CRCs combined: the CRC of the whole object). Empty algorithm: none.
struct UploadChecksum {
  std::string algorithm;  // "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"
  std::string type;       // "COMPOSITE" or "FULL_OBJECT"
  bool operator==(const UploadChecksum&) const = default;
};

struct UploadInfo {
  std::string upload_id;  // 32 lowercase hex digits, sortable by initiation time
  std::string name;
  int64_t initiated_unix_nanos = 0;
  wire::ObjectRecord attributes;  // descriptive fields the object will get
  UploadChecksum checksum;
};

// One uploaded part of an upload.
struct PartInfo {
  int part_number = 0;
  uint64_t size = 0;
  std::string etag_hex;  // MD5 of the part, 32 lowercase hex digits
  int64_t mtime_unix_nanos = 0;
  std::map<std::string, std::string> checksums;  // algorithm ("CRC32") -> base64
};

// One entry of CompleteMultipartUpload's list.
struct CompletePart {
  int part_number = 0;
  std::string etag_hex;  // without quotes; compared case-insensitively
};

// S3 ListMultipartUploads paging: with only key_marker, uploads of names after it; with
// both, also the uploads of key_marker whose id sorts after upload_id_marker.
// upload_id_marker without key_marker is ignored.
struct UploadListOptions {
  std::string prefix;
  std::string key_marker;
  std::string upload_id_marker;
  size_t limit = 1000;
};

struct UploadList {
  std::vector<UploadInfo> uploads;  // sorted by (name, upload_id), at most `limit`
  bool is_truncated = false;
};

// XXH3-64 of the first `size` bytes of `fd`, read with pread in bounded chunks. kDataLoss
// when the file is shorter. Blocking: call on a disk executor.
Result<uint64_t> xxh3_of_fd(int fd, uint64_t size);
// The archive index (docs/shards.md) of the archive in the first `size` bytes of `fd`,
// read with pread, in the format its first bytes say (archive::sniff_format: gzip, LZ4,
// zip, else tar); archive::index_archive's errors. A tar's headers only are read; a tgz or
// tar.lz4 is decompressed once, whole; a zip's central directory and local headers.
// Blocking: call on a disk executor.
Result<wire::ArchiveIndex> index_of_fd(int fd, uint64_t size);
// The same in the given format (the one an object's name says, archive::format_of_name).
Result<wire::ArchiveIndex> index_of_fd(int fd, uint64_t size, wire::ArchiveFormat format);
// Adds each member's XXH3-64 (ArchiveMember.xxh3) to `index`, a plain tar's, from the
// first record.size() bytes of `fd`, in one pass that also hashes the whole file: the sums
// are added only when that matches record.xxh3() (they then describe the bytes that were
// written). Other formats are left as they are. Blocking: call on a disk executor.
void add_member_sums(int fd, const wire::ObjectRecord& record, wire::ArchiveIndex& index);
// Reads exactly `length` bytes at `offset` of `fd` into `into`. kDataLoss when the file
// ends first, the errno's code otherwise. Blocking: call on a disk executor.
Status read_fully(int fd, char* into, uint64_t length, uint64_t offset);
// `length` bytes at `offset` of `fd` read into a buffer this thread keeps for bytes that
// are checked and dropped (no allocation, no zeroing per read; valid until the thread's
// next call: use it without suspending). With `may_wait` the read blocks (a disk
// executor's thread) and its error is returned (kDataLoss when the file ends first);
// without, it takes only what the page cache holds (preadv2 RWF_NOWAIT), so any thread
// may call it: nullopt when a byte is not cached, the file system cannot say, or the
// read fails (a blocking read then reports it).
std::optional<Result<std::span<char>>> read_scratch(int fd, uint64_t offset, uint64_t length, bool may_wait);
// An archive::ReadAt of the open file `fd` (pread; blocking: call on a disk executor).
archive::ReadAt pread_of(int fd);

// One target's objects on its mountpaths (DESIGN.md "Storage on a target"). Thread-safe;
// every method that touches a disk runs on that mountpath's DiskExecutor and resumes on
// the caller's executor. Lives as long as the target.
class Store {
 public:
  // Opens (creating when new) every mountpath and its RocksDB, removes leftover work
  // files and part files of uploads that no longer exist, and after an unclean shutdown
  // reconciles object and part files against metadata.
  // Blocking; call at startup. Errors name the mountpath.
  static Result<std::unique_ptr<Store>> open(StoreOptions options);
  virtual ~Store() = default;

  // Errors: kResourceExhausted (disk full), kUnavailable (I/O error).
  virtual Awaitable<Result<std::unique_ptr<ObjectWriter>>> create(const ObjectRef& object,
                                                                  PutOptions options) = 0;
  // kNotFound when the object does not exist.
  virtual Awaitable<Result<OpenObject>> open(const ObjectRef& object) = 0;
  // open() on the caller's thread, for work that reads many objects in one task on a
  // thread of its own (batch::OwnerReads). Blocking (RocksDB, open(2)): never on an io
  // thread.
  virtual Result<OpenObject> open_now(const ObjectRef& object) = 0;
  virtual Awaitable<Result<wire::ObjectRecord>> stat(const ObjectRef& object) = 0;
  // kNotFound when the object does not exist.
  virtual Awaitable<Status> remove(const ObjectRef& object) = 0;
  // Removes the object only if its record still has `generation` (a rebalance removing
  // the copy it moved, which a newer write must not lose). kNotFound when absent,
  // kFailedPrecondition when another generation is there now.
  virtual Awaitable<Status> remove_generation(const ObjectRef& object, uint64_t generation) = 0;
  // An estimate of how many objects the store holds (all buckets).
  virtual uint64_t object_count_estimate() const = 0;
  // One page of a bucket's objects, merged across mountpaths, from the metadata only.
  virtual Awaitable<Result<ListResult>> list(BucketId bucket, ListOptions options) = 0;
  // Removes every object and multipart upload of `bucket` (after the bucket was
  // deleted). Idempotent.
  virtual Awaitable<Status> remove_bucket(BucketId bucket) = 0;
  // Bucket fences (docs/adr/0005): every commit of an object (a PUT, a copy, a fetch, a
  // completed upload) into a closed bucket fails with NoSuchBucket, checked under the
  // object lock just before it is installed; a commit that passed the check is in flight
  // until it is installed or failed. A bucket being deleted is closed, then drained,
  // then listed: whatever the listing misses was refused. Buckets are open by default;
  // thread-safe.
  virtual void close_bucket(BucketId bucket) = 0;
  virtual void open_bucket(BucketId bucket) = 0;
  // Waits until no commit into `bucket` that passed the check is in flight; kUnavailable
  // after `timeout`.
  virtual Awaitable<Status> drain_bucket(BucketId bucket, std::chrono::milliseconds timeout) = 0;
  // Rewrites the object's metadata record without touching its bytes (tagging, copy onto
  // itself with new metadata), under the object lock. `mutate` may change descriptive
  // fields and times; fields that describe the bytes (name, size, generation, xxh3,
  // md5_hex, etag, parts, block_size, block_xxh3, ec) are kept whatever it does.
  // Errors: kNotFound reason "NoSuchKey"; mutate's error as is (then nothing changed).
  virtual Awaitable<Result<wire::ObjectRecord>> update(
      const ObjectRef& object, std::function<Status(wire::ObjectRecord&)> mutate,
      Durability durability) = 0;

  // Gives the record of `object` the block sums of its bytes (store/block_sums.h; a
  // record written before them, or one whose sums a scrub found wrong) when its current
  // version is `generation`, touching no other field, under the object lock. The caller
  // computed `sums` from that version's file (sums_of_fd) and checked its xxh3 first.
  // Errors: kAborted (another version is there now), kInvalidArgument (`sums` do not fit
  // the size, or the record is a slice, which keeps none), kNotFound.
  virtual Awaitable<Status> set_block_sums(const ObjectRef& object, uint64_t generation, uint64_t block_size,
                                           std::vector<uint64_t> sums) = 0;

  // Multipart uploads (docs/on-disk-format.md "Multipart uploads"). An upload and its
  // parts live on the mountpath that owns the object when the upload is created. An
  // unknown or malformed upload id gives kNotFound with reason "NoSuchUpload".

  // Starts an upload; only the descriptive fields of `attributes` are kept (see PutOptions).
  // `checksum` is kept as given (the caller checked it) for the callers of get_upload().
  virtual Awaitable<Result<UploadInfo>> create_upload(const ObjectRef& object, wire::ObjectRecord attributes,
                                                      UploadChecksum checksum) = 0;
  // A writer for one part (1..10000, else kInvalidArgument reason "InvalidArgument").
  // Its commit() returns a record whose size, md5_hex, xxh3 and checksums describe the
  // part; it replaces an earlier part with the same number. Uses options' durability,
  // expected size/MD5 and attributes.checksums; not its precondition.
  virtual Awaitable<Result<std::unique_ptr<ObjectWriter>>> create_part(const ObjectRef& object,
                                                                       std::string upload_id,
                                                                       int part_number,
                                                                       PutOptions options) = 0;
  virtual Awaitable<Result<UploadInfo>> get_upload(const ObjectRef& object,
                                                   const std::string& upload_id) = 0;
  // Ascending part number.
  virtual Awaitable<Result<std::vector<PartInfo>>> list_parts(const ObjectRef& object,
                                                              const std::string& upload_id) = 0;
  // Builds the object from `parts` and installs it like a PUT, then forgets the upload and
  // all its part files (listed or not). Of `options` only durability and precondition are
  // used; the object gets the attributes given to create_upload.
  // The record gets etag "<md5 of the parts' MD5s>-<N>", an empty md5_hex and `parts`
  // (the caller adds the object's checksum of an upload with one: writer set_checksum()).
  // Errors (kInvalidArgument with reason): "MalformedXML" (no parts), "InvalidPartOrder",
  // "InvalidPart" (missing, or another ETag), "EntityTooSmall" (a part but the last under
  // StoreOptions::min_part_size); "NoSuchUpload"; the precondition's error. On any error
  // the upload stays as it was. Of concurrent complete/abort calls exactly one wins; the
  // others get NoSuchUpload.
  // The archive index of the object's current version (an encoded wire::ArchiveIndex,
  // docs/shards.md), kept beside its record: built when an object whose name says it is
  // an archive (archive::format_of_name) is installed, or later by put_index().
  // kNotFound when there is none.
  virtual Awaitable<Result<std::string>> get_index(const ObjectRef& object) = 0;
  // get_index() on the caller's thread (blocking: never on an io thread), as open_now().
  virtual Result<std::string> get_index_now(const ObjectRef& object) = 0;
  // Keeps `bytes` as the index of `object` when its current version is `generation`
  // (checked under the object lock); kAborted when the object changed meanwhile.
  virtual Awaitable<Status> put_index(const ObjectRef& object, uint64_t generation, std::string bytes) = 0;
  // assemble_upload(), then its writer's commit().
  Awaitable<Result<wire::ObjectRecord>> complete_upload(const ObjectRef& object, const std::string& upload_id,
                                                        std::vector<CompletePart> parts, PutOptions options);
  // The first half of complete_upload: claims the upload and builds the object's bytes
  // from `parts` into a work file, with the same checks and errors. The writer's commit()
  // installs it as complete_upload does; seal() then finish_sealed() serve a caller that
  // installs the bytes in another form (an erasure-coded object's slices, ADR 0014), the
  // upload being forgotten only at finish_sealed(). Until one of those, parts, aborts and
  // other completions of the upload see NoSuchUpload; discard() (or the writer's end
  // without them) leaves the upload as it was. write() fails.
  virtual Awaitable<Result<std::unique_ptr<ObjectWriter>>> assemble_upload(const ObjectRef& object,
                                                                           const std::string& upload_id,
                                                                           std::vector<CompletePart> parts,
                                                                           PutOptions options) = 0;
  // Forgets the upload and removes its parts. kNotFound "NoSuchUpload" when absent.
  virtual Awaitable<Status> abort_upload(const ObjectRef& object,
                                         const std::string& upload_id) = 0;
  // One page of a bucket's uploads, merged over mountpaths, by (name, upload_id).
  virtual Awaitable<Result<UploadList>> list_uploads(BucketId bucket,
                                                     UploadListOptions options) = 0;
  // Aborts every upload initiated before `unix_nanos` (abandoned-upload sweep) and
  // returns how many. Uploads being completed right now are skipped.
  virtual Awaitable<Result<size_t>> remove_uploads_initiated_before(int64_t unix_nanos) = 0;

  // Bucket ids that have at least one object here (to collect deleted buckets).
  virtual Awaitable<Result<std::vector<BucketId>>> bucket_ids() = 0;

  virtual std::vector<MountpathInfo> mountpaths() const = 0;
  // Takes a mountpath out of service (no new objects; run resilver to move its objects
  // off) or puts it back. Persisted. Errors: kNotFound (no such id), kFailedPrecondition
  // (a failed one, or the last one in service). Blocking.
  virtual Result<MountpathInfo> set_mountpath_enabled(std::string_view id, bool enabled) = 0;
  // Probes every mountpath not failed yet (its id file reads, a file can be made in
  // work/); takes those that fail out for good (until restart) and returns them. Blocking.
  virtual std::vector<MountpathInfo> check_mountpaths() = 0;
  // Adds a mountpath at run time: `path` (created if missing) is opened as at start, so a
  // drive that holds objects brings them back. Run resilver afterwards: the new mountpath
  // owns about 1/N of the objects. Errors: kAlreadyExists (the path or its id is attached),
  // kResourceExhausted (kMaxMountpaths attached in this process's life), and those of
  // opening it, naming the path.
  virtual Awaitable<Result<MountpathInfo>> attach_mountpath(std::string path) = 0;
  // Takes a mountpath out for good, so its drive can be unmounted: disables it, waits for
  // writes already headed there, moves every object on it to the others, and closes it.
  // A failed one is closed without moving anything (its objects are lost here anyway).
  // Errors: kNotFound (no such id), kFailedPrecondition (the last one in service;
  // multipart uploads in progress keep parts there; objects that did not move), kAborted
  // (cancelled). After an error the mountpath stays attached and disabled.
  virtual Awaitable<Result<ResilverStats>> detach_mountpath(std::string_view id,
                                                            std::function<bool()> cancelled) = 0;
  // What detach_mountpath() would refuse at once (kNotFound, the last one in service), for
  // a caller that answers before the detach runs. Blocking only on nothing.
  virtual Status check_detach(std::string_view id) const = 0;
  // Moves every object that is not on the mountpath placement picks for it now (after a
  // mountpath was added, disabled or enabled), and drops copies the owner mountpath
  // already supersedes. Objects stay readable throughout. Stops early, with what it did,
  // once `cancelled` returns true.
  virtual Awaitable<Result<ResilverStats>> resilver(std::function<bool()> cancelled) = 0;
  // Flushes metadata and marks every mountpath cleanly closed, so the next open skips the
  // full reconciliation. Call after the last request finished.
  virtual void close() = 0;
};

}  // namespace silo::store
