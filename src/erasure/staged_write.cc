// A new version of an erasure-coded object, written at its owner without touching the
// previous version's slices until every holder has its new slice (docs/adr/0014): the
// owner codes from its uncommitted work file, each other holder stages its slice, and
// only then are the staged slices and the owner's own slice committed.
#include <sys/stat.h>

#include <cerrno>
#include <random>

#include "async/gather.h"
#include "base/log.h"
#include "erasure/detail/slice_io.h"
#include "erasure/erasure.h"
#include "http/reply.h"
#include "replication/copy_wire.h"

namespace silo::erasure {
namespace {

using detail::slice_record;
using detail::StripeEncoder;

constexpr size_t kMaxSmallBody = 64 * 1024;

// Names one overwrite's staged slices on every holder; random, so a retried PUT of the
// same object never meets a slice its failed attempt staged.
std::string new_stage_token() {
  std::random_device random;
  const uint64_t high = (uint64_t{random()} << 32) | random();
  const uint64_t low = (uint64_t{random()} << 32) | random();
  return fmt::format("{:016x}{:016x}", high, low);
}

}  // namespace

http::Awaitable<Result<std::optional<wire::ObjectRecord>>> Erasure::commit_coded(
    store::ObjectWriter& writer, ObjectRef object, std::vector<wire::NodeInfo> holders) {
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  const bool is_owner = !holders.empty() && holders.front().id() == peers_.self().id();
  if (!bucket || !wire::is_erasure_coded(bucket->props()) || !is_owner) co_return std::nullopt;
  CO_ASSIGN_OR_RETURN(const int fd, writer.open_reader());
  const store::OpenObject source(fd, wire::ObjectRecord());  // closes fd
  struct stat st {};
  if (::fstat(fd, &st) != 0) co_return Status::from_errno(errno, "fstat of a work file");
  wire::ObjectRecord written;
  written.set_size(static_cast<uint64_t>(st.st_size));
  // Small: m + 1 full copies, as any object (a failed copy replaces no old slice).
  if (replication::fits_layout(written, bucket->props())) co_return std::nullopt;
  const wire::EcPolicy policy = bucket->props().ec();
  const uint32_t k = policy.data(), n = policy.data() + policy.parity();
  if (holders.size() < n)
    co_return Status::unavailable("ec {}+{} needs {} targets; {} own objects", k, n - k, n,
                                  holders.size());
  holders.resize(n);
  for (const auto& holder : holders) {
    if (holder.state() == wire::NODE_STATE_DOWN)
      co_return Status::unavailable("holder {} of {} is down", holder.id(), object.name);
  }
  // The client's conditions and the bucket's guard are checked here, once: nothing is
  // replaced anywhere after a refusal.
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord whole, co_await writer.seal());
  const std::string token = new_stage_token();
  std::vector<SliceSink> sinks;
  Status staged = co_await stage_slices(object, *bucket, holders, whole, fd, token, sinks);
  if (!staged.is_ok()) {
    // Their connections closed first, so no holder stages a slice after its drop.
    for (auto& sink : sinks) sink.call.reset();
    co_await drop_staged_slices(object, sinks, token);
    co_await writer.discard();
    if (staged.code() == Code::kAborted) {
      co_return Status::unavailable("{} changed on a holder while its slices were staged; retry: {}",
                                    object.name, staged.message());
    }
    co_return staged.annotate("staging the slices of {}; the previous version is unchanged", object.name);
  }
  const auto committed = co_await commit_round(object, sinks, token);
  if (!committed) {
    // An upload stays to be completed again (its retry codes it anew).
    co_await writer.discard();
    co_return committed.error();
  }
  co_await writer.finish_sealed();
  co_return std::optional<wire::ObjectRecord>(object_view(*committed));
}

http::Awaitable<Result<wire::ObjectRecord>> Erasure::commit_round(const ObjectRef& object,
                                                                 std::vector<SliceSink>& sinks,
                                                                 const std::string& token) {
  // The other holders first: once they committed, the new version is readable from them
  // even if this node fails before its own slice; those it misses roll forward.
  const CommitRound round = co_await commit_staged_slices(object, sinks, token);
  const size_t committed = round.committed;
  if (committed == 0 && round.unknown == 0 && sinks.size() > 1) {
    // Every holder answered, none committed: nothing replaced anywhere.
    co_await drop_staged_slices(object, sinks, token);
    co_return Status::unavailable("no holder committed its slice of {}; the previous version is unchanged",
                                  object.name);
  }
  if (committed == 0 && sinks.size() > 1) {
    // A commit may have taken without its answer: the holders settle it at their
    // deadline from each other's pieces (a committed one rolls the others forward).
    co_return Status::unavailable("the commit of {}'s slices had no answer from {} holders; they settle it "
                                  "within a minute; retry the write",
                                  object.name, round.unknown);
  }
  auto mine = co_await sinks.front().writer->commit();
  if (!mine) co_return std::move(mine).error().annotate("committing slice 0 of {}", object.name);
  slices_made_.add(committed + 1);
  if (committed + 1 < sinks.size()) {
    co_return Status::unavailable("{} is stored but only {} of its {} slices were committed; retry the write",
                                  object.name, committed + 1, sinks.size());
  }
  co_return std::move(*mine);
}

