#include "dsort/worker.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <charconv>
#include <filesystem>
#include <optional>
#include <unordered_map>

#include "archive/gzip_writer.h"
#include "archive/members.h"
#include "archive/tar_reader.h"
#include "archive/tar_writer.h"
#include "async/gather.h"
#include "batch/batch_stream.h"
#include "batch/owner_fetcher.h"
#include "batch/run_fetcher.h"
#include "async/sleep.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "http/reply.h"
#include "wire/batch_json.h"
#include "wire/json.h"
#include "wire/name_template.h"

namespace silo::dsort {
namespace {

namespace asio = boost::asio;
using archive::kTarEndBytes;

constexpr size_t kMaxStartBody = 1 << 20;
constexpr size_t kMaxPlanBody = 512ull << 20;
constexpr size_t kMaxListBody = 64ull << 20;        // an archive's member list
constexpr size_t kMaxContentsBody = 256ull << 20;   // the content members of one shard
constexpr size_t kMaxContentBody = 1 << 20;         // one loose content member
constexpr size_t kMaxKeyListBody = 1ull << 30;      // the key list of an order by list
constexpr size_t kExtractWindow = 8;                // input shards read at once
constexpr std::chrono::seconds kCreationHeartbeat{5};
// A job's part that its coordinator has not called for this long is dropped (the primary
// restarted, or the job's end never came).
constexpr std::chrono::minutes kAbandonedAfter{15};
constexpr std::chrono::seconds kAbandonedCheck{30};

// Spilled runs live under <mountpath>/dsort/<job> (docs/on-disk-format.md).
std::string spill_root(const store::Store& store) {
  for (const auto& mp : store.mountpaths()) {
    if (mp.state == store::MountpathState::kInService) return mp.path + "/dsort";
  }
  return {};
}

}  // namespace

std::string object_path(std::string_view bucket, std::string_view name) {
  return "/v1/objects/" + text::percent_encode(bucket) + "/" + text::percent_encode_path(name);
}

Status check_answer(const http::ClientResponse& answer, std::string_view what) {
  if (answer.status >= 200 && answer.status < 300) return Status::ok();
  return http::status_of_answer(answer.status, answer.body, what);
}

std::string encode_plan(const ShardPlan& plan) {
  std::string out;
  append_varint(out, plan.name.size());
  out += plan.name;
  append_varint(out, plan.size);
  append_varint(out, plan.records.size());
  for (const Record& r : plan.records) append_record(out, r);
  return out;
}

Result<ShardPlan> decode_plan(std::string_view bytes) {
  ShardPlan plan;
  const auto name_size = take_varint(bytes);
  if (!name_size || *name_size == 0 || *name_size > bytes.size()) {
    return Status::invalid_argument("a shard plan has no name");
  }
  plan.name.assign(bytes.substr(0, *name_size));
  bytes.remove_prefix(*name_size);
  const auto size = take_varint(bytes);
  const auto count = take_varint(bytes);
  if (!size || !count || *count == 0 || *count > bytes.size()) {
    return Status::invalid_argument("shard plan {} is cut short or has no records", plan.name);
  }
  plan.size = *size;
  plan.records.reserve(*count);
  for (uint64_t i = 0; i < *count; ++i) {
    ASSIGN_OR_RETURN(Record r, take_record(bytes));
    plan.records.push_back(std::move(r));
  }
  if (!bytes.empty()) return Status::invalid_argument("shard plan {}: {} bytes after its records", plan.name, bytes.size());
  return plan;
}

struct Worker::Job {
  std::string id;
  wire::DsortSpec spec;
  wire::Bucket input;
  std::atomic<bool> is_stopped{false};
  // When the coordinator last called (drop_when_abandoned()).
  std::atomic<std::chrono::steady_clock::duration> last_call{std::chrono::steady_clock::now().time_since_epoch()};
  // Order by list: each key's output shard and place in it.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> list;

  Mutex mutex;
  wire::RebalanceProgress progress GUARDED_BY(mutex);

  // Used on disk_ threads, one task at a time per job.
  Mutex sorter_mutex;
  std::unique_ptr<RecordSorter> sorter GUARDED_BY(sorter_mutex);
  uint64_t next_page GUARDED_BY(sorter_mutex) = 0;
  std::string last_page GUARDED_BY(sorter_mutex);
  bool last_more GUARDED_BY(sorter_mutex) = false;

