// Erasure coding on a target (docs/data-protection.md "Layout: erasure coding"): the owner cuts a
// committed object in k data + m parity slices (ec::Layout, ec::ReedSolomon over ISA-L)
// and spreads them over the object's first k + m holders; any holder answers a GET by
// reading the k data slices in parallel, or any k slices when some are missing or
// corrupt (reconstructing the missing cells on the fly), and repairs them afterwards.
#include "erasure/erasure.h"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstring>

#include "base/hash.h"
#include "base/log.h"
#include "async/gather.h"
#include "http/reply.h"
#include "ec/layout.h"
#include "ec/reed_solomon.h"
#include "erasure/detail/slice_io.h"
#include "replication/copy_wire.h"
#include "wire/json.h"

namespace silo::erasure {
namespace {

namespace asio = boost::asio;
using detail::is_slice_of;
using detail::kCellBytes;
using detail::layout_of;
using detail::only_generation;
using detail::open_sources;
using detail::plan_rebuild;
using detail::read_stripe;
using detail::slice_record;
using detail::SliceSource;
using detail::StripeEncoder;
using replication::fits_layout;
using replication::incoming_wins;
using replication::Placed;
using replication::same_version;

constexpr size_t kMaxRecordBytes = 16 * 1024 * 1024;
constexpr size_t kMaxSmallBody = 64 * 1024;

// Takes slice `i` out of `where` when this node (`self`) is its keeper: its copy here is
// missing or corrupt. A keeper elsewhere (this node has a duplicate) stays.
void forget_own(std::vector<std::optional<wire::NodeInfo>>& where, uint32_t i,
                const std::string& self) {
  if (i < where.size() && where[i] && where[i]->id() == self) where[i].reset();
}

// Reads the next `n` bytes of `call`'s body into `scratch` (grown to fit) and drops them.
http::Awaitable<Status> skip_body(http::Call& call, std::vector<char>& scratch, uint64_t n) {
  if (n == 0) co_return Status::ok();
  if (scratch.size() < n) scratch.resize(static_cast<size_t>(n));
  co_return co_await replication::read_exact(call.body(), std::span<char>(scratch.data(), static_cast<size_t>(n)));
}

}  // namespace

Erasure::Erasure(replication::Peers& peers, store::Store& store, std::shared_ptr<http::Client> client,
                 replication::Replication& replication, stats::Registry& stats)
    : peers_(peers),
      store_(store),
      client_(std::move(client)),
      replication_(replication),
      bytes_sent_(stats.counter("silo_target_bytes_sent_total", "Object bytes sent by GETs.")),
      copies_made_(stats.counter("silo_target_copies_made_total",
                                 "Copies of objects sent to or fetched from other holders (copies, repairs).")),
      slices_made_(stats.counter("silo_target_ec_slices_made_total",
                                 "Erasure-coded slices written to holders (coding, re-encoding, rebuilds).")),
      degraded_reads_(stats.counter("silo_target_ec_degraded_reads_total",
                                    "Erasure-coded GETs that reconstructed missing or corrupt slices.")),
      duplicate_slices_dropped_(stats.counter(
          "silo_target_ec_duplicate_slices_dropped_total",
          "Second copies of one erasure-coded slice removed from a holder (so it can take the missing one).")) {}

wire::ObjectRecord Erasure::object_view(const wire::ObjectRecord& record) {
  if (!record.has_ec()) return record;
  wire::ObjectRecord view = record;
  view.set_size(record.ec().object_size());
  view.set_xxh3(record.ec().object_xxh3());
  view.clear_ec();
  return view;
}

http::Awaitable<Erasure::SliceMap> Erasure::locate_slices(const ObjectRef& object,
                                                        const wire::ObjectRecord& mine) {
  const uint32_t n = mine.ec().data() + mine.ec().parity();
  SliceMap map;
  map.where.resize(n);
  // While objects move a slice may still be on a target that no longer holds it.
  const std::vector<wire::NodeInfo> candidates = peers_.candidates_of(object);
  std::vector<wire::NodeInfo> others;
  for (const auto& node : candidates) {
    if (node.id() != peers_.self().id() && node.state() != wire::NODE_STATE_DOWN)
      others.push_back(node);
  }
  std::vector<std::function<http::Awaitable<std::optional<wire::ObjectRecord>>()>> asks;
  for (const auto& node : others) {
    asks.push_back([this, node, &object]() -> http::Awaitable<std::optional<wire::ObjectRecord>> {
      auto record = co_await replication_.record_at(node, object);  // an unreachable node has none
      co_return record ? std::move(*record) : std::nullopt;
    });
  }
  const auto records = co_await async::gather<std::optional<wire::ObjectRecord>>(std::move(asks));
  // Every slice of this version, in rank order (this node's own at its rank).
  std::vector<SlicePiece> pieces;
  bool is_mine_placed = false;
  for (const auto& node : candidates) {
    if (node.id() == peers_.self().id()) {
      pieces.push_back({peers_.self(), mine});
      is_mine_placed = true;
      continue;
    }
    const auto at = std::find_if(others.begin(), others.end(),
                                 [&node](const auto& o) { return o.id() == node.id(); });
    if (at == others.end()) continue;
    const auto& r = records[static_cast<size_t>(at - others.begin())];
    if (!r) continue;
    if (!r->has_ec() && same_version(*r, mine) && !map.whole) map.whole = node;
    if (incoming_wins(&mine, *r) && !map.newer) map.newer = node;
    if (!is_slice_of(*r, mine) || r->ec().index() >= n) continue;
    if (r->ec().index() == mine.ec().index() && !map.mine_elsewhere) map.mine_elsewhere = node;
    pieces.push_back({node, *r});
  }
  if (!is_mine_placed && mine.ec().index() < n) pieces.push_back({peers_.self(), mine});
  // The keeper of slice i is holder i when it has it, else the first by rank: every
  // target that looks picks the same one, so two never drop each other's copy.
  const std::vector<wire::NodeInfo> holders = peers_.holders_of(object);
  for (const auto& piece : pieces) {
    const uint32_t i = piece.record.ec().index();
    if (i < holders.size() && holders[i].id() == piece.node.id()) map.where[i] = piece.node;
  }
  for (auto& piece : pieces) {
    auto& keeper = map.where[piece.record.ec().index()];
    if (!keeper) {
      keeper = piece.node;
    } else if (keeper->id() != piece.node.id()) {
      map.duplicates.push_back(std::move(piece));
    }
  }
  co_return map;
}

http::Awaitable<Status> Erasure::drop_duplicate_slices(const ObjectRef& object, SliceMap& map) {
  const std::vector<wire::NodeInfo> holders = peers_.holders_of(object);
  Status last;
  std::vector<SlicePiece> kept;
  for (auto& piece : map.duplicates) {
    const bool is_on_holder = std::any_of(holders.begin(), holders.end(), [&piece](const auto& h) {
      return h.id() == piece.node.id();
    });
    if (!is_on_holder) {
      kept.push_back(std::move(piece));
      continue;
    }
    const uint32_t i = piece.record.ec().index();
    Status dropped;
    if (piece.node.id() == peers_.self().id()) {
      dropped = co_await store_.remove_generation(object, piece.record.generation());
    } else {
      // (No co_await inside ?: — GCC 12 miscompiles it.)
      auto to = http::Endpoint::parse(piece.node.url());
      if (to) {
        dropped = co_await replication_.send_undo(*to, object, piece.record.mtime_unix_nanos(), piece.record.xxh3());
      } else {
        dropped = to.status();
      }
    }
    if (!dropped.is_ok() && dropped.code() != Code::kNotFound) {
      last = dropped.annotate("dropping the second slice {} of {} on {}", i, object.name, piece.node.id());
      kept.push_back(std::move(piece));
      continue;
    }
    duplicate_slices_dropped_.add();
    SILO_LOG_WARN("slice {} of {} was on both {} and {}: dropped on {}", i, object.name,
                  map.where[i] ? map.where[i]->id() : std::string("?"), piece.node.id(), piece.node.id());
  }
  map.duplicates = std::move(kept);
  co_return last;
}

Erasure::SliceMap Erasure::assumed_slices(const ObjectRef& object,
                                        const wire::ObjectRecord& mine) const {
  const uint32_t n = mine.ec().data() + mine.ec().parity();
  const std::vector<wire::NodeInfo> holders = peers_.holders_of(object);
  SliceMap map;
  // Only when this slice is where its index says (else the layout moved: ask).
  if (holders.size() < n || mine.ec().index() >= n ||
      holders[mine.ec().index()].id() != peers_.self().id()) {
    return map;
  }
  map.where.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (holders[i].state() != wire::NODE_STATE_DOWN) map.where[i] = holders[i];
  }
  map.where[mine.ec().index()] = peers_.self();
  return map;
}


