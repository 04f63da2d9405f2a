#include "erasure/detail/slice_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "async/gather.h"
#include "replication/copy_wire.h"

namespace silo::erasure::detail {

using replication::internal_object_target;
using replication::read_copy_record;
using replication::read_exact;
using replication::same_version;

store::PutOptions slice_put_options(const wire::ObjectRecord& record, store::Durability durability) {
  store::PutOptions options;
  options.durability = durability;
  options.attributes = record;
  options.original = record;
  options.expected_size = record.size();
  return options;
}

store::Precondition only_generation(uint64_t generation) {
  return [generation](const wire::ObjectRecord* current) {
    if (current == nullptr || current->generation() != generation) {
      return Status::failed_precondition("the object changed while its slices were made");
    }
    return Status::ok();
  };
}

bool is_slice_of(const wire::ObjectRecord& theirs, const wire::ObjectRecord& mine) {
  return theirs.has_ec() && same_version(theirs, mine) && theirs.ec().data() == mine.ec().data() &&
         theirs.ec().parity() == mine.ec().parity() &&
         theirs.ec().cell_size() == mine.ec().cell_size();
}

ec::Layout layout_of(const wire::EcSlice& ec) {
  return ec::Layout{ec.data(), ec.cell_size(), ec.object_size()};
}

wire::ObjectRecord slice_record(const wire::ObjectRecord& object, const wire::EcPolicy& policy,
                                uint32_t index, uint64_t slice_size, uint64_t slice_xxh3) {
  wire::ObjectRecord r = object;
  r.set_size(slice_size);
  r.set_xxh3(slice_xxh3);
  r.set_generation(0);
  wire::EcSlice& ec = *r.mutable_ec();
  ec.set_data(policy.data());
  ec.set_parity(policy.parity());
  ec.set_index(index);
  ec.set_object_size(object.size());
  ec.set_object_xxh3(object.xxh3());
  ec.set_cell_size(static_cast<uint32_t>(kCellBytes));
  return r;
}

Result<std::vector<std::pair<uint32_t, wire::NodeInfo>>> plan_rebuild(
    const std::vector<std::optional<wire::NodeInfo>>& where,
    const std::vector<wire::NodeInfo>& holders, std::string_view name) {
  std::vector<bool> taken(holders.size(), false);
  for (size_t h = 0; h < holders.size(); ++h) {
    for (const auto& w : where) taken[h] = taken[h] || (w && w->id() == holders[h].id());
  }
  std::vector<std::pair<uint32_t, wire::NodeInfo>> plan;
  for (uint32_t i = 0; i < where.size(); ++i) {
    if (where[i]) continue;
    size_t h = i < holders.size() && !taken[i] ? i : holders.size();
    for (size_t j = 0; h == holders.size() && j < holders.size(); ++j) h = taken[j] ? h : j;
    if (h == holders.size())
      return Status::unavailable("no holder is free to take slice {} of {}", i, name);
    taken[h] = true;
    if (holders[h].state() != wire::NODE_STATE_DOWN) plan.emplace_back(i, holders[h]);
  }
  return plan;
}

http::Awaitable<Result<std::vector<SliceSource>>> open_sources(
    http::Client& client, const ObjectRef& object, const wire::ObjectRecord& record, int fd,
    const std::string& self, std::vector<std::optional<wire::NodeInfo>>& where, uint64_t from,
    uint64_t length, bool& is_degraded) {
  const uint32_t k = record.ec().data(), n = record.ec().data() + record.ec().parity();
  // Why slices were dropped: a holder that answered another version (the slices are being
  // replaced: retry), one that could not be reached (retry), or one whose slice is corrupt
  // or gone (lost, unless enough others remain).
  bool is_changed = false;
  bool is_unreachable = false;
  while (true) {
    std::vector<SliceSource> sources;
    std::vector<uint32_t> chosen;
    for (uint32_t i = 0; i < n && chosen.size() < k; ++i) {
      if (where[i]) chosen.push_back(i);
    }
    if (chosen.size() < k && is_changed) {
      co_return Status::aborted("the slices of {} changed while being read", object.name);
    }
    if (chosen.size() < k && is_unreachable) {
      co_return Status::unavailable("only {} of the {} slices of {} can be read now: a holder can not be reached",
                                    chosen.size(), n, object.name);
    }
    if (chosen.size() < k) {
      co_return Status::data_loss(
          "only {} of the {} slices of {} can be read (at least {} needed): the others are corrupt or missing",
          chosen.size(), n, object.name, k);
    }
    is_degraded = chosen.back() >= k;
    bool is_complete = true;
    for (const uint32_t i : chosen) {
      SliceSource source;
      source.index = i;
      if (where[i]->id() == self) {
        source.fd = fd;
        source.position = from;
        sources.push_back(std::move(source));
        continue;
      }
      auto to = http::Endpoint::parse(where[i]->url());
      http::ClientRequest get;
      get.target =
          fmt::format("{}?offset={}&length={}", internal_object_target(object), from, length);
      Result<std::unique_ptr<http::Call>> call = Status::unavailable("bad url");
      if (to)
        call = co_await client.start(*to, std::move(get),
                                     uint64_t{0});  // (no ternary around co_await: adr/0003)
      std::optional<wire::ObjectRecord> theirs;
      bool is_reached = false;
      if (call) {
        auto answer = co_await (*call)->finish();
        is_reached = answer.has_value() && answer->status != 503;
        // 500: its slice failed its checksum (or could not be read): lost, not changed.
        is_changed = is_changed || (answer && answer->status != 200 && answer->status != 500 && is_reached);
        if (answer && answer->status == 200) {
          auto got = co_await read_copy_record((*call)->body());
          if (got) theirs = std::move(*got);
        }
      }
      if (!is_reached) is_unreachable = true;
      if (theirs && (!is_slice_of(*theirs, record) || theirs->ec().index() != i)) is_changed = true;
      if (!theirs || !is_slice_of(*theirs, record) || theirs->ec().index() != i) {
        where[i].reset();  // choose again without it
        is_complete = false;
        break;
      }
      source.call = std::move(*call);
      sources.push_back(std::move(source));
    }
    if (is_complete) co_return sources;
  }
}

http::Awaitable<Status> read_stripe(async::DiskExecutor& disk, std::vector<SliceSource>& sources,
                                    std::vector<std::vector<uint8_t>>& cells, uint64_t cell_length,
                                    const ec::ReedSolomon& rs, bool is_degraded) {
  std::vector<std::function<http::Awaitable<Status>()>> reads;
  for (auto& source : sources) {
    reads.push_back([&disk, &source, &cells, cell_length]() -> http::Awaitable<Status> {
      const std::span<char> out(reinterpret_cast<char*>(cells[source.index].data()), cell_length);
      if (source.call) co_return co_await read_exact(source.call->body(), out);
      const int fd = source.fd;
      const uint64_t at = source.position;
      source.position += cell_length;
      const bool ok = co_await disk.run([fd, out, at] {
        size_t done = 0;
        while (done < out.size()) {
          const ssize_t got =
              ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(at + done));
          if (got < 0 && errno == EINTR) continue;
          if (got <= 0) return false;
          done += static_cast<size_t>(got);
        }
        return true;
      });
      if (!ok) co_return Status::data_loss("reading the slice here at {}", at);
      co_return Status::ok();
    });
  }
  for (const Status& read : co_await async::gather<Status>(std::move(reads))) {
    if (!read.is_ok()) co_return read;
  }
  if (!is_degraded) co_return Status::ok();  // the k data cells are here: no decoding
  std::vector<bool> present(cells.size(), false);
  for (const auto& source : sources) present[source.index] = true;
  std::vector<std::span<uint8_t>> all;
  for (auto& cell : cells) all.emplace_back(cell.data(), cell_length);
  co_return rs.reconstruct(all, present);
}

}  // namespace silo::erasure::detail