  void fail(const Status& s) {
    MutexLock lock(mutex);
    progress.set_failed(true);
    progress.set_finished(true);
    progress.set_last_error(s.to_string());
    progress.set_errors(progress.errors() + 1);
  }
};

Worker::Worker(cluster::ClusterMaps& maps, store::Store& store, std::shared_ptr<http::Client> client,
               wire::NodeInfo self, stats::Registry& stats)
    : maps_(maps),
      store_(store),
      client_(std::move(client)),
      self_(std::move(self)),
      records_(stats.counter("silo_dsort_records_total", "Sample records extracted by resharding jobs.")),
      spilled_(stats.counter("silo_dsort_spilled_bytes_total", "Bytes of sorted runs resharding jobs spilled to disk.")),
      shards_(stats.counter("silo_dsort_shards_created_total", "Output shards resharding jobs created here.")),
      shard_bytes_(stats.counter("silo_dsort_shard_bytes_total", "Bytes of the output shards created here.")) {
  auto endpoint = http::Endpoint::parse(self_.url());
  SILO_CHECK(endpoint.has_value()) << "the node url " << self_.url();
  self_endpoint_ = *endpoint;
  // Runs of jobs that ended with the process are of no use now.
  for (const auto& mp : store_.mountpaths()) {
    std::error_code ignored;
    std::filesystem::remove_all(mp.path + "/dsort", ignored);
  }
}

Worker::~Worker() { stop_all(); }

void Worker::stop_all() {
  MutexLock lock(mutex_);
  for (auto& [id, job] : jobs_) job->is_stopped = true;
}

std::shared_ptr<Worker::Job> Worker::find(const std::string& id) {
  MutexLock lock(mutex_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return nullptr;
  it->second->last_call = std::chrono::steady_clock::now().time_since_epoch();
  return it->second;
}

http::Awaitable<void> Worker::handle(http::Exchange& exchange, std::string_view rest) {
  const http::RequestHead& request = exchange.request();
  const size_t slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  const std::string_view what = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  Status s;
  if (id.empty() || !id.starts_with("dsort-")) {
    s = Status::not_found("no dsort task '{}' here", id);
  } else if (what.empty() && request.method == http::Method::kPost) {
    s = co_await start(exchange, id);
    if (s.is_ok()) co_return;
  } else if (const std::shared_ptr<Job> job = find(id); job == nullptr) {
    s = Status::not_found("no dsort task {} here", id);
  } else if (what.empty() && request.method == http::Method::kGet) {
    wire::RebalanceProgress progress;
    {
      MutexLock lock(job->mutex);
      progress = job->progress;
    }
    http::ResponseHead head;
    head.headers.set("Content-Type", "application/x-protobuf");
    std::ignore = co_await exchange.response().send(std::move(head), wire::encode(std::move(progress)));
    co_return;
  } else if (what.empty() && request.method == http::Method::kDelete) {
    job->is_stopped = true;
    {
      MutexLock lock(mutex_);
      jobs_.erase(id);
    }
    // The runs go with the sorter, on a disk thread rather than here.
    std::ignore = co_await disk_.run([&job] {
      MutexLock lock(job->sorter_mutex);
      job->sorter.reset();
      return 0;
    });
    http::ResponseHead gone;
    gone.status = 204;
    std::ignore = co_await exchange.response().send(std::move(gone), "");
    co_return;
  } else if (what == "records" && request.method == http::Method::kGet) {
    s = co_await send_page(exchange, *job);
    if (s.is_ok()) co_return;
  } else if (what == "shards" && request.method == http::Method::kPost) {
    s = co_await answer_creation(exchange, job);
    if (s.is_ok()) co_return;
  } else {
    s = Status::not_found("no such dsort call: {} {}", request.method_text, request.path);
  }
  co_await http::send_error(exchange, s);
}

http::Awaitable<Status> Worker::start(http::Exchange& exchange, const std::string& id) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxStartBody));
  CO_ASSIGN_OR_RETURN(wire::DsortSpec spec, wire::parse_dsort_spec_json(body));
  const auto input = maps_.find_bucket(spec.input_bucket);
  if (!input) co_return Status::not_found("bucket {} does not exist", spec.input_bucket).with_reason("NoSuchBucket");
  const std::string root = spill_root(store_);
  if (root.empty()) co_return Status::unavailable("no mountpath in service here to spill sorted runs to");
  auto job = std::make_shared<Job>();
  job->id = id;
  job->spec = std::move(spec);
  job->input = *input;
  {
    MutexLock lock(job->sorter_mutex);
    job->sorter = std::make_unique<RecordSorter>(
        root + "/" + id, job->spec.memory_limit > 0 ? job->spec.memory_limit : kDefaultMemoryLimit);
  }
  {
    MutexLock lock(job->mutex);
    job->progress.set_started_unix_nanos(Clock::real().unix_nanos());
  }
  bool is_new = false;
  {
    MutexLock lock(mutex_);
    is_new = jobs_.emplace(id, job).second;
  }
  if (is_new) asio::co_spawn(exchange.executor(), extract(job), asio::detached);
  // A retried start answers false.
  co_await http::send_json(exchange, 200, is_new ? R"({"started":true})" : R"({"started":false})");
  co_return Status::ok();
}