http::Awaitable<Result<Erasure::SliceSink>> Erasure::open_slice_sink(const ObjectRef& object,
                                                                   const wire::ObjectRecord& record,
                                                                   const wire::NodeInfo& node,
                                                                   const wire::Bucket& bucket,
                                                                   uint64_t replacing) {
  SliceSink sink;
  sink.index = record.ec().index();
  sink.node = node;
  sink.record = record;
  if (node.id() == peers_.self().id()) {
    store::PutOptions options = detail::slice_put_options(record, peers_.durability_of(bucket));
    options.precondition = only_generation(replacing);  // a newer write codes itself
    CO_ASSIGN_OR_RETURN(sink.writer, co_await store_.create(object, std::move(options)));
    co_return sink;
  }
  // repair=1: the holder's own slice of this version may be missing or corrupt.
  CO_ASSIGN_OR_RETURN(sink.call, co_await start_slice_call(object, record, node, "repair=1"));
  co_return sink;
}

http::Awaitable<Result<std::unique_ptr<http::Call>>> Erasure::start_slice_call(const ObjectRef& object,
                                                                             const wire::ObjectRecord& record,
                                                                             const wire::NodeInfo& node,
                                                                             const std::string& query) {
  CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(node.url()));
  const std::string prefix = replication::copy_prefix(record);
  http::ClientRequest put;
  put.method = http::Method::kPut;
  put.target = replication::internal_object_target(object) + "?" + query;
  put.headers.set(http::kNodeMapVersionHeader, std::to_string(peers_.maps().node_map()->version()));
  CO_ASSIGN_OR_RETURN(std::unique_ptr<http::Call> call,
                      co_await client_->start(to, std::move(put), prefix.size() + record.size()));
  CO_RETURN_IF_ERROR(co_await call->write({prefix.data(), prefix.size()}));
  co_return call;
}

