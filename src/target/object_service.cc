// The object service: PUT, GET, HEAD, DELETE and copy of one object, served once for both
// front-ends. handle_object() (native, target.cc) and handle_s3() (s3_objects.cc) parse
// their request into an ObjectRequest (object_request.h) and send the errors; the answers
// differ only in shape (answer_head(), send_put_answer(), refuse_range()).
#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>

#include "base/text.h"
#include "s3api/s3_request.h"
#include "http/range.h"
#include "http/reply.h"
#include "s3/http_time.h"
#include "s3/xml.h"
#include "store/block_sums.h"
#include "s3api/object_headers.h"
#include "target/object_request.h"
#include "target/target.h"
#include "wire/json.h"
#include "wire/object_json.h"

namespace silo::target {
namespace {

std::string quoted(std::string_view etag) { return fmt::format("\"{}\"", etag); }

int64_t seconds_of(int64_t unix_nanos) { return unix_nanos / 1'000'000'000; }

// One read of an erasure-coded object's bytes for a reader thread's ReadAt (coded_reader):
// shared by the waiting thread and the coroutine that reads, so either may end first.
struct CodedRead {
  wire::Bucket bucket;
  ObjectRef object;
  uint64_t generation = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string bytes;
  std::promise<Status> done;
};

http::Awaitable<Status> append_to(std::string* bytes, std::span<const char> more) {
  bytes->append(more.data(), more.size());
  co_return Status::ok();
}

// Reads `read`'s bytes through the slices of the version it names (a named coroutine that
// holds what it uses: adr/0003).
http::Awaitable<void> read_coded(std::shared_ptr<CodedRead> read, store::Store* store, erasure::Erasure* erasure) {
  Result<store::OpenObject> mine = co_await store->open(read->object);
  Status status;
  if (!mine) {
    status = std::move(mine).error();
  } else if (mine->record().generation() != read->generation) {
    status = Status::aborted("{} changed while its archive index was built", read->object.name);
  } else {
    std::string* bytes = &read->bytes;
    const erasure::Erasure::Sink sink = [bytes](std::span<const char> more) { return append_to(bytes, more); };
    status = co_await erasure->read_ec(read->object, *mine, read->offset, read->length, sink);
  }
  read->done.set_value(std::move(status));
}

// How much of a coded object a ReadAt reads at once (whole stripes of several MiB: the
// tar headers it looks for lie all through them).
constexpr uint64_t kCodedWindow = 8ull << 20;
constexpr std::chrono::minutes kCodedReadTimeout{5};

// A blocking ReadAt over the erasure-coded object whose slice at `generation` is here, for
// a reader thread (never an io thread): a read outside the window it holds waits while
// the io_context (`executor`) reads the next kCodedWindow bytes through the slices.
archive::ReadAt coded_reader(boost::asio::any_io_executor executor, store::Store& store, erasure::Erasure& erasure,
                             const wire::Bucket& bucket, const ObjectRef& object, uint64_t generation, uint64_t size) {
  auto window = std::make_shared<std::shared_ptr<CodedRead>>();
  return [=, &store, &erasure](uint64_t offset, std::span<char> out) -> Result<size_t> {
    if (offset >= size) return size_t{0};
    const uint64_t want = std::min<uint64_t>(out.size(), size - offset);
    const CodedRead* held = window->get();
    const bool is_held = held != nullptr && offset >= held->offset && offset + want <= held->offset + held->bytes.size();
    if (!is_held) {
      auto read = std::make_shared<CodedRead>();
      read->bucket = bucket;
      read->object = object;
      read->generation = generation;
      read->offset = offset;
      read->length = std::min(size - offset, std::max(want, kCodedWindow));
      std::future<Status> done = read->done.get_future();
      boost::asio::co_spawn(executor, read_coded(read, &store, &erasure), boost::asio::detached);
      if (done.wait_for(kCodedReadTimeout) != std::future_status::ready) {
        return Status::unavailable("reading {} through its slices took over {} s", object.name,
                                   std::chrono::seconds(kCodedReadTimeout).count());
      }
      RETURN_IF_ERROR(done.get());
      if (read->bytes.size() != read->length) {
        return Status::unavailable("{} bytes of {} read through its slices, not {}", read->bytes.size(), object.name,
                                   read->length);
      }
      *window = std::move(read);
    }
    const CodedRead& now = **window;
    std::memcpy(out.data(), now.bytes.data() + (offset - now.offset), want);
    return static_cast<size_t>(want);
  };
}

// A response head of the request's front-end: S3's carries Server and x-amz-request-id.
http::ResponseHead answer_head(const ObjectRequest& request, int status = 200) {
  if (request.is_s3()) return s3api::s3_head(request.s3, status);
  http::ResponseHead head;
  head.status = status;
  return head;
}

std::string content_range(uint64_t offset, uint64_t length, uint64_t size) {
  return fmt::format("bytes {}-{}/{}", offset, offset + length - 1, size);
}

// The bytes of `member` the request's Range selects (InvalidRange as select_bytes()).
Result<ByteSelection> select_member_bytes(const ObjectRequest& request, const wire::ArchiveMember& member) {
  wire::ObjectRecord view;  // the member as a Range sees it
  view.set_size(member.size());
  return select_bytes(request, view);
}

// The head of a member read: 200, or 206 with the Content-Range within the member.
http::ResponseHead member_head(const ObjectRequest& request, const ByteSelection& selected, uint64_t member_size,
                               int64_t mtime_unix_nanos) {
  http::ResponseHead head = answer_head(request);
  head.headers.set("Last-Modified", s3api::http_date(mtime_unix_nanos));
  if (selected.is_partial) {
    head.status = 206;
    head.headers.set("Content-Range", content_range(selected.offset, selected.length, member_size));
  }
  return head;
}

// The headers of a GET or HEAD answer for `record` (the object as clients see it).
http::ResponseHead object_head(const ObjectRequest& request, const wire::ObjectRecord& record,
                               const ByteSelection& selected) {
  http::ResponseHead head = answer_head(request);
  s3api::add_object_headers(record, head.headers, request.wants_checksums);
  // The tags in full are for CopyObject, which reads its source over the native API; S3
  // shows their count only.
  if (request.is_s3()) head.headers.remove(s3api::kTagsHeader);
  if (selected.parts_count) {
    head.headers.set("x-amz-mp-parts-count", std::to_string(*selected.parts_count));
  }
  if (selected.is_partial) {
    head.status = 206;
    head.headers.set("Content-Range",
                     content_range(selected.offset, selected.length, record.size()));
  }
  for (const auto& [name, value] : request.response_headers) head.headers.set(name, value);
  return head;
}

// If-Match / If-None-Match of a write, checked by the store under the object lock against
// whatever is current at commit time.
store::Precondition write_precondition(const Preconditions& conditions) {
  if (!conditions.has_write_conditions()) return {};
  return [conditions](const wire::ObjectRecord* current) {
    const s3::Conditions c{conditions.if_match, conditions.if_none_match, std::nullopt,
                           std::nullopt};
    if (current == nullptr) return s3::evaluate_write(c, nullptr);
    const std::string etag = s3api::etag_of(*current);
    return s3::evaluate_write(c, &etag);
  };
}

// Checks the computed checksums against the header or trailer values and hands them to
// the writer; the answer then echoes them.
Status finish_checksums(const std::vector<ChecksumSpec>& specs,
                        const std::vector<s3::Checksum>& computed,
                        const std::vector<std::pair<std::string, std::string>>& trailers,
                        store::ObjectWriter& writer, http::Headers& response) {
  for (size_t i = 0; i < specs.size(); ++i) {
    const ChecksumSpec& spec = specs[i];
    std::optional<std::string> expected = spec.expected;
    if (spec.from_trailer) {
      for (const auto& [name, value] : trailers) {
        if (s3::checksum_from_header(name) == spec.algorithm) expected = value;
      }
      if (!expected) {
        return Status::invalid_argument("the trailer {} announced in x-amz-trailer did not come",
                                        s3::checksum_header(spec.algorithm))
            .with_reason("IncompleteBody");
      }
    }
    const std::string value = computed[i].base64();
    if (expected && *expected != value) {
      return Status::invalid_argument("The {} you specified did not match the calculated checksum.",
                                      s3::checksum_name(spec.algorithm))
          .with_reason("BadDigest");
    }
    writer.set_checksum(std::string(s3::checksum_name(spec.algorithm)), value);
    response.set(s3::checksum_header(spec.algorithm), value);
  }
  return Status::ok();
}

}  // namespace

http::Awaitable<Status> Target::serve_object(http::Exchange& exchange, const ObjectRequest& request,
                                             const Resolved& r) {
  // While objects move, one not moved here yet is copied from its previous owner first
  // (get-from-neighbor) for every operation that reads or keeps what exists.
  // (Checked here first: no coroutine frame per request when no rebalance runs.)
  if (request.reads_existing() && peers_.is_rebalancing()) {
    CO_RETURN_IF_ERROR(co_await rebalance_.pull_if_missing(r.object));
  }
  switch (request.op) {
    case ObjectOp::kPut:
      co_return co_await put_object(exchange, request, r);
    case ObjectOp::kGet:
    case ObjectOp::kHead: {
      // The one read path of both front-ends: remote buckets and get-from-neighbor decide
      // there whether the copy here answers.
      CachedReadFn read = [this, &exchange, &request, &r](const ColdRead* cold) {
        return get_object(exchange, request, r, cold);
      };
      co_return co_await read_object(exchange, r, std::move(read));
    }
    case ObjectOp::kDelete:
      co_return co_await delete_object(exchange, request, r);
    case ObjectOp::kCopy:
      CO_RETURN_IF_ERROR(cache_.check_space());
      co_return co_await copy_object(exchange, request, r);
  }
  co_return Status::internal("unknown object operation");
}

store::PutOptions Target::put_options(const ObjectRequest& request,
                                      const wire::Bucket& bucket) const {
  store::PutOptions options;
  options.durability = peers_.durability_of(bucket);
  options.attributes = request.attributes;
  options.expected_md5_hex = request.expected_md5_hex;
  options.expected_size = request.expected_size;
  options.precondition = write_precondition(request.conditions);
  return options;
}

http::Awaitable<Result<std::unique_ptr<store::ObjectWriter>>> Target::open_writer(
    const ObjectRequest& request, const Resolved& r, store::PutOptions options) {
  if (request.part) {
    co_return co_await store_.create_part(r.object, request.part->upload_id, request.part->number,
                                          std::move(options));
  }
  co_return co_await store_.create(r.object, std::move(options));
}

http::Awaitable<Result<wire::ObjectRecord>> Target::commit_write(const ObjectRequest& request,
                                                                 const Resolved& r,
                                                                 store::ObjectWriter& writer) {
  // A part is not the object yet: CompleteMultipartUpload publishes it.
  if (request.part) co_return co_await writer.commit();
  // A sync erasure-coded local bucket's object stages its slices on every holder before
  // any old slice is replaced (docs/adr/0014); nullopt: under min_size, copies as below.
  const wire::BucketProps& props = r.bucket.props();
  if (wire::is_erasure_coded(props) && !wire::is_remote(props) && props.write_mode() != wire::WRITE_MODE_ASYNC) {
    CO_ASSIGN_OR_RETURN(std::optional<wire::ObjectRecord> coded,
                        co_await erasure_.commit_coded(writer, r.object, r.holders));
    if (coded) co_return std::move(*coded);
  }
  CO_ASSIGN_OR_RETURN(wire::ObjectRecord record, co_await writer.commit());
  CO_RETURN_IF_ERROR(co_await publish(r));
  co_return record;
}

http::Awaitable<Status> Target::receive_payload(http::Exchange& exchange,
                                                const ObjectRequest& request,
                                                store::ObjectWriter& writer,
                                                http::Headers& response) {
  http::BodyReader* body = &exchange.body();
  std::optional<uint64_t> length = exchange.request().content_length;
  std::unique_ptr<s3api::PayloadReader> payload;
  if (request.is_s3()) {
    // aws-chunked decoded, chunk signatures and the payload hash checked.
    CO_ASSIGN_OR_RETURN(payload, s3api::PayloadReader::create(exchange, *request.s3));
    body = payload.get();
    length = payload->length();
    // A body of unknown length streams as HTTP chunks (curl -T -, streaming writers);
    // without Content-Length or chunks there is no body to take.
    if (!length && !exchange.request().is_chunked) {
      co_return Status::invalid_argument("You must provide the Content-Length HTTP header.")
          .with_reason("MissingContentLength");
    }
  }
  if (length && *length > request.max_size) co_return s3api::too_large(*length, request.max_size);
  std::vector<s3::Checksum> computed;
  for (const ChecksumSpec& spec : request.checksums) computed.emplace_back(spec.algorithm);
  std::vector<s3::Checksum*> checksums;
  for (s3::Checksum& c : computed) checksums.push_back(&c);
  CO_ASSIGN_OR_RETURN(const uint64_t received,
                      co_await receive(*body, writer, length, std::move(checksums)));
  if (received > request.max_size) {
    co_return s3api::too_large(received, request.max_size);  // chunked: nothing is kept
  }
  if (length && received != *length) {
    co_return Status::invalid_argument(
        "You did not provide the number of bytes specified by the Content-Length HTTP header.")
        .with_reason("IncompleteBody");
  }
  if (!payload) co_return Status::ok();
  co_return finish_checksums(request.checksums, computed, payload->trailers(), writer, response);
}

http::Awaitable<Result<std::optional<s3::ChecksumAlgorithm>>> Target::upload_checksum(const ObjectRequest& request,
                                                                                      const Resolved& r) {
  if (!request.part || !request.is_s3()) co_return std::optional<s3::ChecksumAlgorithm>();
  CO_ASSIGN_OR_RETURN(const store::UploadInfo upload, co_await store_.get_upload(r.object, request.part->upload_id));
  co_return s3::checksum_from_name(upload.checksum.algorithm);
}

http::Awaitable<Status> Target::put_object(http::Exchange& exchange, const ObjectRequest& request,
                                           const Resolved& r) {
  puts_.add();
  CO_RETURN_IF_ERROR(cache_.check_space());
  // A part needs no holder until CompleteMultipartUpload replicates the object.
  if (!request.part) CO_RETURN_IF_ERROR(replication::Replication::check_holders_up(r.bucket, r.holders, r.object.name));
  // A part of an upload with a checksum algorithm is summed with it, sent or not.
  CO_ASSIGN_OR_RETURN(const std::optional<s3::ChecksumAlgorithm> upload_sum, co_await upload_checksum(request, r));
  std::optional<ObjectRequest> summed;
  if (upload_sum && std::none_of(request.checksums.begin(), request.checksums.end(),
                                 [&](const ChecksumSpec& c) { return c.algorithm == *upload_sum; })) {
    summed = request;
    summed->checksums.push_back(ChecksumSpec{*upload_sum, std::nullopt, false});
  }
  const ObjectRequest& part_or_object = summed ? *summed : request;
  store::PutOptions options = put_options(request, r.bucket);  // named: docs/adr/0003
  CO_ASSIGN_OR_RETURN(auto writer, co_await open_writer(request, r, std::move(options)));
  http::ResponseHead head = answer_head(request);
  CO_RETURN_IF_ERROR(co_await receive_payload(exchange, part_or_object, *writer, head.headers));
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await commit_write(request, r, *writer));
  // A part's ETag is its MD5: CompleteMultipartUpload names the parts by it.
  const std::string etag = request.part ? record.md5_hex() : s3api::etag_of(record);
  head.headers.set("ETag", quoted(etag));
  if (request.is_s3()) co_return co_await exchange.response().send(std::move(head), "");
  head.headers.set("Content-Type", "application/json");
  co_return co_await exchange.response().send(std::move(head), wire::object_put_json(record));
}

http::Awaitable<Status> Target::get_object(http::Exchange& exchange, const ObjectRequest& request,
                                           const Resolved& r, const ColdRead* cold) {
  gets_.add();
  std::optional<store::OpenObject> object;
  // The record the answer describes, copied only where it must be (a GET of 100 KiB
  // spends a measurable share of its CPU on record copies).
  wire::ObjectRecord owned;
  const wire::ObjectRecord* described = &owned;
  if (cold) {
    described = &cold->record;  // the backend's description
  } else if (request.reads_record_only()) {
    CO_ASSIGN_OR_RETURN(owned, co_await store_.stat(r.object));
  } else {
    CO_ASSIGN_OR_RETURN(auto opened, co_await store_.open(r.object));
    object.emplace(std::move(opened));
    described = &object->record();
  }
  const bool is_slice = described->has_ec();
  if (is_slice) {
    owned = erasure::Erasure::object_view(*described);  // a slice here shows the object
    described = &owned;
  }
  const wire::ObjectRecord& record = *described;
  const std::string etag = s3api::etag_of(record);
  switch (
      s3::evaluate_read(request.conditions.view(), etag, seconds_of(record.mtime_unix_nanos()))) {
    case s3::ConditionResult::kProceed:
      break;
    case s3::ConditionResult::kNotModified: {
      http::ResponseHead head = answer_head(request, 304);
      head.headers.set("ETag", quoted(etag));
      head.headers.set("Last-Modified", s3api::http_date(record.mtime_unix_nanos()));
      co_return co_await exchange.response().send(std::move(head), "");
    }
    case s3::ConditionResult::kPreconditionFailed:
      co_return Status::failed_precondition(
          "At least one of the pre-conditions you specified did not hold")
          .with_reason("PreconditionFailed");
  }
  if (request.archive) co_return co_await get_members(exchange, request, r, object, cold);
  auto selected = select_bytes(request, record);
  if (!selected && selected.error().reason() == "InvalidRange") {
    co_return co_await refuse_range(exchange, request, selected.error(), record.size());
  }
  if (!selected) co_return std::move(selected).error();
  http::ResponseHead head = object_head(request, record, *selected);
  const bool sends_bytes = request.op == ObjectOp::kGet && selected->length > 0;
  if (!sends_bytes) co_return co_await exchange.response().begin(std::move(head), selected->length);
  if (cold) {
    co_return co_await cache_.send_fetching(exchange, *cold->fetch, std::move(head),
                                            selected->offset, selected->length);
  }
  if (is_slice) {
    co_return co_await erasure_.send_ec(exchange, r.object, *object, std::move(head), selected->offset,
                               selected->length);
  }
  // Checked block by block as it goes (only the blocks the range touches).
  CO_RETURN_IF_ERROR(co_await replication_.send_verified(exchange, store::ReadCheck::kVerify, r.object, *object, std::move(head),
                                                         selected->offset, selected->length));
  bytes_sent_.add(selected->length);
  co_return Status::ok();
}

http::Awaitable<Status> Target::get_members(http::Exchange& exchange, const ObjectRequest& request,
                                            const Resolved& r, std::optional<store::OpenObject>& object,
                                            const ColdRead* cold) {
  if (cold) {
    // An uncached shard of a remote bucket: members are read from the cached copy once the
    // (single-flight) fetch committed it; a HEAD starts that fetch too.
    std::optional<ColdRead> fetching;
    if (!cold->fetch) {
      CO_ASSIGN_OR_RETURN(ColdRead started, co_await cache_.fetch(r.bucket, r.object));
      fetching.emplace(std::move(started));
      cold = &*fetching;
    }
    CO_RETURN_IF_ERROR((co_await cache_.wait_fetched(*cold->fetch)).status());
    CO_ASSIGN_OR_RETURN(store::OpenObject fetched, co_await store_.open(r.object));
    object.emplace(std::move(fetched));
  }
  if (!object) co_return Status::internal("no copy of {} to read members from", r.object.name);
  // An erasure-coded shard: its index and bytes come from its slices (get_coded_members).
  if (object->record().has_ec()) co_return co_await get_coded_members(exchange, request, r, *object);
  // Member bytes are checked block by block as Shards sends them (the index is trusted);
  // a shard written before block sums is checked whole here, as before, and only once.
  store::ReadCheck member_check = store::ReadCheck::kVerify;
  if (!store::has_block_sums(object->record())) {
    CO_RETURN_IF_ERROR(co_await replication_.verify_read(*object));
    member_check = store::ReadCheck::kNone;
  }
  CO_ASSIGN_OR_RETURN(const std::shared_ptr<const shards::MemberIndex> members, co_await shards_.index_of(r.object, *object));
  const wire::ArchiveIndex* index = &members->index();
  const shards::ArchiveRead& read = *request.archive;
  // Each branch's locals have names of their own (GCC 12, docs/adr/0003 rule 3).
  if (read.lists) {
    shards_.note_member_read(0);
    http::ResponseHead list_head = answer_head(request);
    list_head.headers.set("Content-Type", "application/json");
    const std::string list = request.op == ObjectOp::kHead ? "" : wire::archive_list_json(*index);
    co_return co_await exchange.response().send(std::move(list_head), list);
  }
  if (read.mode) {
    CO_ASSIGN_OR_RETURN(const std::vector<const wire::ArchiveMember*> chosen,
                        archive::select_members(*index, *read.mode, read.path));
    http::ResponseHead tar_head = answer_head(request);
    if (request.op == ObjectOp::kHead) {
      tar_head.headers.set("Content-Type", "application/x-tar");
      co_return co_await exchange.response().begin(std::move(tar_head), 0);
    }
    const std::string_view prefix = read.batch_prefix ? std::string_view(*read.batch_prefix) : std::string_view();
    const Status tar_sent = co_await shards_.send_tar(exchange, std::move(tar_head), *object, index->format(), chosen, prefix,
                                                      /*ends=*/!read.batch_prefix, member_check);
    // A corrupt block found once bytes went out: the answer is cut; the copy is repaired.
    if (tar_sent.code() == Code::kDataLoss && exchange.response().has_begun()) {
      co_await replication_.repair_later(r.object, object->record().generation());
    }
    co_return tar_sent;
  }
  CO_ASSIGN_OR_RETURN(const wire::ArchiveMember* member, shards::Shards::find(*members, read.path, r.object));
  auto selected = select_member_bytes(request, *member);
  if (!selected && selected.error().reason() == "InvalidRange") {
    co_return co_await refuse_range(exchange, request, selected.error(), member->size());
  }
  if (!selected) co_return std::move(selected).error();
  http::ResponseHead head = member_head(request, *selected, member->size(), object->record().mtime_unix_nanos());
  const bool sends_bytes = request.op == ObjectOp::kGet;
  const Status member_sent = co_await shards_.send_member(exchange, std::move(head), *object, index->format(), *member,
                                                          selected->offset, selected->length, sends_bytes,
                                                          member_check);
  if (member_sent.code() == Code::kDataLoss && exchange.response().has_begun()) {
    co_await replication_.repair_later(r.object, object->record().generation());
  }
  CO_RETURN_IF_ERROR(member_sent);
  if (sends_bytes) bytes_sent_.add(selected->length);
  co_return Status::ok();
}

http::Awaitable<Status> Target::get_coded_members(http::Exchange& exchange, const ObjectRequest& request,
                                                  const Resolved& r, store::OpenObject& mine) {
  const wire::ObjectRecord whole = erasure::Erasure::object_view(mine.record());
  const uint64_t generation = mine.record().generation();
  archive::ReadAt coded = coded_reader(exchange.executor(), store_, erasure_, r.bucket, r.object, generation, whole.size());
  CO_ASSIGN_OR_RETURN(const std::shared_ptr<const shards::MemberIndex> coded_index,
                      co_await shards_.index_of_coded(r.object, generation, whole.size(), std::move(coded)));
  const wire::ArchiveIndex& members = coded_index->index();
  const shards::ArchiveRead& coded_read = *request.archive;
  if (coded_read.lists) {
    shards_.note_member_read(0);
    http::ResponseHead coded_list_head = answer_head(request);
    coded_list_head.headers.set("Content-Type", "application/json");
    const std::string coded_list = request.op == ObjectOp::kHead ? "" : wire::archive_list_json(members);
    co_return co_await exchange.response().send(std::move(coded_list_head), coded_list);
  }
  if (members.format() != wire::ARCHIVE_FORMAT_TAR) {
    co_return co_await get_coded_compressed_members(exchange, request, r, mine, *coded_index);
  }
  if (coded_read.mode) {
    CO_ASSIGN_OR_RETURN(const std::vector<const wire::ArchiveMember*> coded_chosen,
                        archive::select_members(members, *coded_read.mode, coded_read.path));
    http::ResponseHead coded_tar_head = answer_head(request);
    if (request.op == ObjectOp::kHead) {
      coded_tar_head.headers.set("Content-Type", "application/x-tar");
      co_return co_await exchange.response().begin(std::move(coded_tar_head), 0);
    }
    const std::string_view coded_prefix =
        coded_read.batch_prefix ? std::string_view(*coded_read.batch_prefix) : std::string_view();
    const shards::Shards::ObjectBytes from_slices = [this, &r, &mine](uint64_t offset, uint64_t length,
                                                                      http::ResponseWriter& out) {
      return read_coded_into(r, mine, offset, length, out);
    };
    co_return co_await shards_.send_tar_of(exchange, std::move(coded_tar_head), seconds_of(whole.mtime_unix_nanos()),
                                           coded_chosen, coded_prefix, /*ends=*/!coded_read.batch_prefix, from_slices);
  }
  CO_ASSIGN_OR_RETURN(const wire::ArchiveMember* coded_member, shards::Shards::find(*coded_index, coded_read.path, r.object));
  auto coded_selected = select_member_bytes(request, *coded_member);
  if (!coded_selected && coded_selected.error().reason() == "InvalidRange") {
    co_return co_await refuse_range(exchange, request, coded_selected.error(), coded_member->size());
  }
  if (!coded_selected) co_return std::move(coded_selected).error();
  http::ResponseHead coded_head =
      member_head(request, *coded_selected, coded_member->size(), whole.mtime_unix_nanos());
  coded_head.headers.set("Content-Type", "application/octet-stream");
  if (request.op != ObjectOp::kGet || coded_selected->length == 0) {
    co_return co_await exchange.response().begin(std::move(coded_head), coded_selected->length);
  }
  CO_RETURN_IF_ERROR(co_await erasure_.send_ec(exchange, r.object, mine, std::move(coded_head),
                                               coded_member->offset() + coded_selected->offset,
                                               coded_selected->length));
  shards_.note_member_read(coded_selected->length);
  bytes_sent_.add(coded_selected->length);
  co_return Status::ok();
}

http::Awaitable<Status> Target::get_coded_compressed_members(http::Exchange& exchange, const ObjectRequest& request,
                                                             const Resolved& r, store::OpenObject& mine,
                                                             const shards::MemberIndex& index) {
  // Decompressed from the object's bytes as its slices give them (coded_reader: blocking,
  // on the decompressor's pool), as a plain copy's are from its file.
  const wire::ObjectRecord whole = erasure::Erasure::object_view(mine.record());
  const shards::Shards::ArchiveBytes from_slices{
      coded_reader(exchange.executor(), store_, erasure_, r.bucket, r.object, mine.record().generation(), whole.size()),
      whole.size()};
  const wire::ArchiveFormat format = index.index().format();
  const shards::ArchiveRead& read = *request.archive;
  if (read.mode) {
    CO_ASSIGN_OR_RETURN(const std::vector<const wire::ArchiveMember*> chosen,
                        archive::select_members(index.index(), *read.mode, read.path));
    http::ResponseHead tar_head = answer_head(request);
    if (request.op == ObjectOp::kHead) {
      tar_head.headers.set("Content-Type", "application/x-tar");
      co_return co_await exchange.response().begin(std::move(tar_head), 0);
    }
    const std::string_view prefix = read.batch_prefix ? std::string_view(*read.batch_prefix) : std::string_view();
    co_return co_await shards_.send_decompressed_tar(exchange, std::move(tar_head), from_slices,
                                                     seconds_of(whole.mtime_unix_nanos()), format, chosen, prefix,
                                                     /*ends=*/!read.batch_prefix);
  }
  CO_ASSIGN_OR_RETURN(const wire::ArchiveMember* member, shards::Shards::find(index, read.path, r.object));
  auto selected = select_member_bytes(request, *member);
  if (!selected && selected.error().reason() == "InvalidRange") {
    co_return co_await refuse_range(exchange, request, selected.error(), member->size());
  }
  if (!selected) co_return std::move(selected).error();
  http::ResponseHead head = member_head(request, *selected, member->size(), whole.mtime_unix_nanos());
  head.headers.set("Content-Type", "application/octet-stream");
  CO_RETURN_IF_ERROR(co_await exchange.response().begin(std::move(head), selected->length));
  if (request.op != ObjectOp::kGet || selected->length == 0) co_return Status::ok();
  CO_RETURN_IF_ERROR(co_await shards_.send_decompressed(exchange.response(), from_slices, format, *member,
                                                       selected->offset, selected->length));
  shards_.note_member_read(selected->length);
  bytes_sent_.add(selected->length);
  co_return Status::ok();
}

http::Awaitable<Status> Target::read_coded_into(const Resolved& r, store::OpenObject& mine, uint64_t offset,
                                                uint64_t length, http::ResponseWriter& out) {
  const erasure::Erasure::Sink to_out = [&out](std::span<const char> bytes) { return out.write(bytes); };
  co_return co_await erasure_.read_ec(r.object, mine, offset, length, to_out);
}

http::Awaitable<Status> Target::refuse_range(http::Exchange& exchange, const ObjectRequest& request,
                                             const Status& error, uint64_t size) {
  if (request.is_s3()) {
    co_return Status::out_of_range("The requested range is not satisfiable")
        .with_reason("InvalidRange");
  }
  // The native 416 names the object's size, so a client can ask again within it.
  http::ResponseHead head;
  head.status = 416;
  head.headers.set("Content-Range", fmt::format("bytes */{}", size));
  head.headers.set("Content-Type", "application/json");
  co_return co_await exchange.response().send(std::move(head), wire::error_json(error));
}

http::Awaitable<Status> Target::delete_object(http::Exchange& exchange,
                                              const ObjectRequest& request, const Resolved& r) {
  deletes_.add();
  Status removed;  // no ternary around co_await (docs/adr/0003)
  if (wire::is_remote(r.bucket.props())) {
    removed = co_await remove_remote(r);
  } else {
    removed = co_await rebalance_.remove_everywhere(r.object);
  }
  // S3's DeleteObject of a missing key succeeds; the native API says it was not there.
  const bool is_done = removed.is_ok() || (request.is_s3() && removed.code() == Code::kNotFound);
  if (!is_done) co_return removed;
  http::ResponseHead head = answer_head(request, 204);
  co_return co_await exchange.response().send(std::move(head), "");
}

// A copy source being read: its native GET's answer head, its body still to come.
struct Target::CopyFrom {
  std::unique_ptr<http::Call> call;
  http::ClientResponse head;
  uint64_t size = 0;
};

http::Awaitable<Result<Target::CopyFrom>> Target::open_copy_source(const ObjectRequest& request) {
  const CopySource& source = *request.copy_source;
  const auto source_bucket = maps_.find_bucket(source.bucket);
  if (!source_bucket) {
    co_return Status::not_found("The specified bucket does not exist: {}", source.bucket)
        .with_reason("NoSuchBucket");
  }
  // The source comes from a holder that is up (its owner first) through the native API (a
  // loopback call when that is this node): one path, with sendfile on the serving side.
  const auto holders =
      maps_.placement()->holders(ObjectRef{BucketId(source_bucket->id()), source.name},
                                 wire::holder_count(source_bucket->props()));
  const auto up = std::find_if(holders.begin(), holders.end(), [](const wire::NodeInfo& n) {
    return n.state() != wire::NODE_STATE_DOWN;
  });
  const wire::NodeInfo owner = up != holders.end() ? *up : holders.front();
  CO_ASSIGN_OR_RETURN(const http::Endpoint from, http::Endpoint::parse(owner.url()));
  http::ClientRequest get;
  get.method = http::Method::kGet;
  get.target = "/v1/objects/" + text::percent_encode(source.bucket) + "/" +
               text::percent_encode_path(source.name);
  get.headers.set("x-amz-checksum-mode", "ENABLED");
  get.headers.set(http::kNodeMapVersionHeader, std::to_string(maps_.node_map()->version()));
  std::optional<uint64_t> range_length;
  if (source.range) {
    const auto range = http::parse_closed_range(*source.range);
    if (!range) {
      co_return Status::invalid_argument(
          "The x-amz-copy-source-range value must be of the form bytes=first-last, not {}", *source.range)
          .with_reason("InvalidArgument");
    }
    range_length = range->length;
    get.headers.set("Range", *source.range);
  }
  CopyFrom copy;
  CO_ASSIGN_OR_RETURN(copy.call, co_await client_->start(from, std::move(get), uint64_t{0}));
  CO_ASSIGN_OR_RETURN(copy.head, co_await copy.call->finish());
  const int status = copy.head.status;
  if (status == 404) {
    co_return Status::not_found("The specified key does not exist: {}/{}", source.bucket,
                                source.name)
        .with_reason("NoSuchKey");
  }
  // A source range must lie within the source, where a GET's Range may run past its end
  // (AWS: 400 InvalidArgument).
  const bool is_outside = range_length && (status == 416 || (status == 206 && copy.head.content_length != *range_length));
  if (is_outside) {
    const std::string_view content_range = copy.head.headers.get("Content-Range").value_or("");
    const size_t slash = content_range.rfind('/');
    co_return Status::invalid_argument("Range specified is not valid for source object of size: {}",
                                       slash == std::string_view::npos ? "?" : content_range.substr(slash + 1))
        .with_reason("InvalidArgument");
  }
  if (status != 200 && status != 206) {
    co_return Status::unavailable("reading copy source {}/{} from {}: HTTP {}", source.bucket,
                                  source.name, owner.id(), status);
  }
  const std::string etag = s3api::unquote_etag(copy.head.headers.get("ETag").value_or(""));
  const int64_t mtime =
      s3::parse_http_date(copy.head.headers.get("Last-Modified").value_or("")).value_or(0);
  if (s3::evaluate_copy_source(source.conditions.view(), etag, mtime) !=
      s3::ConditionResult::kProceed) {
    co_return Status::failed_precondition(
        "At least one of the pre-conditions you specified did not hold")
        .with_reason("PreconditionFailed");
  }
  copy.size = copy.head.content_length.value_or(0);
  co_return copy;
}

http::Awaitable<Status> Target::copy_object(http::Exchange& exchange, const ObjectRequest& request,
                                            const Resolved& r) {
  CO_ASSIGN_OR_RETURN(CopyFrom source, co_await open_copy_source(request));
  store::PutOptions options = put_options(request, r.bucket);
  options.expected_size = source.size;
  if (request.part && source.size > request.max_size) {
    co_return Status::invalid_argument("A part may hold at most 5 GiB")
        .with_reason("EntityTooLarge");
  }
  if (!request.part) {
    if (source.size > request.max_size) {
      co_return Status::invalid_argument(
          "The copy source is larger than the maximum allowable size")
          .with_reason("InvalidRequest");
    }
    CO_ASSIGN_OR_RETURN(options.attributes, copy_attributes(request, source.head.headers));
  }
  CO_ASSIGN_OR_RETURN(const std::optional<s3::ChecksumAlgorithm> upload_sum, co_await upload_checksum(request, r));
  CO_ASSIGN_OR_RETURN(auto writer, co_await open_writer(request, r, std::move(options)));
  std::optional<s3::Checksum> part_sum;
  std::vector<s3::Checksum*> checksums;
  if (upload_sum) checksums.push_back(&part_sum.emplace(*upload_sum));
  CO_ASSIGN_OR_RETURN(const uint64_t copied, co_await receive(source.call->body(), *writer, source.size, std::move(checksums)));
  if (copied != source.size) {
    co_return Status::unavailable("copy source {}/{} ended early", request.copy_source->bucket,
                                  request.copy_source->name);
  }
  if (part_sum) writer->set_checksum(std::string(s3::checksum_name(*upload_sum)), part_sum->base64());
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord record, co_await commit_write(request, r, *writer));
  s3::XmlWriter xml;
  xml.open(request.part ? "CopyPartResult" : "CopyObjectResult", s3::kS3Xmlns)
      .element("LastModified", s3::format_iso8601(record.mtime_unix_nanos()))
      .element("ETag", quoted(s3api::etag_of(record)))
      .close();
  co_return co_await s3api::send_xml(exchange, *request.s3, xml.finish());
}

}  // namespace silo::target