http::Awaitable<void> Worker::extract(std::shared_ptr<Job> job) {
  const Status extracted = co_await extract_all(*job);
  if (!extracted.is_ok()) {
    SILO_LOG_WARN("{}: extraction failed: {}", job->id, extracted);
    job->fail(extracted);
  } else {
    const auto finished = co_await disk_.run([&job]() -> Result<std::pair<uint64_t, uint64_t>> {
      MutexLock lock(job->sorter_mutex);
      if (job->sorter == nullptr) return Status::aborted("dropped");
      RETURN_IF_ERROR(job->sorter->finish());
      return std::make_pair(job->sorter->records(), job->sorter->spilled_bytes());
    });
    if (!finished) {
      job->fail(finished.error());
    } else {
      MutexLock lock(job->mutex);
      job->progress.set_spilled_bytes(finished->second);
      job->progress.set_finished(true);
      job->progress.set_finished_unix_nanos(Clock::real().unix_nanos());
    }
  }
  co_await drop_when_abandoned(job);
}

http::Awaitable<void> Worker::drop_when_abandoned(std::shared_ptr<Job> job) {
  std::unique_ptr<asio::steady_timer> timer;
  while (!job->is_stopped) {
    co_await async::pause(timer, kAbandonedCheck);
    const auto idle = std::chrono::steady_clock::now().time_since_epoch() - job->last_call.load();
    if (job->is_stopped || idle < kAbandonedAfter) continue;
    SILO_LOG_WARN("{}: no call from its coordinator for {} s: its records and runs are dropped", job->id,
                  std::chrono::duration_cast<std::chrono::seconds>(idle).count());
    job->is_stopped = true;
    {
      MutexLock lock(mutex_);
      jobs_.erase(job->id);
    }
    std::ignore = co_await disk_.run([&job] {
      MutexLock lock(job->sorter_mutex);
      job->sorter.reset();
      return 0;
    });
  }
}

http::Awaitable<Result<http::ClientResponse>> Worker::get_here(std::string target, size_t max_body) {
  http::ClientRequest request;
  request.method = http::Method::kGet;
  request.target = std::move(target);
  co_return co_await client_->call(self_endpoint_, std::move(request), "", max_body);
}

http::Awaitable<Status> Worker::extract_all(Job& job) {
  const wire::DsortSpec& spec = job.spec;
  if (spec.order == wire::DsortOrder::kList) CO_RETURN_IF_ERROR(co_await load_list(job));
  // The inputs this target owns under the map the job started with (the coordinator
  // fails the job when the targets change, so every input has exactly one reader).
  const auto placement = maps_.placement();
  const BucketId bucket_id(job.input.id());
  const auto is_mine = [&placement, &bucket_id, this](const std::string& name) {
    return placement->owner(ObjectRef{bucket_id, name}).id() == self_.id();
  };
  std::vector<std::string> shards;
  if (!spec.input_template.empty()) {
    CO_ASSIGN_OR_RETURN(const wire::NameTemplate names, wire::NameTemplate::parse(spec.input_template));
    for (uint64_t i = 0; i < names.size(); ++i) {
      std::string name = names.name_at(i);
      if (is_mine(name)) shards.push_back(std::move(name));
    }
  } else {
    store::ListOptions options;
    options.prefix = spec.input_prefix;
    for (;;) {
      if (job.is_stopped) co_return Status::aborted("stopped");
      CO_ASSIGN_OR_RETURN(store::ListResult page, co_await store_.list(bucket_id, options));
      std::vector<wire::ListEntry> loose;
      for (auto& entry : page.entries) {
        if (!is_mine(entry.name())) continue;
        if (spec.input_loose) {
          loose.push_back(std::move(entry));
        } else if (archive::format_of_name(entry.name())) {
          shards.push_back(entry.name());
        }
      }
      if (!loose.empty()) CO_RETURN_IF_ERROR(co_await extract_loose(job, loose));
      if (!page.is_truncated || page.entries.empty()) break;
      options.start_after = page.entries.back().name();
    }
  }
  {
    MutexLock lock(job.mutex);
    if (!spec.input_loose) job.progress.set_objects_total(shards.size());
  }
  for (size_t first = 0; first < shards.size(); first += kExtractWindow) {
    if (job.is_stopped) co_return Status::aborted("stopped");
    const std::span<const std::string> window(shards.data() + first, std::min(shards.size() - first, kExtractWindow));
    CO_RETURN_IF_ERROR(co_await extract_shards(job, window));
  }
  co_return Status::ok();
}