http::Awaitable<Status> Erasure::write_cells(std::vector<SliceSink>& sinks,
                                            const std::vector<std::vector<uint8_t>>& cells,
                                            uint64_t cell_length) {
  std::vector<std::function<http::Awaitable<Status>()>> writes;
  for (auto& sink : sinks) {
    writes.push_back([&sink, &cells, cell_length]() -> http::Awaitable<Status> {
      const std::span<const char> bytes(reinterpret_cast<const char*>(cells[sink.index].data()),
                                        cell_length);
      if (sink.writer) co_return co_await sink.writer->write(bytes);
      co_return co_await sink.call->write(bytes);
    });
  }
  for (const Status& w : co_await async::gather<Status>(std::move(writes))) {
    if (!w.is_ok()) co_return w;
  }
  co_return Status::ok();
}

http::Awaitable<Status> Erasure::finish_call(SliceSink& sink) {
  auto head = co_await sink.call->finish();
  if (!head) co_return std::move(head).error().annotate("slice {} on {}", sink.index, sink.node.id());
  auto body = co_await http::read_all(sink.call->body(), kMaxSmallBody);
  if (!body) co_return std::move(body).error().annotate("slice {} on {}", sink.index, sink.node.id());
  if (head->status != 200) {
    co_return Status::unavailable("slice {} on {}: HTTP {} {}", sink.index, sink.node.id(), head->status, *body);
  }
  sink.placed = replication::placed_of(*body);
  co_return Status::ok();
}

http::Awaitable<Status> Erasure::finish_slice_sinks(const ObjectRef& object,
                                                   std::vector<SliceSink>& sinks) {
  for (auto& sink : sinks) {
    if (!sink.call) continue;
    CO_RETURN_IF_ERROR(co_await finish_call(sink));
    if (sink.placed.is_kept) continue;
    // It kept its own piece: fine when that is this very slice (placed by another coder or
    // rebuild); a newer version makes this work moot; anything else leaves it unstored.
    CO_ASSIGN_OR_RETURN(const auto theirs, co_await replication_.record_at(sink.node, object));
    if (theirs && incoming_wins(&sink.record, *theirs)) {
      co_return Status::aborted("{} has a newer version of {}", sink.node.id(), object.name);
    }
    if (!theirs || !is_slice_of(*theirs, sink.record) || theirs->ec().index() != sink.index) {
      co_return Status::unavailable("{} kept another piece of {} than slice {}", sink.node.id(),
                                    object.name, sink.index);
    }
  }
  for (auto& sink : sinks) {
    if (!sink.writer) continue;
    auto committed = co_await sink.writer->commit();
    if (!committed && committed.error().code() == Code::kFailedPrecondition) {
      co_return Status::aborted("{} changed while its slices were made", object.name);
    }
    if (!committed) co_return std::move(committed).error();
    sink.placed.is_kept = true;
  }
  co_return Status::ok();
}

http::Awaitable<void> Erasure::undo_slices(const ObjectRef& object,
                                          const std::vector<SliceSink>& sinks, UndoScope scope) {
  for (const auto& sink : sinks) {
    if (sink.writer || !sink.placed.is_kept) continue;
    if (scope == UndoScope::kNewOnly && sink.placed.replaced_same_version) continue;
    auto to = http::Endpoint::parse(sink.node.url());
    if (!to) continue;
    const Status undone =
        co_await replication_.send_undo(*to, object, sink.record.mtime_unix_nanos(), sink.record.xxh3());
    if (!undone.is_ok())
      SILO_LOG_WARN("slice {} of {} stays on {}: {}", sink.index, object.name, sink.node.id(),
                    undone);
  }
}

http::Awaitable<Status> Erasure::settle_slices(const ObjectRef& object,
                                              std::vector<SliceSink>& sinks, Status sent) {
  if (sent.is_ok()) sent = co_await finish_slice_sinks(object, sinks);
  if (sent.is_ok() || sent.code() == Code::kAborted) {
    // A DELETE that ran meanwhile may have missed slices that landed after it.
    auto here = co_await store_.stat(object);
    if (!here && here.error().code() == Code::kNotFound) {
      co_await undo_slices(object, sinks, UndoScope::kAll);
      co_return Status::aborted("{} was deleted while its slices were made", object.name);
    }
    co_return sent;
  }
  // The slices that landed in place of nothing are taken back, so that no holder is left
  // with a slice that has too few siblings to be read; one that replaced a copy of the
  // same version stays (taking it back would leave that holder with nothing).
  co_await undo_slices(object, sinks, UndoScope::kNewOnly);
  co_return sent;
}

