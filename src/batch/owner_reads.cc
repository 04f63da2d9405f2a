#include "batch/owner_reads.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "batch/batch.h"
#include "http/message.h"
#include "http/reply.h"
#include "store/block_sums.h"
#include "wire/batch_json.h"
#include "wire/json.h"

namespace silo::batch {
namespace {

// Frames gathered per task on a reader thread before they are written.
constexpr size_t kChunkBytes = 1 << 20;

void append_frame(std::string& out, const RunFrame& frame) {
  out.append(reinterpret_cast<const char*>(&frame), sizeof frame);
}

}  // namespace

// One run being answered: its entries, resolved, and the object opened last (entries come
// in request order, where consecutive ones of one shard are common).
struct OwnerReads::Run {
  struct Job {
    const wire::BatchEntry* entry = nullptr;
    std::optional<ObjectRef> object;  // none: asked for with a GET
    store::ReadCheck check = store::ReadCheck::kVerify;
  };
  wire::BatchRequest request;
  std::vector<Job> jobs;
  std::optional<ObjectRef> open_ref;
  std::unique_ptr<store::OpenObject> opened;
  std::unique_ptr<store::BlockVerifier> verifier;  // of `opened`, remembers what it checked
  std::shared_ptr<const shards::MemberIndex> index;  // of `opened`, once a member was asked

  // Appends entries from `next` to `out` until it holds kChunkBytes; returns the entry
  // after the last one appended. Blocking: on a reader thread.
  size_t fill(OwnerReads& reads, size_t next, std::string& out) {
    while (next < jobs.size() && out.size() < kChunkBytes) {
      const size_t before = out.size();
      if (read_entry(reads, jobs[next], out)) {
        reads.entries_read_.add();
      } else {
        out.resize(before);
        append_frame(out, RunFrame{static_cast<uint32_t>(RunAnswer::kAsk), 0, 0, 0});
        reads.entries_asked_.add();
      }
      ++next;
    }
    return next;
  }

  // Appends one entry's frame and bytes; false when a GET must answer it.
  bool read_entry(OwnerReads& reads, const Job& job, std::string& out) {
    if (!job.object) return false;
    if (!opened || open_ref != job.object) {
      verifier.reset();
      index.reset();
      opened.reset();
      open_ref.reset();
      Result<store::OpenObject> found = reads.store_.open_now(*job.object);
      if (!found) return false;
      opened = std::make_unique<store::OpenObject>(std::move(*found));
      open_ref = job.object;
      verifier = std::make_unique<store::BlockVerifier>(*opened, job.check);
    }
    const wire::ObjectRecord& record = opened->record();
    if (record.has_ec()) return false;
    if (job.check == store::ReadCheck::kVerify && !store::has_block_sums(record)) return false;
    const wire::BatchEntry& entry = *job.entry;
    uint64_t base = 0;
    uint64_t size = record.size();
    const wire::ArchiveMember* summed = nullptr;  // a whole member checked by its own sum
    if (entry.archpath) {
      if (!index) index = reads.shards_.index_now(*job.object, record.generation());
      if (!index || index->index().format() != wire::ARCHIVE_FORMAT_TAR) return false;
      Result<const wire::ArchiveMember*> member = shards::Shards::find(*index, *entry.archpath, *job.object);
      if (!member) return false;
      base = (*member)->offset();
      size = (*member)->size();
      const bool is_whole = !entry.start && !entry.length;
      if (is_whole && job.check == store::ReadCheck::kVerify && shards::Shards::checks_by_member_sum(**member)) {
        summed = *member;
      }
    }
    const uint64_t start = entry.start.value_or(0);
    if ((entry.start || entry.length) && start >= size) return false;  // a GET's 416
    const uint64_t length = std::min(entry.length.value_or(size - start), size - start);
    if (length > kMaxRunEntryBytes) return false;
    const uint64_t offset = base + start;
    for (uint64_t at = offset; summed == nullptr && at < offset + length;) {
      const uint64_t ready = verifier->verified_bytes(at, offset + length - at);
      if (ready > 0) {
        at += ready;
      } else if (!verifier->verify(at).is_ok()) {
        return false;  // a GET finds it again, counts it, repairs the copy
      }
    }
    const size_t at = out.size();
    const auto mtime = static_cast<int64_t>(record.mtime_unix_nanos() / 1'000'000'000);
    append_frame(out, RunFrame{static_cast<uint32_t>(RunAnswer::kBytes), 0, length, mtime});
    out.resize(at + sizeof(RunFrame) + length);
    char* bytes = out.data() + at + sizeof(RunFrame);
    if (!store::read_fully(opened->fd(), bytes, length, offset).is_ok()) return false;
    // A member's own sum: its bytes hashed where they were read to (a mismatch: a GET
    // finds it again, counts it, repairs the copy).
    if (summed != nullptr &&
        !shards::Shards::check_member_sum(*summed, std::span<const char>(bytes, length), record.name()).is_ok()) {
      return false;
    }
    if (entry.archpath) reads.shards_.note_member_read(length);
    return true;
  }
};

OwnerReads::OwnerReads(cluster::ClusterMaps& maps, store::Store& store, shards::Shards& shards, std::string self_id,
                       stats::Registry& stats)
    : maps_(maps),
      store_(store),
      shards_(shards),
      self_id_(std::move(self_id)),
      entries_read_(stats.counter("silo_batch_run_entries_read_total",
                                  "Batch entries a target read for a serving node in a run (no GET of their own).")),
      entries_asked_(stats.counter("silo_batch_run_entries_asked_total",
                                   "Batch entries of runs a target left to a GET (not local, coded, too large...).")) {}

http::Awaitable<void> OwnerReads::handle(http::Exchange& exchange) {
  Result<std::string> body = co_await http::read_all(exchange.body(), kMaxRequestBytes);
  Result<wire::BatchRequest> parsed =
      body ? wire::parse_batch_request_json(*body) : Result<wire::BatchRequest>(body.error());
  if (!parsed) {
    co_await http::send_error(exchange, parsed.error());
    co_return;
  }
  auto run = std::make_unique<Run>();
  run->request = std::move(*parsed);
  const auto placement = maps_.placement();
  run->jobs.reserve(run->request.entries.size());
  for (const wire::BatchEntry& entry : run->request.entries) {
    Run::Job job{&entry, std::nullopt, store::ReadCheck::kVerify};
    const std::optional<wire::Bucket> bucket = maps_.find_bucket(entry.bucket);
    if (bucket && !wire::is_remote(bucket->props()) && !entry.archmode) {
      ObjectRef object{BucketId(bucket->id()), entry.name};
      const auto holders = placement->holders(object, wire::holder_count(bucket->props()));
      const bool is_holder = std::any_of(holders.begin(), holders.end(),
                                         [this](const wire::NodeInfo& node) { return node.id() == self_id_; });
      if (is_holder) job.object = std::move(object);
    }
    run->jobs.push_back(std::move(job));
  }
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/octet-stream");
  const Status begun = co_await exchange.response().begin(std::move(head), std::nullopt);
  if (!begun.is_ok()) co_return;
  Run* const runp = run.get();
  size_t next = 0;
  while (next < runp->jobs.size()) {
    std::string out;
    next = co_await readers_.run([this, runp, next, &out] { return runp->fill(*this, next, out); });
    const Status written = co_await exchange.response().write(out);
    if (!written.is_ok()) co_return;  // the serving node went away
  }
}

}  // namespace silo::batch