http::Awaitable<Status> Worker::load_list(Job& job) {
  const std::string object = job.spec.list_object();
  const std::string path = object_path(job.spec.list_bucket, job.spec.list_name);
  CO_ASSIGN_OR_RETURN(const http::ClientResponse answer, co_await get_here(path, kMaxKeyListBody));
  CO_RETURN_IF_ERROR(check_answer(answer, "the key list " + object));
  CO_ASSIGN_OR_RETURN(const std::vector<wire::DsortListShard> listed, wire::parse_dsort_list_json(answer.body));
  for (uint32_t s = 0; s < listed.size(); ++s) {
    for (uint32_t k = 0; k < listed[s].keys.size(); ++k) job.list.emplace(listed[s].keys[k], std::make_pair(s, k));
  }
  co_return Status::ok();
}

http::Awaitable<Status> Worker::extract_shards(Job& job, std::span<const std::string> shards) {
  std::vector<std::vector<Record>> found(shards.size());
  std::vector<std::function<http::Awaitable<Status>()>> reads;
  for (size_t i = 0; i < shards.size(); ++i) {
    reads.push_back([this, &job, shards, &found, i]() { return extract_shard(job, shards[i], found[i]); });
  }
  const auto read = co_await async::gather<Status>(std::move(reads));
  for (const Status& s : read) CO_RETURN_IF_ERROR(s);
  std::vector<Record> records;
  for (auto& f : found) {
    for (Record& r : f) records.push_back(std::move(r));
  }
  const uint64_t samples = records.size();
  CO_RETURN_IF_ERROR(co_await add_records(job, std::move(records)));
  MutexLock lock(job.mutex);
  job.progress.set_objects_scanned(job.progress.objects_scanned() + shards.size());
  job.progress.set_samples(job.progress.samples() + samples);
  co_return Status::ok();
}

http::Awaitable<Status> Worker::extract_loose(Job& job, std::span<const wire::ListEntry> entries) {
  std::vector<Record> records;
  std::vector<std::string> keys;  // distinct, in listing order (a key's members are adjacent)
  for (const auto& entry : entries) {
    Record& r = records.emplace_back();
    r.key = std::string(archive::split_sample_key(entry.name()).first);
    r.source = entry.name();
    r.bytes = archive::tar_member_bytes(entry.name(), entry.size());
    if (keys.empty() || keys.back() != r.key) keys.push_back(r.key);
  }
  std::vector<std::string> contents(keys.size());
  if (job.spec.order == wire::DsortOrder::kContent) {
    for (size_t first = 0; first < keys.size(); first += kExtractWindow) {
      std::vector<std::function<http::Awaitable<Status>()>> reads;
      for (size_t i = first; i < std::min(keys.size(), first + kExtractWindow); ++i) {
        reads.push_back([this, &job, &keys, &contents, i]() { return loose_content(job, keys[i], contents[i]); });
      }
      const auto read = co_await async::gather<Status>(std::move(reads));
      for (const Status& s : read) CO_RETURN_IF_ERROR(s);
    }
  }
  size_t k = 0;
  for (Record& r : records) {
    while (keys[k] != r.key) ++k;
    CO_ASSIGN_OR_RETURN(r.sort_key, sort_key_of(job, r.key, &contents[k]));
  }
  const uint64_t samples = keys.size();
  CO_RETURN_IF_ERROR(co_await add_records(job, std::move(records)));
  MutexLock lock(job.mutex);
  job.progress.set_objects_scanned(job.progress.objects_scanned() + entries.size());
  job.progress.set_objects_total(job.progress.objects_scanned());
  job.progress.set_samples(job.progress.samples() + samples);
  co_return Status::ok();
}