http::Awaitable<Status> Erasure::encode_and_spread(ObjectRef object,
                                                  std::vector<wire::NodeInfo> holders) {
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket || !wire::is_erasure_coded(bucket->props())) co_return Status::ok();
  const wire::EcPolicy policy = bucket->props().ec();
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() == Code::kNotFound) co_return Status::ok();  // deleted since
  if (!opened) co_return std::move(opened).error();
  const wire::ObjectRecord whole = opened->record();
  if (whole.has_ec()) co_return Status::ok();  // coded already (a racing write did it)
  if (fits_layout(whole, bucket->props())) {
    // Small: parity + 1 full copies, on the first parity + 1 holders.
    holders.resize(std::min<size_t>(holders.size(), wire::full_copy_count(bucket->props())));
    co_return co_await replication_.push_copies(object, peers_.others_than_self(holders));
  }
  const uint32_t k = policy.data(), n = policy.data() + policy.parity();
  if (holders.size() < n)
    co_return Status::unavailable("ec {}+{} needs {} targets; {} own objects", k, n - k, n,
                                  holders.size());
  for (const auto& holder : holders) {
    if (holder.state() == wire::NODE_STATE_DOWN)
      co_return Status::unavailable("holder {} is down", holder.id());
  }
  CO_ASSIGN_OR_RETURN(StripeEncoder encoder,
                      StripeEncoder::create(policy, whole.size(), opened->fd()));
  const ec::Layout& layout = encoder.layout();
  // First pass: each slice's XXH3, so every record (and every receiver's check) has it.
  CO_ASSIGN_OR_RETURN(const std::vector<uint64_t> slice_xxh3,
                      co_await reader_.run([&encoder] { return encoder.slice_xxh3(); }));

  // Second pass: slice i to holder i, all at once (this node keeps its own, if a holder).
  std::vector<SliceSink> sinks;
  Status sent;
  for (uint32_t i = 0; i < n && sent.is_ok(); ++i) {
    const wire::ObjectRecord record =
        slice_record(whole, policy, i, layout.slice_size(), slice_xxh3[i]);
    auto sink = co_await open_slice_sink(object, record, holders[i], *bucket, whole.generation());
    if (sink) sinks.push_back(std::move(*sink));
    if (!sink) sent = std::move(sink).error();
  }
  for (uint64_t s = 0; s < layout.stripes() && sent.is_ok(); ++s) {
    sent = co_await reader_.run([&encoder, s] { return encoder.fill(s); });
    if (sent.is_ok()) sent = co_await write_cells(sinks, encoder.cells(), layout.cell_length(s));
  }
  sent = co_await settle_slices(object, sinks, std::move(sent));
  if (sent.code() == Code::kAborted) co_return Status::ok();  // rewritten or deleted meanwhile
  if (!sent.is_ok()) co_return sent.annotate("erasure coding {}", object.name);
  slices_made_.add(n);
  co_return Status::ok();
}

http::Awaitable<Status> Erasure::send_ec(http::Exchange& exchange, const ObjectRef& object, store::OpenObject& mine, http::ResponseHead head,
                                        uint64_t offset, uint64_t length) {
  if (length == 0) co_return co_await exchange.response().begin(std::move(head), 0);
  // Named std::functions, not temporaries made in the co_await (docs/adr/0003 rule 1).
  const std::function<http::Awaitable<Status>()> begin = [&exchange, &head, length]() {
    return exchange.response().begin(std::move(head), length);
  };
  const Sink sink = [&exchange](std::span<const char> bytes) { return exchange.response().write(bytes); };
  // Mid-answer failures cut the connection: the client sees the body short.
  CO_RETURN_IF_ERROR(co_await read_slices(&exchange, object, mine, offset, length, begin, sink));
  bytes_sent_.add(length);
  co_return Status::ok();
}

http::Awaitable<Status> Erasure::read_ec(const ObjectRef& object, store::OpenObject& mine, uint64_t offset,
                                        uint64_t length, const Sink& sink) {
  if (length == 0) co_return Status::ok();
  const std::function<http::Awaitable<Status>()> begin = []() -> http::Awaitable<Status> { co_return Status::ok(); };
  co_return co_await read_slices(nullptr, object, mine, offset, length, begin, sink);
}

