#include "dsort/coordinator.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>

#include "archive/tar_writer.h"
#include "async/gather.h"
#include "async/sleep.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "http/reply.h"
#include "wire/codec.h"
#include "wire/name_template.h"

namespace silo::dsort {
namespace {

namespace asio = boost::asio;

constexpr std::chrono::milliseconds kPoll{300};
constexpr size_t kMaxProgressBody = 64 * 1024;
constexpr size_t kMaxPageBody = 64ull << 20;
constexpr size_t kMaxKeyListBody = 1ull << 30;
constexpr int kPageTries = 3;
constexpr size_t kCleanupWindow = 16;
// A failed job's shards on targets it could not reach are removed when they are back.
constexpr std::chrono::seconds kRemoveLaterEvery{2};
constexpr std::chrono::minutes kRemoveLaterFor{30};

// The text every input name starts with: output names starting with it could be read as input.
std::string input_prefix(const wire::DsortSpec& spec) {
  if (spec.input_template.empty()) return spec.input_prefix;
  auto names = wire::NameTemplate::parse(spec.input_template);
  return names ? names->prefix() : spec.input_template;
}

uint64_t millis_since(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

std::string targets_fingerprint(const wire::NodeMap& map) {
  std::string out = fmt::format("rebalance {};", map.rebalance_id());
  for (const auto& n : map.nodes()) {
    if (!cluster::stores_objects(n)) continue;
    out += fmt::format("{}:{}:{};", n.id(), static_cast<int>(n.state()), static_cast<int>(n.mode()));
  }
  return out;
}

struct Coordinator::Run : std::enable_shared_from_this<Coordinator::Run> {
  wire::JobInfo job;
  wire::DsortSpec spec;
  std::string spec_json;
  wire::Bucket output;
  std::shared_ptr<const cluster::TargetPlacement> placement;
  std::vector<wire::NodeInfo> targets;
  std::string fingerprint;
  std::optional<wire::NameTemplate> names;  // the output template
  std::vector<std::string> list_names;      // order by list: the shards it names
  std::atomic<bool> is_aborted{false};
  std::atomic<bool> is_done{false};
  // The merge's output: the shard being cut, the plans cut and not sent yet.
  ShardPlan plan;
  uint32_t plan_list_shard = 0;
  std::vector<ShardPlan> ready;
  // Creations run as coroutines of their own, on any io thread.
  size_t creation_limit = 2;
  std::atomic<size_t> in_flight{0};
  std::atomic<uint64_t> shards_created{0};
  std::atomic<uint64_t> bytes_created{0};
  Status creation_error() const {
    MutexLock lock(mutex);
    return first_creation_error;
  }
  void fail_creation(const Status& s) {
    MutexLock lock(mutex);
    if (first_creation_error.is_ok()) first_creation_error = s;
  }
  // What each owner (a target id) was sent to create and has created.
  struct OwnerCounts {
    uint64_t shards_planned = 0, shards_created = 0;
    uint64_t samples_planned = 0, samples_created = 0;
    uint64_t bytes_planned = 0, bytes_created = 0;
  };
  void count_planned(const std::string& owner, const ShardPlan& sent_plan) {
    MutexLock lock(mutex);
    OwnerCounts& c = owners[owner];
    ++c.shards_planned;
    c.samples_planned += sent_plan.samples;
    c.bytes_planned += sent_plan.size;
  }
  void count_created(const std::string& owner, uint64_t samples, uint64_t bytes) {
    MutexLock lock(mutex);
    OwnerCounts& c = owners[owner];
    ++c.shards_created;
    c.samples_created += samples;
    c.bytes_created += bytes;
  }
  std::map<std::string, OwnerCounts> owner_counts() const {
    MutexLock lock(mutex);
    return owners;
  }
  mutable Mutex mutex;
  Status first_creation_error GUARDED_BY(mutex);
  std::map<std::string, OwnerCounts> owners GUARDED_BY(mutex);
  std::vector<uint64_t> records_ordered;  // per target (index in `targets`): merged so far
  std::vector<std::string> sent;  // every shard sent for creation, to remove on failure
  std::string last_key;     // the previous sample's key and input (duplicates)
  std::string last_source;
};

// A target's sorted records, a page at a time.
struct Coordinator::Cursor {
  wire::NodeInfo node;
  size_t index = 0;  // in Run::targets
  uint64_t next_page = 0;
  bool has_more = true;
  std::string page;
  std::string_view rest;
  std::optional<Record> current;
};

Coordinator::Coordinator(cluster::Primary& primary, cluster::ClusterMaps& maps, std::shared_ptr<http::Client> client)
    : primary_(primary), maps_(maps), client_(std::move(client)) {}

Coordinator::~Coordinator() { stop(); }

void Coordinator::stop() {
  is_stopping_ = true;
  MutexLock lock(mutex_);
  for (auto& [id, run] : runs_) run->is_aborted = true;
}

http::Awaitable<Result<http::ClientResponse>> Coordinator::call(const wire::NodeInfo& node, http::Method method,
                                                                std::string target, std::string body,
                                                                size_t max_body) {
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
  http::ClientRequest request;
  request.method = method;
  request.target = std::move(target);
  co_return co_await client_->call(to, std::move(request), std::move(body), max_body);
}

Status Coordinator::check(const Run& run) const {
  if (run.is_aborted) return Status::aborted("aborted");
  if (!primary_.is_active()) return Status::unavailable("this node is not the primary any more");
  const auto map = maps_.node_map();
  if (targets_fingerprint(*map) != run.fingerprint) {
    return Status::unavailable(
        "the cluster's targets changed during the job (a target went down, was added or left, or a rebalance "
        "started): its samples would move under it; run it again");
  }
  return Status::ok();
}

http::Awaitable<Result<wire::JobInfo>> Coordinator::start(std::string body) {
  CO_ASSIGN_OR_RETURN(wire::DsortSpec spec, wire::parse_dsort_spec_json(body));
  auto run = std::make_shared<Run>();
  const auto input = maps_.find_bucket(spec.input_bucket);
  if (!input) co_return Status::not_found("bucket {} does not exist", spec.input_bucket).with_reason("NoSuchBucket");
  const auto output = maps_.find_bucket(spec.output_bucket);
  if (!output) co_return Status::not_found("bucket {} does not exist", spec.output_bucket).with_reason("NoSuchBucket");
  run->output = *output;
  CO_ASSIGN_OR_RETURN(run->names, wire::NameTemplate::parse(spec.output_template));
  if (spec.input_bucket == spec.output_bucket) {
    const std::string in = input_prefix(spec);
    const std::string& out = run->names->prefix();
    if (out.starts_with(in) || in.starts_with(out)) {
      co_return Status::invalid_argument(
          "the output shards ({}) could be read as input ({}) in bucket {}: give them names the input does not "
          "select, or another bucket",
          spec.output_template, spec.input_template.empty() ? "prefix '" + spec.input_prefix + "'" : spec.input_template,
          spec.input_bucket);
    }
  }
  if (spec.order == wire::DsortOrder::kList) {
    if (!maps_.find_bucket(spec.list_bucket)) {
      co_return Status::not_found("bucket {} (of the key list) does not exist", spec.list_bucket)
          .with_reason("NoSuchBucket");
    }
  }
  const auto map = maps_.node_map();
  if (map->rebalance_id() != 0 && map->rebalance_phase() != wire::REBALANCE_PHASE_DONE) {
    co_return Status::unavailable("a rebalance is running (rebalance-{}): start the reshard once it is done",
                                  map->rebalance_id());
  }
  for (const auto& n : map->nodes()) {
    if (!cluster::stores_objects(n)) continue;
    if (n.state() == wire::NODE_STATE_DOWN || n.mode() != wire::NODE_MODE_NORMAL) {
      co_return Status::unavailable("target {} is down or leaving: a reshard needs every target", n.id());
    }
    run->targets.push_back(n);
  }
  if (run->targets.empty()) co_return Status::unavailable("no target is up to run a dsort");
  {
    // Reserved before the job is opened, so that two starts at once cannot both pass.
    MutexLock lock(mutex_);
    if (!writing_.insert(spec.output_bucket).second) {
      co_return Status::failed_precondition("another dsort writes into bucket {}; wait for it or abort it",
                                            spec.output_bucket);
    }
  }
  run->fingerprint = targets_fingerprint(*map);
  run->placement = maps_.placement();
  run->creation_limit = 2 * run->targets.size();
  run->spec_json = wire::dsort_spec_json(spec);
  run->spec = std::move(spec);
  auto opened = co_await primary_.open_job("dsort", "extraction");
  if (!opened) {
    MutexLock lock(mutex_);
    writing_.erase(run->spec.output_bucket);
    co_return std::move(opened).error();
  }
  run->job = std::move(*opened);
  run->job.mutable_dsort()->set_dry_run(run->spec.dry_run);
  {
    MutexLock lock(mutex_);
    runs_[run->job.id()] = run;
  }
  SILO_LOG_INFO("{} starts: {}", run->job.id(), run->spec_json);
  const auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, this->run(run), asio::detached);
  co_return run->job;
}

http::Awaitable<Status> Coordinator::abort(std::string id) {
  std::shared_ptr<Run> run;
  {
    MutexLock lock(mutex_);
    const auto it = runs_.find(id);
    if (it != runs_.end()) run = it->second;
  }
  if (run == nullptr) {
    // Running in the registry but not here: its coordinator went with a restart of the
    // primary (or the role moved); nothing runs it any more.
    std::optional<wire::JobInfo> orphan = primary_.jobs().find(id);
    if (!orphan || orphan->state() != "running") co_return Status::failed_precondition("job {} is not running", id);
    co_return co_await primary_.close_job(std::move(*orphan), "aborted",
                                          "aborted by an admin; its coordinator had stopped with the primary that ran "
                                          "it, so output shards it made may remain");
  }
  run->is_aborted = true;
  // The run sees it at its next step (the shards in creation finish first),
  // removes what it made and ends the job.
  std::unique_ptr<asio::steady_timer> timer;
  while (!run->is_done) co_await async::pause(timer, std::chrono::milliseconds(50));
  co_return Status::ok();
}

http::Awaitable<void> Coordinator::run(std::shared_ptr<Run> run) {
  Run& r = *run;
  const auto began = std::chrono::steady_clock::now();
  Status s = co_await extract(r);
  r.job.mutable_dsort()->set_extraction_ms(millis_since(began));
  const auto created_from = std::chrono::steady_clock::now();
  if (s.is_ok()) {
    r.job.set_phase("ordering and creation");
    primary_.jobs().update(r.job);
    s = co_await order_and_create(r);
    r.job.mutable_dsort()->set_creation_ms(millis_since(created_from));
  }
  std::string state = "finished";
  std::string detail;
  const wire::DsortSummary& d = r.job.dsort();
  if (s.is_ok()) {
    detail = fmt::format(
        "{}{} samples of {} input objects into {} shards of {} bytes in all (smallest {}, largest {}); extraction "
        "{:.1f} s, ordering and creation {:.1f} s; {} bytes spilled; {} duplicate keys",
        r.spec.dry_run ? "dry run: would put " : "", d.samples(), d.input_objects(), d.output_shards(), d.bytes(),
        d.smallest_shard(), d.largest_shard(), static_cast<double>(d.extraction_ms()) / 1e3,
        static_cast<double>(d.creation_ms()) / 1e3, d.spilled_bytes(), d.duplicate_keys());
  } else {
    state = r.is_aborted ? "aborted" : "failed";
    std::ignore = co_await drain(r);  // a creation that ends later would leave its shard
    const std::string removed = co_await remove_outputs(r);
    detail = fmt::format("{}; {}", r.is_aborted ? std::string("aborted by an admin") : s.to_string(), removed);
    if (!r.sent.empty()) {
      const auto executor = co_await asio::this_coro::executor;
      asio::co_spawn(executor, remove_later(run), asio::detached);
    }
    SILO_LOG_WARN("{} {}: {}", r.job.id(), state, detail);
  }
  co_await drop_parts(r);  // the targets' records and runs are of no use now
  if (!is_stopping_) {
    const Status closed = co_await primary_.close_job(r.job, state, detail);
    if (!closed.is_ok()) SILO_LOG_WARN("{}: ending the job: {}", r.job.id(), closed);
  }
  SILO_LOG_INFO("{} {}: {}", r.job.id(), state, detail);
  {
    MutexLock lock(mutex_);
    runs_.erase(r.job.id());
    writing_.erase(r.spec.output_bucket);
  }
  r.is_done = true;
}

http::Awaitable<Status> Coordinator::extract(Run& r) {
  const std::string task = std::string(kWorkerPath) + r.job.id();
  std::vector<std::function<http::Awaitable<Status>()>> starts;
  for (const auto& node : r.targets) {
    starts.push_back([this, &node, &task, &r]() -> http::Awaitable<Status> {
      CO_ASSIGN_OR_RETURN(const auto answer, co_await call(node, http::Method::kPost, task, r.spec_json, kMaxProgressBody));
      co_return check_answer(answer, node.id() + " starting its part");
    });
  }
  const auto started = co_await async::gather<Status>(std::move(starts));
  for (const Status& s : started) CO_RETURN_IF_ERROR(s);
  std::unique_ptr<asio::steady_timer> timer;
  for (;;) {
    co_await async::pause(timer, kPoll);
    CO_RETURN_IF_ERROR(check(r));
    std::vector<std::function<http::Awaitable<Result<wire::RebalanceProgress>>()>> polls;
    for (const auto& node : r.targets) {
      polls.push_back([this, &node, &task]() -> http::Awaitable<Result<wire::RebalanceProgress>> {
        CO_ASSIGN_OR_RETURN(const auto answer, co_await call(node, http::Method::kGet, task, "", kMaxProgressBody));
        CO_RETURN_IF_ERROR(check_answer(answer, node.id() + "'s part"));
        co_return wire::decode<wire::RebalanceProgress>(answer.body, wire::Source::kNetwork);
      });
    }
    const auto polled = co_await async::gather<Result<wire::RebalanceProgress>>(std::move(polls));
    bool all_finished = true;
    uint64_t scanned = 0, total = 0, samples = 0, bytes = 0, spilled = 0;
    for (size_t i = 0; i < polled.size(); ++i) {
      if (!polled[i]) {
        // Restarted (its part is gone) or unreachable: its inputs will not be read.
        Status lost = polled[i].error();
        co_return lost.annotate("the extraction on {} was lost", r.targets[i].id());
      }
      const wire::RebalanceProgress& p = *polled[i];
      if (p.failed()) co_return Status::unavailable("extraction on {}: {}", r.targets[i].id(), p.last_error());
      (*r.job.mutable_nodes())[r.targets[i].id()] = p;
      all_finished = all_finished && p.finished();
      scanned += p.objects_scanned();
      total += p.objects_total();
      samples += p.samples();
      bytes += p.bytes_moved();
      spilled += p.spilled_bytes();
    }
    r.job.set_objects_scanned(scanned);
    r.job.set_objects_total(std::max(total, scanned));
    wire::DsortSummary& d = *r.job.mutable_dsort();
    d.set_input_objects(scanned);
    d.set_input_bytes(bytes);
    d.set_spilled_bytes(spilled);
    if (!all_finished) d.set_samples(samples);
    primary_.jobs().update(r.job);
    if (all_finished) co_return Status::ok();
  }
}

http::Awaitable<Status> Coordinator::advance(Run& r, Cursor& cursor) {
  cursor.current.reset();
  while (cursor.rest.empty() && cursor.has_more) {
    CO_RETURN_IF_ERROR(check(r));
    const std::string target =
        fmt::format("{}{}/records?page={}", kWorkerPath, r.job.id(), cursor.next_page);
    Result<http::ClientResponse> answer = Status::unavailable("not asked");
    for (int attempt = 0; attempt < kPageTries; ++attempt) {
      answer = co_await call(cursor.node, http::Method::kGet, target, "", kMaxPageBody);
      if (answer || answer.error().code() != Code::kUnavailable) break;
    }
    if (!answer) co_return std::move(answer).error().annotate("reading the records of {}", cursor.node.id());
    CO_RETURN_IF_ERROR(check_answer(*answer, "the records of " + cursor.node.id()));
    cursor.page = std::move(answer->body);
    cursor.rest = cursor.page;
    cursor.has_more = answer->headers.get(kMoreHeader).value_or("false") == "true";
    ++cursor.next_page;
  }
  if (cursor.rest.empty()) co_return Status::ok();
  CO_ASSIGN_OR_RETURN(cursor.current, take_record(cursor.rest));
  co_return Status::ok();
}

http::Awaitable<Status> Coordinator::order_and_create(Run& r) {
  if (r.spec.order == wire::DsortOrder::kList) {
    const std::string path = object_path(r.spec.list_bucket, r.spec.list_name);
    CO_ASSIGN_OR_RETURN(const auto answer, co_await call(r.targets.front(), http::Method::kGet, path, "", kMaxKeyListBody));
    CO_RETURN_IF_ERROR(check_answer(answer, "the key list " + r.spec.list_object()));
    CO_ASSIGN_OR_RETURN(const std::vector<wire::DsortListShard> listed, wire::parse_dsort_list_json(answer.body));
    for (const auto& shard : listed) r.list_names.push_back(shard.name);
  }
  std::vector<Cursor> cursors(r.targets.size());
  r.records_ordered.assign(r.targets.size(), 0);
  for (size_t i = 0; i < cursors.size(); ++i) {
    cursors[i].node = r.targets[i];
    cursors[i].index = i;
    CO_RETURN_IF_ERROR(co_await advance(r, cursors[i]));
  }
  wire::DsortSummary& d = *r.job.mutable_dsort();
  d.set_samples(0);
  std::vector<Record> sample;  // loose input: a sample's members, which several targets may hold
  uint64_t sample_bytes = 0;
  // Closes the shard being cut: named, counted, queued for its owner.
  const auto close_plan = [&r, &d]() -> Status {
    if (r.plan.records.empty()) return Status::ok();
    r.plan.size += archive::kTarEndBytes;
    if (r.spec.order == wire::DsortOrder::kList) {
      r.plan.name = r.list_names[r.plan_list_shard];
    } else {
      if (d.output_shards() >= r.names->size()) {
        return Status::invalid_argument("the output template {} names {} shards; the samples need more",
                                        r.spec.output_template, r.names->size());
      }
      r.plan.name = r.names->name_at(d.output_shards());
    }
    d.set_output_shards(d.output_shards() + 1);
    d.set_bytes(d.bytes() + r.plan.size);
    d.set_smallest_shard(d.output_shards() == 1 ? r.plan.size : std::min(d.smallest_shard(), r.plan.size));
    d.set_largest_shard(std::max(d.largest_shard(), r.plan.size));
    if (!r.spec.dry_run) r.ready.push_back(std::move(r.plan));
    r.plan = ShardPlan{};
    return Status::ok();
  };
  // Adds a whole sample (its records) to the shard being cut, closing that one first when
  // the sample belongs to the next.
  const auto add_sample = [&r, &d, &close_plan](std::span<Record> records, uint64_t bytes) -> Status {
    bool closes = false;
    if (r.spec.order == wire::DsortOrder::kList) {
      const auto& k = records.front().sort_key;
      uint32_t shard = 0;
      for (size_t i = 0; i < 4 && i < k.size(); ++i) shard = (shard << 8) | static_cast<uint8_t>(k[i]);
      closes = !r.plan.records.empty() && shard != r.plan_list_shard;
      if (closes) RETURN_IF_ERROR(close_plan());
      r.plan_list_shard = shard;
    } else {
      closes = !r.plan.records.empty() && r.plan.size + bytes + archive::kTarEndBytes > r.spec.shard_size;
      if (closes) RETURN_IF_ERROR(close_plan());
    }
    d.set_samples(d.samples() + 1);
    ++r.plan.samples;
    r.plan.size += bytes;
    for (Record& rec : records) r.plan.records.push_back(std::move(rec));
    return Status::ok();
  };
  for (;;) {
    Cursor* least = nullptr;
    for (Cursor& c : cursors) {
      if (c.current && (least == nullptr || *c.current < *least->current)) least = &c;
    }
    if (least == nullptr) break;
    Record next = std::move(*least->current);
    ++r.records_ordered[least->index];
    CO_RETURN_IF_ERROR(co_await advance(r, *least));
    if (r.spec.input_loose) {
      // A loose sample's members come together: equal sort keys and keys, by object name.
      if (!sample.empty() && (next.sort_key != sample.front().sort_key || next.key != sample.front().key)) {
        CO_RETURN_IF_ERROR(add_sample(sample, sample_bytes));
        sample.clear();
        sample_bytes = 0;
      }
      sample_bytes += next.bytes;
      sample.push_back(std::move(next));
    } else {
      if (d.samples() > 0 && r.last_key == next.key) {
        d.set_duplicate_keys(d.duplicate_keys() + 1);
        if (r.spec.fails_on_duplicate) {
          co_return Status::invalid_argument("sample key {} is in {} and in {} (on_duplicate: fail)", next.key,
                                             r.last_source, next.source);
        }
      }
      r.last_key.assign(next.key);
      r.last_source.assign(next.source);
      CO_RETURN_IF_ERROR(add_sample(std::span<Record>(&next, 1), next.bytes));
    }
    if (!r.ready.empty()) CO_RETURN_IF_ERROR(co_await send_ready(r));
  }
  if (!sample.empty()) CO_RETURN_IF_ERROR(add_sample(sample, sample_bytes));
  CO_RETURN_IF_ERROR(close_plan());
  CO_RETURN_IF_ERROR(co_await send_ready(r));
  CO_RETURN_IF_ERROR(co_await drain(r));
  co_return check(r);
}

http::Awaitable<Status> Coordinator::send_ready(Run& r) {
  std::unique_ptr<asio::steady_timer> timer;
  for (ShardPlan& plan : r.ready) {
    // A slot: at most `creation_limit` shards in creation at once, each started as soon as
    // one ends (no barrier between waves).
    while (r.in_flight >= r.creation_limit && r.creation_error().is_ok()) {
      co_await async::pause(timer, std::chrono::milliseconds(5));
    }
    CO_RETURN_IF_ERROR(r.creation_error());
    CO_RETURN_IF_ERROR(check(r));
    r.sent.push_back(plan.name);
    wire::NodeInfo owner = r.placement->owner(ObjectRef{BucketId(r.output.id()), plan.name});
    r.count_planned(owner.id(), plan);
    ++r.in_flight;
    const auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, create(r.shared_from_this(), std::move(owner), std::move(plan)), asio::detached);
  }
  r.ready.clear();
  publish(r);
  primary_.jobs().update(r.job);
  co_return Status::ok();
}

void Coordinator::publish(Run& r) {
  r.job.set_objects_done(r.shards_created);
  r.job.set_bytes_done(r.bytes_created);
  const auto owners = r.owner_counts();
  uint64_t samples_created = 0;
  for (size_t i = 0; i < r.targets.size(); ++i) {
    wire::RebalanceProgress& p = (*r.job.mutable_nodes())[r.targets[i].id()];
    if (i < r.records_ordered.size()) p.set_records_ordered(r.records_ordered[i]);
    const auto found = owners.find(r.targets[i].id());
    if (found == owners.end()) continue;
    const Run::OwnerCounts& c = found->second;
    p.set_shards_planned(c.shards_planned);
    p.set_shards_created(c.shards_created);
    p.set_samples_planned(c.samples_planned);
    p.set_samples_created(c.samples_created);
    p.set_shard_bytes_planned(c.bytes_planned);
    p.set_shard_bytes_created(c.bytes_created);
    samples_created += c.samples_created;
  }
  r.job.mutable_dsort()->set_samples_created(samples_created);
}

http::Awaitable<Status> Coordinator::drain(Run& r) {
  std::unique_ptr<asio::steady_timer> timer;
  while (r.in_flight > 0) co_await async::pause(timer, std::chrono::milliseconds(5));
  publish(r);
  co_return r.creation_error();
}

http::Awaitable<void> Coordinator::create(std::shared_ptr<Run> run, wire::NodeInfo owner, ShardPlan plan) {
  const std::string target = std::string(kWorkerPath) + run->job.id() + "/shards";
  const uint64_t size = plan.size;
  const uint64_t samples = plan.samples;
  const std::string what = "creating " + plan.name + " on " + owner.id();
  auto answer = co_await call(owner, http::Method::kPost, target, encode_plan(plan), kMaxProgressBody);
  const Status created = answer ? check_creation_answer(*answer, what) : std::move(answer).error().annotate("{}", what);
  if (created.is_ok()) {
    run->count_created(owner.id(), samples, size);
    ++run->shards_created;
    run->bytes_created += size;
  } else {
    run->fail_creation(created);
  }
  --run->in_flight;
}

http::Awaitable<std::string> Coordinator::remove_outputs(Run& r) {
  // Output shards: deleted through this node's own gateway, a window at a time.
  uint64_t removed = 0;
  std::vector<std::string> left;
  const wire::NodeInfo& self = primary_.self();
  for (size_t first = 0; first < r.sent.size(); first += kCleanupWindow) {
    std::vector<std::function<http::Awaitable<Status>()>> deletes;
    for (size_t i = first; i < std::min(r.sent.size(), first + kCleanupWindow); ++i) {
      deletes.push_back([this, &r, &self, i]() -> http::Awaitable<Status> {
        CO_ASSIGN_OR_RETURN(const auto answer, co_await call(self, http::Method::kDelete,
                                                             object_path(r.spec.output_bucket, r.sent[i]), "",
                                                             kMaxProgressBody));
        if (answer.status == 404) co_return Status::not_found("never stored");
        co_return check_answer(answer, "removing " + r.sent[i]);
      });
    }
    const auto deleted = co_await async::gather<Status>(std::move(deletes));
    for (size_t i = 0; i < deleted.size(); ++i) {
      if (deleted[i].is_ok()) {
        ++removed;
      } else if (deleted[i].code() != Code::kNotFound) {
        left.push_back(r.sent[first + i]);
      }
    }
  }
  r.sent = left;
  if (left.empty()) co_return fmt::format("removed the {} output shards it had made", removed);
  if (left.size() > 10) left.resize(10);
  co_return fmt::format(
      "removed {} output shards it had made; {} more ({}{}) are on targets that cannot be reached, and are removed "
      "once they are back",
      removed, r.sent.size(), fmt::join(left, ", "), r.sent.size() > left.size() ? ", ..." : "");
}

http::Awaitable<void> Coordinator::remove_later(std::shared_ptr<Run> run) {
  std::unique_ptr<asio::steady_timer> timer;
  const auto give_up = std::chrono::steady_clock::now() + kRemoveLaterFor;
  while (!run->sent.empty() && !is_stopping_ && std::chrono::steady_clock::now() < give_up) {
    co_await async::pause(timer, kRemoveLaterEvery);
    std::ignore = co_await remove_outputs(*run);
  }
  if (!run->sent.empty()) {
    SILO_LOG_WARN("{}: gave up removing {} output shards of bucket {}: {}", run->job.id(), run->sent.size(),
                  run->spec.output_bucket, fmt::join(run->sent, ", "));
  }
}

http::Awaitable<void> Coordinator::drop_parts(Run& r) {
  const std::string task = std::string(kWorkerPath) + r.job.id();
  std::vector<std::function<http::Awaitable<Status>()>> drops;
  for (const auto& node : r.targets) {
    drops.push_back([this, &node, &task]() -> http::Awaitable<Status> {
      CO_ASSIGN_OR_RETURN(const auto answer, co_await call(node, http::Method::kDelete, task, "", kMaxProgressBody));
      std::ignore = answer;  // 404: its part is gone already
      co_return Status::ok();
    });
  }
  std::ignore = co_await async::gather<Status>(std::move(drops));
}

}  // namespace silo::dsort