http::Awaitable<Status> Worker::extract_shard(Job& job, const std::string& name, std::vector<Record>& out) {
  const std::string what = job.spec.input_bucket + "/" + name;
  CO_ASSIGN_OR_RETURN(const http::ClientResponse answer,
                      co_await get_here(object_path(job.spec.input_bucket, name) + "?archlist=true", kMaxListBody));
  CO_RETURN_IF_ERROR(check_answer(answer, "input shard " + what));
  CO_ASSIGN_OR_RETURN(const wire::ArchiveList list, wire::parse_archive_list_json(answer.body));
  // A sample: every member of the shard with its key, in archive order (what a wdskey
  // selection reads back when the shard is built).
  std::unordered_map<std::string_view, size_t> index;
  for (const auto& member : list.members) {
    const std::string_view key = archive::split_sample_key(member.name).first;
    auto [it, is_new] = index.emplace(key, out.size());
    if (is_new) {
      Record& added = out.emplace_back();
      added.key = std::string(key);
      added.source = name;
    }
    out[it->second].bytes += archive::tar_member_bytes(member.name, member.size);
  }
  std::map<std::string, std::string, std::less<>> contents;
  if (job.spec.order == wire::DsortOrder::kContent) {
    CO_ASSIGN_OR_RETURN(contents, co_await contents_of(job, name));
  }
  for (Record& r : out) {
    const auto content = contents.find(r.key);
    auto sort_key = sort_key_of(job, r.key, content != contents.end() ? &content->second : nullptr);
    if (!sort_key) co_return std::move(sort_key).error().annotate("input shard {}", what);
    r.sort_key = std::move(*sort_key);
  }
  co_return Status::ok();
}

http::Awaitable<Result<std::map<std::string, std::string, std::less<>>>> Worker::contents_of(Job& job,
                                                                                          const std::string& shard) {
  const std::string member = job.spec.content_member;
  const std::string path = object_path(job.spec.input_bucket, shard) + "?archpath=" + text::percent_encode("." + member) +
                           "&archmode=suffix";
  CO_ASSIGN_OR_RETURN(const http::ClientResponse answer, co_await get_here(path, kMaxContentsBody));
  CO_RETURN_IF_ERROR(check_answer(answer, "the ." + member + " members of " + shard));
  CO_ASSIGN_OR_RETURN(const wire::ArchiveIndex index,
                      archive::index_tar(archive::read_bytes(answer.body), answer.body.size()));
  std::map<std::string, std::string, std::less<>> contents;
  for (const auto& m : index.members()) {
    const auto [key, extension] = archive::split_sample_key(m.name());
    if (extension != member) continue;
    contents.insert_or_assign(std::string(key), answer.body.substr(m.offset(), m.size()));
  }
  co_return contents;
}

http::Awaitable<Status> Worker::loose_content(Job& job, const std::string& key, std::string& content) {
  const std::string name = key + "." + job.spec.content_member;
  CO_ASSIGN_OR_RETURN(http::ClientResponse answer,
                      co_await get_here(object_path(job.spec.input_bucket, name), kMaxContentBody));
  if (answer.status == 404) {
    co_return Status::invalid_argument("sample {} has no member {} to order by", key, name);
  }
  CO_RETURN_IF_ERROR(check_answer(answer, "content member " + name));
  content = std::move(answer.body);
  co_return Status::ok();
}

Result<std::string> Worker::sort_key_of(Job& job, const std::string& key, const std::string* content) {
  switch (job.spec.order) {
    case wire::DsortOrder::kRandom: return sort_key_random(key, job.spec.seed);
    case wire::DsortOrder::kKey: return sort_key_natural(key);
    case wire::DsortOrder::kContent: {
      if (content == nullptr) {
        return Status::invalid_argument("sample {} has no member .{} to order by", key, job.spec.content_member);
      }
      auto sort_key = sort_key_content(*content, job.spec.content_type);
      if (!sort_key) return std::move(sort_key).error().annotate("sample {}, member .{}", key, job.spec.content_member);
      return sort_key;
    }
    case wire::DsortOrder::kList: {
      const auto it = job.list.find(key);
      if (it == job.list.end()) {
        return Status::invalid_argument("sample {} is not in the key list {}", key, job.spec.list_object());
      }
      return sort_key_list(it->second.first, it->second.second);
    }
  }
  return Status::internal("unknown order");
}