http::Awaitable<Status> Erasure::read_slices(http::Exchange* exchange, const ObjectRef& object,
                                            store::OpenObject& mine, uint64_t offset, uint64_t length,
                                            const std::function<http::Awaitable<Status>()>& begin,
                                            const Sink& sink) {
  const wire::ObjectRecord& record = mine.record();
  const wire::EcSlice& ec = record.ec();
  const uint32_t k = ec.data(), n = ec.data() + ec.parity();
  const ec::Layout layout = layout_of(ec);
  CO_ASSIGN_OR_RETURN(const ec::ReedSolomon rs,
                      ec::ReedSolomon::create(static_cast<int>(k), static_cast<int>(n - k)));
  const uint64_t first = layout.stripe_of(offset), last = layout.stripe_of(offset + length - 1);
  const uint64_t slice_from = layout.slice_offset(first);
  const uint64_t slice_length = layout.slice_offset(last) + layout.cell_length(last) - slice_from;

  // A corrupt slice here is not used (and is rebuilt below).
  const bool is_mine_good = (co_await replication_.verify_read(mine)).is_ok();
  bool is_degraded = false;
  // Slice i is on holder i unless something moved it: read from there first (each source's
  // record is checked), and ask every holder only when that fails.
  SliceMap map = assumed_slices(object, record);
  Result<std::vector<SliceSource>> opened = Status::not_found("no slice layout assumed");
  if (!map.where.empty()) {
    if (!is_mine_good) map.where[ec.index()].reset();
    opened = co_await open_sources(*client_, object, record, mine.fd(), peers_.self().id(),
                                   map.where, slice_from, slice_length, is_degraded);
  }
  if (!opened) {
    map = co_await locate_slices(object, record);
    if (map.newer) {
      // The slice here is of an older version (overwritten while this holder missed it):
      // it goes, and the target with the newer one answers.
      const Status dropped = co_await store_.remove_generation(object, record.generation());
      if (!dropped.is_ok()) SILO_LOG_WARN("stale slice of {} stays: {}", object.name, dropped);
      if (exchange == nullptr || replication::is_local_only(exchange->request())) {
        co_return Status::unavailable("{} has a newer version of {}; retry", map.newer->id(),
                                      object.name);
      }
      CO_ASSIGN_OR_RETURN(const http::Endpoint newer, http::Endpoint::parse(map.newer->url()));
      co_return co_await replication_.relay_local_only(*exchange, newer);
    }
    if (!is_mine_good) forget_own(map.where, ec.index(), peers_.self().id());
    opened = co_await open_sources(*client_, object, record, mine.fd(), peers_.self().id(),
                                   map.where, slice_from, slice_length, is_degraded);
  }
  if (!opened && map.whole && exchange != nullptr && !replication::is_local_only(exchange->request())) {
    // Too few slices of this version yet, but a full copy (being re-encoded): read that.
    CO_ASSIGN_OR_RETURN(const http::Endpoint to, http::Endpoint::parse(map.whole->url()));
    co_return co_await replication_.relay_local_only(*exchange, to);
  }
  // Being re-encoded: the slices found a moment ago were replaced; read again. Also when
  // this target does not see the rebalance (yet, or any more) but the bucket's layout no
  // longer codes the object as these slices, or a full copy exists that a relayed read
  // (local only) may not go to: the retry finds the whole copy or the new slices.
  const auto now = peers_.bucket_by_id(object.bucket_id.value());
  const bool is_layout_changed =
      now && (!wire::is_erasure_coded(now->props()) || now->props().ec().data() != k ||
              now->props().ec().parity() != n - k);
  if (!opened && (peers_.is_rebalancing() || is_layout_changed || map.whole)) {
    co_return Status::aborted("the slices of {} changed while being read: {}", object.name,
                              opened.error().message());
  }
  CO_ASSIGN_OR_RETURN(std::vector<SliceSource> sources, std::move(opened));
  if (is_degraded) degraded_reads_.add();
  CO_RETURN_IF_ERROR(co_await begin());
  if (exchange != nullptr && !is_degraded) {
    // Every data slice at hand: its cells go out as they are, without passing through here.
    CO_RETURN_IF_ERROR(co_await send_cells(exchange->response(), sources, layout, offset, length));
  } else {
    std::vector<std::vector<uint8_t>> cells(n, std::vector<uint8_t>(layout.cell_length(first)));
    for (uint64_t s = first; s <= last; ++s) {
      const uint64_t cell_length = layout.cell_length(s);
      CO_RETURN_IF_ERROR(co_await read_stripe(reader_, sources, cells, cell_length, rs, is_degraded));
      for (uint32_t j = 0; j < k; ++j) {
        const uint64_t cell_start = layout.object_offset(s) + j * cell_length;
        const uint64_t cell_end = cell_start + layout.data_in_cell(s, j);
        const uint64_t from = std::max(cell_start, offset), to = std::min(cell_end, offset + length);
        if (from >= to) continue;
        const std::span<const char> bytes(
            reinterpret_cast<const char*>(cells[j].data()) + (from - cell_start), to - from);
        CO_RETURN_IF_ERROR(co_await sink(bytes));
      }
    }
  }
  // Slices that were missing or corrupt: rebuilt in the background.
  std::vector<uint32_t> unreadable;
  for (uint32_t i = 0; i < n; ++i) {
    if (!map.where[i]) unreadable.push_back(i);
  }
  if (!unreadable.empty()) co_await start_rebuild(object, std::move(unreadable));
  co_return Status::ok();
}