http::Awaitable<Status> Erasure::stage_slices(const ObjectRef& object, const wire::Bucket& bucket,
                                              const std::vector<wire::NodeInfo>& holders,
                                              const wire::ObjectRecord& whole, int fd,
                                              const std::string& token, std::vector<SliceSink>& sinks) {
  CO_ASSIGN_OR_RETURN(StripeEncoder encoder, StripeEncoder::create(bucket.props().ec(), whole.size(), fd));
  const ec::Layout& layout = encoder.layout();
  // First pass: each slice's XXH3, so every record (and every receiver's check) has it.
  CO_ASSIGN_OR_RETURN(const std::vector<uint64_t> slice_xxh3,
                      co_await reader_.run([&encoder] { return encoder.slice_xxh3(); }));
  for (uint32_t i = 0; i < holders.size(); ++i) {
    const wire::ObjectRecord record =
        slice_record(whole, bucket.props().ec(), i, layout.slice_size(), slice_xxh3[i]);
    CO_ASSIGN_OR_RETURN(SliceSink sink, co_await open_staged_sink(object, record, holders[i], bucket, token));
    sinks.push_back(std::move(sink));
  }
  for (uint64_t s = 0; s < layout.stripes(); ++s) {
    CO_RETURN_IF_ERROR(co_await reader_.run([&encoder, s] { return encoder.fill(s); }));
    CO_RETURN_IF_ERROR(co_await write_cells(sinks, encoder.cells(), layout.cell_length(s)));
  }
  co_return co_await finish_staged_sinks(object, sinks);
}

http::Awaitable<Result<Erasure::SliceSink>> Erasure::open_staged_sink(const ObjectRef& object,
                                                                     const wire::ObjectRecord& record,
                                                                     const wire::NodeInfo& node,
                                                                     const wire::Bucket& bucket,
                                                                     const std::string& token) {
  SliceSink sink;
  sink.index = record.ec().index();
  sink.node = node;
  sink.record = record;
  if (node.id() == peers_.self().id()) {
    store::PutOptions options = detail::slice_put_options(record, peers_.durability_of(bucket));
    // As on every holder (replication::replaces()): a newer version written meanwhile stays.
    options.precondition = [record, props = bucket.props()](const wire::ObjectRecord* current) {
      if (replication::replaces(current, record, props)) return Status::ok();
      return Status::aborted("a version of {} as new or newer was written meanwhile", record.name());
    };
    CO_ASSIGN_OR_RETURN(sink.writer, co_await store_.create(object, std::move(options)));
    co_return sink;
  }
  const std::string query = "stage=" + token;
  CO_ASSIGN_OR_RETURN(sink.call, co_await start_slice_call(object, record, node, query));
  co_return sink;
}

http::Awaitable<Status> Erasure::finish_staged_sinks(const ObjectRef& object, std::vector<SliceSink>& sinks) {
  for (auto& sink : sinks) {
    if (!sink.call) continue;
    CO_RETURN_IF_ERROR(co_await finish_call(sink));
    if (!sink.placed.is_kept) {
      co_return Status::aborted("{} has this version of {} or a newer one", sink.node.id(), object.name);
    }
  }
  co_return Status::ok();
}

http::Awaitable<Erasure::CommitRound> Erasure::commit_staged_slices(const ObjectRef& object,
                                                                   const std::vector<SliceSink>& sinks,
                                                                   const std::string& token) {
  enum class Outcome { kCommitted, kRefused, kUnknown };
  std::vector<std::function<http::Awaitable<Outcome>()>> commits;
  for (const auto& sink : sinks) {
    if (sink.node.id() == peers_.self().id()) continue;
    commits.push_back([this, &sink, &object, &token]() -> http::Awaitable<Outcome> {
      auto to = http::Endpoint::parse(sink.node.url());
      if (!to) co_return Outcome::kRefused;
      http::ClientRequest post;
      post.method = http::Method::kPost;
      post.target = replication::internal_object_target(object) + "?commit=" + token;
      auto answer = co_await client_->call(*to, std::move(post), "", kMaxSmallBody);
      if (answer && answer->status == 200 && replication::placed_of(answer->body).is_kept) {
        co_return Outcome::kCommitted;
      }
      const std::string why = answer ? fmt::format("HTTP {} {}", answer->status, answer->body)
                                     : answer.error().to_string();
      SILO_LOG_WARN("slice {} of {} was not committed on {}: {}", sink.index, object.name, sink.node.id(), why);
      // No answer: the commit may have taken all the same.
      co_return answer ? Outcome::kRefused : Outcome::kUnknown;
    });
  }
  CommitRound round;
  for (const Outcome outcome : co_await async::gather<Outcome>(std::move(commits))) {
    round.committed += outcome == Outcome::kCommitted ? 1 : 0;
    round.unknown += outcome == Outcome::kUnknown ? 1 : 0;
  }
  co_return round;
}

http::Awaitable<void> Erasure::drop_staged_slices(const ObjectRef& object, const std::vector<SliceSink>& sinks,
                                                  const std::string& token) {
  std::vector<std::function<http::Awaitable<bool>()>> drops;
  for (const auto& sink : sinks) {
    if (sink.node.id() == peers_.self().id()) continue;  // its writer goes with the sink
    drops.push_back([this, &sink, &object, &token]() -> http::Awaitable<bool> {
      auto to = http::Endpoint::parse(sink.node.url());
      if (!to) co_return false;
      http::ClientRequest drop;
      drop.method = http::Method::kDelete;
      drop.target = replication::internal_object_target(object) + "?stage=" + token;
      auto answer = co_await client_->call(*to, std::move(drop), "", kMaxSmallBody);
      const bool is_dropped = answer && answer->status == 204;
      if (!is_dropped) SILO_LOG_DEBUG("the staged slice {} of {} stays on {} until its deadline", sink.index, object.name, sink.node.id());
      co_return is_dropped;
    });
  }
  std::ignore = co_await async::gather<bool>(std::move(drops));
}

}  // namespace silo::erasure