http::Awaitable<Status> Worker::add_records(Job& job, std::vector<Record> records) {
  uint64_t bytes = 0;
  for (const Record& r : records) bytes += r.bytes;
  const uint64_t count = records.size();
  CO_ASSIGN_OR_RETURN(const uint64_t spilled, co_await disk_.run([&job, &records]() -> Result<uint64_t> {
    MutexLock lock(job.sorter_mutex);
    if (job.sorter == nullptr) return Status::aborted("dropped");
    for (Record& r : records) RETURN_IF_ERROR(job.sorter->add(std::move(r)));
    return job.sorter->spilled_bytes();
  }));
  records_.add(count);
  MutexLock lock(job.mutex);
  spilled_.add(spilled - job.progress.spilled_bytes());
  job.progress.set_spilled_bytes(spilled);
  job.progress.set_objects_moved(job.progress.objects_moved() + count);
  job.progress.set_bytes_moved(job.progress.bytes_moved() + bytes);
  co_return Status::ok();
}

http::Awaitable<Status> Worker::send_page(http::Exchange& exchange, Job& job) {
  const std::string page_text = exchange.request().query_param("page").value_or("");
  uint64_t page = 0;
  const auto [end, ec] = std::from_chars(page_text.data(), page_text.data() + page_text.size(), page);
  if (ec != std::errc() || end != page_text.data() + page_text.size()) {
    co_return Status::invalid_argument("records: 'page' must be a page number");
  }
  {
    MutexLock lock(job.mutex);
    if (!job.progress.finished() || job.progress.failed()) {
      co_return Status::failed_precondition("{}: extraction has not finished here", job.id);
    }
  }
  CO_ASSIGN_OR_RETURN(auto answer, co_await disk_.run([&job, page]() -> Result<std::pair<std::string, bool>> {
    MutexLock lock(job.sorter_mutex);
    if (job.sorter == nullptr) return Status::aborted("dropped");
    if (page + 1 == job.next_page) return std::make_pair(job.last_page, job.last_more);  // a retry
    if (page != job.next_page) {
      return Status::failed_precondition("records: page {} asked, page {} is next", page, job.next_page);
    }
    job.last_page.clear();
    ASSIGN_OR_RETURN(job.last_more, job.sorter->next_page(job.last_page, kPageBytes));
    ++job.next_page;
    return std::make_pair(job.last_page, job.last_more);
  }));
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/octet-stream");
  head.headers.set(std::string(kMoreHeader), answer.second ? "true" : "false");
  std::ignore = co_await exchange.response().send(std::move(head), std::move(answer.first));
  co_return Status::ok();
}

// What answer_creation() and the creation it started share.
struct Worker::Creation {
  ShardPlan plan;
  Status status;
  std::atomic<bool> is_done{false};
};

http::Awaitable<void> Worker::create(std::shared_ptr<Job> job, std::shared_ptr<Creation> creation) {
  creation->status = co_await create_shard(*job, creation->plan);
  creation->is_done = true;
}

http::Awaitable<Status> Worker::answer_creation(http::Exchange& exchange, std::shared_ptr<Job> job) {
  CO_ASSIGN_OR_RETURN(const std::string body, co_await http::read_all(exchange.body(), kMaxPlanBody));
  auto creation = std::make_shared<Creation>();
  CO_ASSIGN_OR_RETURN(creation->plan, decode_plan(body));
  asio::co_spawn(exchange.executor(), create(job, creation), asio::detached);
  // A large shard may take longer than the caller waits for a byte: the answer begins at
  // once and a space goes out every few seconds until the creation's result, the last
  // line: {"name", "size"} or {"error": {...}} (check_creation_answer()).
  http::ResponseHead head;
  head.headers.set("Content-Type", "application/json");
  const Status begun = co_await exchange.response().begin(std::move(head), std::nullopt);
  std::unique_ptr<asio::steady_timer> timer;
  auto last_beat = std::chrono::steady_clock::now();
  bool is_heard = begun.is_ok();
  while (!creation->is_done) {
    co_await async::pause(timer, std::chrono::milliseconds(50));
    if (is_heard && std::chrono::steady_clock::now() - last_beat > kCreationHeartbeat) {
      is_heard = (co_await exchange.response().write(std::string_view(" "))).is_ok();
      last_beat = std::chrono::steady_clock::now();
    }
  }
  // The caller gone: the shard is made anyway; a job that failed meanwhile removes it.
  if (!is_heard) co_return Status::ok();
  const std::string result =
      creation->status.is_ok()
          ? fmt::format(R"({{"name":{},"size":{}}})", wire::json_string(creation->plan.name), creation->plan.size)
          : wire::error_json(creation->status);
  std::ignore = co_await exchange.response().write(result);
  co_return Status::ok();
}