http::Awaitable<Status> Erasure::send_cells(http::ResponseWriter& out, std::vector<SliceSource>& sources,
                                            const ec::Layout& layout, uint64_t offset, uint64_t length) {
  std::vector<SliceSource*> data(sources.size(), nullptr);
  for (SliceSource& source : sources) {
    if (source.index >= data.size()) co_return Status::internal("data slice {} of {} read", source.index, data.size());
    data[source.index] = &source;
  }
  const uint64_t first = layout.stripe_of(offset), last = layout.stripe_of(offset + length - 1);
  // A peer's body holds every cell of the stripes read, padding included: what the
  // answer does not take is read into `skipped` and dropped, so its next cell comes next.
  std::vector<char> skipped;
  for (uint64_t s = first; s <= last; ++s) {
    const uint64_t cell_length = layout.cell_length(s);
    for (uint32_t j = 0; j < data.size(); ++j) {
      SliceSource* source = data[j];
      if (source == nullptr) co_return Status::internal("data slice {} is not among the sources", j);
      const uint64_t cell_start = layout.object_offset(s) + j * cell_length;
      const uint64_t cell_end = cell_start + layout.data_in_cell(s, j);
      const uint64_t from = std::max(cell_start, offset), to = std::min(cell_end, offset + length);
      const uint64_t taken = from < to ? to - from : 0;
      const uint64_t before = from < to ? from - cell_start : cell_length;
      if (!source->call) {
        // This target's slice (checked whole before the answer began): sendfile.
        if (taken > 0) CO_RETURN_IF_ERROR(co_await out.send_file(source->fd, layout.slice_offset(s) + before, taken));
        continue;
      }
      CO_RETURN_IF_ERROR(co_await skip_body(*source->call, skipped, before));
      if (taken > 0) CO_RETURN_IF_ERROR(co_await source->call->relay_body_part(out, taken));
      CO_RETURN_IF_ERROR(co_await skip_body(*source->call, skipped, cell_length - before - taken));
    }
  }
  co_return Status::ok();
}

http::Awaitable<Status> Erasure::decode_here(const ObjectRef& object) {
  CO_ASSIGN_OR_RETURN(store::OpenObject opened, co_await store_.open(object));
  const wire::ObjectRecord mine = opened.record();
  if (!mine.has_ec()) co_return Status::ok();
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket) co_return Status::ok();
  const uint32_t k = mine.ec().data(), n = mine.ec().data() + mine.ec().parity();
  const ec::Layout layout = layout_of(mine.ec());
  SliceMap map = co_await locate_slices(object, mine);
  if (!(co_await replication_.verify_read(opened)).is_ok())
    forget_own(map.where, mine.ec().index(), peers_.self().id());
  CO_ASSIGN_OR_RETURN(const ec::ReedSolomon rs,
                      ec::ReedSolomon::create(static_cast<int>(k), static_cast<int>(n - k)));
  bool is_degraded = false;
  CO_ASSIGN_OR_RETURN(std::vector<SliceSource> sources,
                      co_await open_sources(*client_, object, mine, opened.fd(), peers_.self().id(),
                                            map.where, 0, layout.slice_size(), is_degraded));
  // The whole object in place of this slice; the store checks its size and XXH3.
  const wire::ObjectRecord whole = object_view(mine);
  store::PutOptions options;
  options.durability = peers_.durability_of(*bucket);
  options.attributes = whole;
  options.original = whole;
  options.expected_size = whole.size();
  options.precondition = only_generation(mine.generation());
  CO_ASSIGN_OR_RETURN(auto writer, co_await store_.create(object, std::move(options)));
  std::vector<std::vector<uint8_t>> cells(n, std::vector<uint8_t>(layout.cell_length(0)));
  for (uint64_t s = 0; s < layout.stripes(); ++s) {
    CO_RETURN_IF_ERROR(
        co_await read_stripe(reader_, sources, cells, layout.cell_length(s), rs, is_degraded));
    for (uint32_t j = 0; j < k; ++j) {
      const uint64_t real = layout.data_in_cell(s, j);
      if (real > 0)
        CO_RETURN_IF_ERROR(
            co_await writer->write({reinterpret_cast<const char*>(cells[j].data()), real}));
    }
  }
  auto committed = co_await writer->commit();
  if (!committed && committed.error().code() == Code::kFailedPrecondition)
    co_return Status::ok();  // rewritten
  co_return committed.status();
}

http::Awaitable<void> Erasure::start_rebuild(ObjectRef object, std::vector<uint32_t> unreadable) {
  const auto executor = co_await asio::this_coro::executor;
  std::string what = fmt::format("rebuilding the slices of {}", object.name);
  asio::co_spawn(executor,
                 replication::in_background(rebuild_slices_status(std::move(object), std::move(unreadable)),
                               std::move(what)),
                 asio::detached);
}

http::Awaitable<Status> Erasure::rebuild_slices_status(ObjectRef object,
                                                      std::vector<uint32_t> unreadable) {
  const Result<size_t> rebuilt = co_await rebuild_slices(std::move(object), std::move(unreadable));
  co_return rebuilt.status();
}