Status check_creation_answer(const http::ClientResponse& answer, std::string_view what) {
  RETURN_IF_ERROR(check_answer(answer, what));
  const size_t first = answer.body.find_first_not_of(' ');
  if (first != std::string::npos && answer.body.compare(first, 9, R"({"error":)") == 0) {
    return http::status_of_answer(500, std::string_view(answer.body).substr(first), what);
  }
  if (first == std::string::npos) return Status::unavailable("{}: the answer ended before its result", what);
  return Status::ok();
}

// The body of an output shard's PUT: the tar stream as it comes, or gzip-compressed
// (a tgz shard), sent in pieces of about kCompressedPiece.
class ShardBody {
 public:
  ShardBody(http::Call& put, bool is_gzip) : put_(put) {
    if (is_gzip) gzip_.emplace();
  }
  http::Awaitable<Status> write(std::span<const char> data) {
    if (!gzip_) co_return co_await put_.write(data);
    CO_RETURN_IF_ERROR(gzip_->write(data, compressed_));
    if (compressed_.size() < kCompressedPiece) co_return Status::ok();
    co_return co_await send_compressed();
  }
  // After the last write: the rest of the compressed stream.
  http::Awaitable<Status> finish() {
    if (!gzip_) co_return Status::ok();
    CO_RETURN_IF_ERROR(gzip_->finish(compressed_));
    co_return co_await send_compressed();
  }

 private:
  static constexpr size_t kCompressedPiece = 256 * 1024;
  http::Awaitable<Status> send_compressed() {
    if (compressed_.empty()) co_return Status::ok();
    const Status sent = co_await put_.write(compressed_);
    compressed_.clear();
    co_return sent;
  }
  http::Call& put_;
  std::optional<archive::GzipWriter> gzip_;
  std::string compressed_;
};

// The response side of an in-process batch GET (batch::stream_batch) whose tar stream
// becomes the body of an output shard's PUT: its bytes go to `put` as they come, except
// the stream's end-of-archive blocks, held back (the shard gets one pair at its very
// end), and nothing past `limit` bytes in all.
class ShardSink final : public http::Exchange, public http::ResponseWriter {
 public:
  ShardSink(ShardBody& put, uint64_t& written, uint64_t limit, boost::asio::any_io_executor executor)
      : put_(put), written_(written), limit_(limit), executor_(std::move(executor)) {
    head_.method = http::Method::kPost;
    head_.method_text = "POST";
    head_.target = head_.path = "/v1/batch";
  }
  // The stream ended with its end blocks, and was not cut.
  bool ended_whole() const { return !is_cut_ && tail_ == archive::tar_end(); }

  // http::Exchange
  const http::RequestHead& request() const override { return head_; }
  http::BodyReader& body() override { return no_body_; }
  http::ResponseWriter& response() override { return *this; }
  boost::asio::any_io_executor executor() override { return executor_; }

  // http::ResponseWriter
  // stream_batch() begins a 200 stream, or returns its error without answering.
  http::Awaitable<Status> send(http::ResponseHead, std::string) override {
    co_return Status::internal("a batch stream sends no whole answer");
  }
  http::Awaitable<Status> begin(http::ResponseHead, std::optional<uint64_t>) override {
    is_begun_ = true;
    co_return Status::ok();
  }
  http::Awaitable<Status> write(std::span<const char> data) override {
    if (is_cut_) co_return Status::aborted("the shard's stream was cut");
    tail_.append(data.data(), data.size());
    if (tail_.size() <= kTarEndBytes) co_return Status::ok();
    const size_t ready = tail_.size() - kTarEndBytes;
    if (written_ + ready > limit_) {
      co_return Status::internal("the samples come to more than the {} bytes extraction measured", limit_);
    }
    CO_RETURN_IF_ERROR(co_await put_.write(std::span<const char>(tail_.data(), ready)));
    written_ += ready;
    tail_.erase(0, ready);
    co_return Status::ok();
  }
  http::Awaitable<Status> send_file(int, uint64_t, uint64_t) override {
    co_return Status::internal("a batch stream sends no files");
  }
  bool has_begun() const override { return is_begun_; }
  void cut() override { is_cut_ = true; }

 private:
  class NoBody final : public http::BodyReader {
   public:
    http::Awaitable<Result<size_t>> read(std::span<char>) override { co_return size_t{0}; }
    bool is_done() const override { return true; }
  };
  ShardBody& put_;
  uint64_t& written_;
  const uint64_t limit_;
  boost::asio::any_io_executor executor_;
  http::RequestHead head_;
  NoBody no_body_;
  std::string tail_;
  bool is_begun_ = false;
  bool is_cut_ = false;
};

http::Awaitable<Status> Worker::create_shard(Job& job, const ShardPlan& plan) {
  const std::string what = job.spec.output_bucket + "/" + plan.name;
  if (plan.size < kTarEndBytes) co_return Status::invalid_argument("shard plan {}: size {}", what, plan.size);
  // The shard goes in by an ordinary PUT through this node: stored, indexed, copied or
  // coded like any; of exactly its size (a tgz: chunked, its tar stream counted before
  // compression); a stream that comes out short or long is never committed (the PUT is
  // dropped unfinished).
  const bool is_gzip = job.spec.output_gzip;
  http::ClientRequest put_request;
  put_request.method = http::Method::kPut;
  put_request.target = object_path(job.spec.output_bucket, plan.name);
  put_request.headers.set("Content-Type", is_gzip ? "application/gzip" : "application/x-tar");
  const std::optional<uint64_t> put_length = is_gzip ? std::nullopt : std::optional<uint64_t>(plan.size);
  CO_ASSIGN_OR_RETURN(const std::unique_ptr<http::Call> put,
                      co_await client_->start(self_endpoint_, std::move(put_request), put_length));
  ShardBody body(*put, is_gzip);
  // The samples: a batch GET run here, in process (each sample asked of the target that
  // holds it, a window ahead, in runs where it can), its stream written into the PUT.
  batch::OwnerFetcher owners(maps_, client_, self_.id());
  batch::RunFetcher runs(maps_, client_, owners);
  uint64_t written = 0;
  const uint64_t body_size = plan.size - kTarEndBytes;
  const auto executor = co_await asio::this_coro::executor;
  for (size_t first = 0; first < plan.records.size(); first += wire::kMaxBatchEntries) {
    if (job.is_stopped) co_return Status::aborted("{}: stopped", job.id);
    wire::BatchRequest batch;
    batch.plain_names = true;
    const size_t end = std::min(plan.records.size(), first + wire::kMaxBatchEntries);
    for (size_t i = first; i < end; ++i) {
      const Record& r = plan.records[i];
      wire::BatchEntry& e = batch.entries.emplace_back();
      e.bucket = job.spec.input_bucket;
      e.name = r.source;
      e.plain_name = true;
      if (!job.spec.input_loose) {
        e.archpath = r.key;
        e.archmode = "wdskey";
      }
    }
    ShardSink sink(body, written, body_size, executor);
    batch::StreamTally tally;
    const Status streamed = co_await batch::stream_batch(sink, batch, runs, batch::StreamOptions{}, tally);
    if (!streamed.is_ok()) co_return Status(streamed).annotate("the samples of {}", what);
    if (!sink.ended_whole()) {
      co_return Status::unavailable("the samples of {} ended before their end-of-archive blocks", what);
    }
  }
  if (written != body_size) {
    co_return Status::internal("the samples of {} came to {} bytes, not the {} extraction measured", what, written,
                               body_size);
  }
  const std::string end_blocks = archive::tar_end();
  CO_RETURN_IF_ERROR(co_await body.write(end_blocks));
  CO_RETURN_IF_ERROR(co_await body.finish());
  CO_ASSIGN_OR_RETURN(const http::ClientResponse stored, co_await put->finish());
  auto stored_body = co_await http::read_all(put->body(), 64 * 1024);
  if (stored.status != 200) {
    co_return http::status_of_answer(stored.status, stored_body ? *stored_body : "", "storing " + what);
  }
  shards_.add(1);
  shard_bytes_.add(plan.size);
  co_return Status::ok();
}

}  // namespace silo::dsort