http::Awaitable<Result<size_t>> Erasure::rebuild_slices(ObjectRef object,
                                                       std::vector<uint32_t> unreadable) {
  // The record even when the file is gone (then this slice is rebuilt too).
  auto opened = co_await store_.open(object);
  if (!opened && opened.error().code() != Code::kDataLoss) co_return opened.status();
  CO_ASSIGN_OR_RETURN(const wire::ObjectRecord mine, co_await store_.stat(object));
  if (!mine.has_ec()) co_return size_t{0};
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket) co_return size_t{0};
  const uint32_t k = mine.ec().data(), n = mine.ec().data() + mine.ec().parity();
  const ec::Layout layout = layout_of(mine.ec());
  SliceMap map = co_await locate_slices(object, mine);
  if (map.newer) co_return size_t{0};  // this version is gone elsewhere: nothing to rebuild
  // A holder with a second copy of a slice would refuse the slice it lacks, for good.
  CO_RETURN_IF_ERROR(co_await drop_duplicate_slices(object, map));
  for (const uint32_t i : unreadable) {
    if (i < n) map.where[i].reset();
  }
  // A slice the caller found unreadable (a scrub's check) is rebuilt like a missing one.
  const bool is_mine_unreadable = std::find(unreadable.begin(), unreadable.end(), mine.ec().index()) != unreadable.end();
  const bool mine_is_good = !is_mine_unreadable && opened && opened->record().generation() == mine.generation() &&
                            (co_await replication_.verify_read(*opened)).is_ok();
  if (!mine_is_good) forget_own(map.where, mine.ec().index(), peers_.self().id());
  CO_ASSIGN_OR_RETURN(const auto missing, plan_rebuild(map.where, peers_.holders_of(object), object.name));
  if (missing.empty()) co_return size_t{0};
  size_t present_count = 0;
  for (const auto& w : map.where) present_count += w ? 1 : 0;
  if (present_count < k)
    co_return Status::data_loss("{}: only {} of {} slices left", object.name, present_count, n);
  CO_ASSIGN_OR_RETURN(const ec::ReedSolomon rs,
                      ec::ReedSolomon::create(static_cast<int>(k), static_cast<int>(n - k)));
  const int fd = mine_is_good ? opened->fd() : -1;
  std::vector<std::vector<uint8_t>> cells(n, std::vector<uint8_t>(layout.cell_length(0)));
  // Two passes over k slices: the rebuilt slices' XXH3 first (every receiver checks the
  // bytes against it), then the same cells streamed to their new holders.
  std::vector<std::unique_ptr<hash::Xxh3Stream>> hashes;
  for (size_t i = 0; i < missing.size(); ++i)
    hashes.push_back(std::make_unique<hash::Xxh3Stream>());
  {
    bool is_degraded = true;
    CO_ASSIGN_OR_RETURN(std::vector<SliceSource> sources,
                        co_await open_sources(*client_, object, mine, fd, peers_.self().id(),
                                              map.where, 0, layout.slice_size(), is_degraded));
    for (uint64_t s = 0; s < layout.stripes(); ++s) {
      const uint64_t cell_length = layout.cell_length(s);
      CO_RETURN_IF_ERROR(co_await read_stripe(reader_, sources, cells, cell_length, rs, true));
      for (size_t i = 0; i < missing.size(); ++i) {
        hashes[i]->update(
            {reinterpret_cast<const char*>(cells[missing[i].first].data()), cell_length});
      }
    }
  }
  bool is_degraded = true;
  CO_ASSIGN_OR_RETURN(std::vector<SliceSource> sources,
                      co_await open_sources(*client_, object, mine, fd, peers_.self().id(),
                                            map.where, 0, layout.slice_size(), is_degraded));
  std::vector<SliceSink> sinks;
  for (size_t i = 0; i < missing.size(); ++i) {
    wire::ObjectRecord record = mine;
    record.set_generation(0);
    record.set_xxh3(hashes[i]->digest());
    record.mutable_ec()->set_index(missing[i].first);
    CO_ASSIGN_OR_RETURN(SliceSink sink, co_await open_slice_sink(object, record, missing[i].second,
                                                                 *bucket, mine.generation()));
    sinks.push_back(std::move(sink));
  }
  for (uint64_t s = 0; s < layout.stripes(); ++s) {
    const uint64_t cell_length = layout.cell_length(s);
    CO_RETURN_IF_ERROR(co_await read_stripe(reader_, sources, cells, cell_length, rs, true));
    CO_RETURN_IF_ERROR(co_await write_cells(sinks, cells, cell_length));
  }
  const Status finished = co_await settle_slices(object, sinks, Status::ok());
  if (finished.code() == Code::kAborted) co_return size_t{0};  // rewritten or deleted meanwhile
  CO_RETURN_IF_ERROR(finished);
  size_t rebuilt = 0;
  for (const auto& sink : sinks) {
    if (!sink.placed.is_kept) continue;  // that holder had this very slice after all
    ++rebuilt;
    copies_made_.add();
    slices_made_.add();
    if (sink.writer && opened) replication_.note_repaired();  // the slice here was corrupt, not gone
    SILO_LOG_INFO("slice {} of {} rebuilt on {}", sink.index, object.name, sink.node.id());
  }
  co_return rebuilt;
}


http::Awaitable<Result<bool>> Erasure::restore_slices(const ObjectRef& object,
                                                     const wire::ObjectRecord& mine) {
  // Only the best-ranked holder with a slice of this version checks: a holder asks those
  // ranked before it, in order (usually the owner answers first), so a walk or a scrub
  // costs about 2(k + m) small requests per object, not (k + m)^2.
  for (const auto& holder : peers_.holders_of(object)) {
    if (holder.id() == peers_.self().id()) break;
    const auto theirs = co_await replication_.record_at(holder, object);
    if (!theirs || !*theirs) continue;  // down, failing or without it: the next one
    if (incoming_wins(&mine, **theirs)) {
      // Overwritten while this holder missed it (a small object's copies do not reach
      // every holder): the old slice goes.
      CO_RETURN_IF_ERROR(co_await store_.remove_generation(object, mine.generation()));
      co_return false;
    }
    if (is_slice_of(**theirs, mine)) co_return false;  // that one's to do
  }
  SliceMap map = co_await locate_slices(object, mine);
  if (map.newer) {
    CO_RETURN_IF_ERROR(co_await store_.remove_generation(object, mine.generation()));
    co_return false;
  }
  CO_RETURN_IF_ERROR(co_await drop_duplicate_slices(object, map));
  const bool is_complete =
      std::all_of(map.where.begin(), map.where.end(), [](const auto& w) { return w.has_value(); });
  if (is_complete) co_return false;
  CO_ASSIGN_OR_RETURN(const size_t rebuilt, co_await rebuild_slices(object, {}));
  co_return rebuilt > 0;
}

http::Awaitable<Status> Erasure::move_coded(const ObjectRef& object,
                                           const std::vector<wire::NodeInfo>& holders,
                                           store::OpenObject& opened, bool& is_holder) {
  const wire::ObjectRecord record = opened.record();
  const auto bucket = peers_.bucket_by_id(object.bucket_id.value());
  if (!bucket) co_return Status::ok();
  is_holder = peers_.is_self_among(holders);
  const bool is_owner = !holders.empty() && holders.front().id() == peers_.self().id();
  if (!fits_layout(record, bucket->props())) {
    // A full copy to code, or a slice of another code (the layout changed): the owner
    // does it; another target only when the owner lacks this version (else it would be
    // done twice), by coding its own copy or by decoding its slice first.
    if (!is_owner) {
      CO_ASSIGN_OR_RETURN(const auto at_owner, co_await replication_.record_at(holders.front(), object));
      if (at_owner && incoming_wins(&record, *at_owner)) {
        co_return co_await store_.remove_generation(object, record.generation());  // stale
      }
      if (at_owner && !incoming_wins(&*at_owner, record)) co_return Status::ok();
    }
    if (record.has_ec()) {
      CO_RETURN_IF_ERROR(co_await decode_here(object));
      co_return Status::aborted("{} was decoded: walk it again", object.name);
    }
    co_return co_await encode_and_spread(object, holders);
  }
  if (is_holder) {
    // In both phases: in the copy, a holder leaves the check to a better-ranked holder
    // with a slice, which may have received that slice after its own walk went by; in the
    // cleanup every slice has landed, so the better-ranked holder's walk sees it then.
    co_return (co_await restore_slices(object, record)).status();
  }
  // A slice on a target that no longer holds the object: to a holder that has no slice
  // of this version (a holder never keeps two). When every holder has one, this one is
  // spare and the cleanup removes it.
  SliceMap map = co_await locate_slices(object, record);
  if (map.newer) co_return co_await store_.remove_generation(object, record.generation());  // stale
  // A holder with a second copy of another slice is not free, yet would never take this
  // one: its duplicate goes first.
  CO_RETURN_IF_ERROR(co_await drop_duplicate_slices(object, map));
  const auto is_holder_node = [&holders](const std::optional<wire::NodeInfo>& n) {
    return n && std::any_of(holders.begin(), holders.end(),
                            [&n](const auto& h) { return h.id() == n->id(); });
  };
  if (is_holder_node(map.mine_elsewhere))
    co_return Status::ok();  // this slice is on a holder already
  bool is_any_free = false;
  for (const auto& holder : holders) {
    const bool has_slice =
        std::any_of(map.where.begin(), map.where.end(),
                    [&holder](const auto& w) { return w && w->id() == holder.id(); });
    if (has_slice) continue;
    is_any_free = true;
    CO_ASSIGN_OR_RETURN(const bool sent, co_await replication_.ensure_copy(holder, object, opened));
    if (sent) co_return Status::ok();  // else it took another piece meanwhile: the next one
  }
  if (is_any_free)
    co_return Status::unavailable("no holder took slice {} of {}", record.ec().index(),
                                  object.name);
  co_return Status::ok();
}

}  // namespace silo::erasure
