#include "dsort/records.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <queue>

#include "base/hash.h"

namespace silo::dsort {
namespace {

constexpr size_t kRunBuffer = 256 * 1024;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trimmed(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

void append_be64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

// One record from the front of `in`; nullopt (and `in` untouched) when `in` ends before it.
std::optional<Record> try_take_record(std::string_view& in) {
  std::string_view rest = in;
  Record r;
  for (std::string* field : {&r.sort_key, &r.key, &r.source}) {
    const auto length = take_varint(rest);
    if (!length || *length > rest.size()) return std::nullopt;
    field->assign(rest.substr(0, *length));
    rest.remove_prefix(*length);
  }
  const auto bytes = take_varint(rest);
  if (!bytes) return std::nullopt;
  r.bytes = *bytes;
  in = rest;
  return r;
}

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      return (e == ENOSPC ? Status::resource_exhausted("writing {}: {}", path, std::strerror(e))
                          : Status::unavailable("writing {}: {}", path, std::strerror(e)));
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::ok();
}

}  // namespace

void append_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::optional<uint64_t> take_varint(std::string_view& in) {
  uint64_t v = 0;
  for (size_t i = 0; i < in.size() && i < 10; ++i) {
    const auto byte = static_cast<uint8_t>(in[i]);
    v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      in.remove_prefix(i + 1);
      return v;
    }
  }
  return std::nullopt;
}

std::string sort_key_random(std::string_view key, uint64_t seed) {
  std::string out;
  append_be64(out, hash::xxh64(key, seed));
  return out;
}

std::string sort_key_natural(std::string_view key) {
  // A digit run becomes '0', its count of significant digits (two bytes, big-endian), and
  // those digits: a longer number sorts later, equal lengths by digit. '0' stands where
  // the run's first digit stood, so a run compares with any other byte as a digit would.
  std::string out;
  out.reserve(key.size() + 8);
  size_t i = 0;
  while (i < key.size()) {
    if (!is_digit(key[i])) {
      out.push_back(key[i++]);
      continue;
    }
    size_t end = i;
    while (end < key.size() && is_digit(key[end])) ++end;
    size_t first = i;
    while (first + 1 < end && key[first] == '0') ++first;
    const size_t digits = std::min<size_t>(end - first, 0xffff);
    out.push_back('0');
    out.push_back(static_cast<char>(digits >> 8));
    out.push_back(static_cast<char>(digits & 0xff));
    out.append(key.substr(first, end - first));
    i = end;
  }
  return out;
}

Result<std::string> sort_key_content(std::string_view text, wire::DsortContentType type) {
  const std::string_view value = trimmed(text);
  std::string out;
  switch (type) {
    case wire::DsortContentType::kString:
      out.assign(value);
      return out;
    case wire::DsortContentType::kInt: {
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
        return Status::invalid_argument("'{}' is not an integer", value.substr(0, 64));
      }
      append_be64(out, static_cast<uint64_t>(v) ^ (1ull << 63));  // negatives first
      return out;
    }
    case wire::DsortContentType::kFloat: {
      double v = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || end != value.data() + value.size() || value.empty() || std::isnan(v)) {
        return Status::invalid_argument("'{}' is not a number", value.substr(0, 64));
      }
      if (v == 0) v = 0;  // -0 sorts with 0
      auto bits = std::bit_cast<uint64_t>(v);
      bits = (bits & (1ull << 63)) != 0 ? ~bits : bits | (1ull << 63);  // IEEE order as unsigned
      append_be64(out, bits);
      return out;
    }
  }
  return out;
}

std::string sort_key_list(uint32_t shard, uint32_t position) {
  std::string out;
  append_be64(out, (static_cast<uint64_t>(shard) << 32) | position);
  return out;
}

void append_record(std::string& out, const Record& record) {
  for (const std::string* field : {&record.sort_key, &record.key, &record.source}) {
    append_varint(out, field->size());
    out += *field;
  }
  append_varint(out, record.bytes);
}

Result<Record> take_record(std::string_view& in) {
  auto r = try_take_record(in);
  if (!r) return Status::data_loss("a sample record is cut short ({} bytes left)", in.size());
  return std::move(*r);
}

// A sorted run on disk, read through a buffer: `current` is its next record.
struct RecordSorter::Run {
  std::string path;
  int fd = -1;
  uint32_t level = 0;  // 0: spilled from memory; n + 1: merged from kMaxRunsPerLevel runs of level n
  std::string buffer;
  size_t used = 0;  // of buffer, taken already
  bool is_at_end = false;
  std::optional<Record> current;

  ~Run() {
    if (fd >= 0) ::close(fd);
  }
  // Moves to the next record (current = nullopt at the end of the run).
  Status advance() {
    current.reset();
    for (;;) {
      std::string_view rest(buffer.data() + used, buffer.size() - used);
      const size_t before = rest.size();
      if (auto r = try_take_record(rest)) {
        used += before - rest.size();
        current = std::move(*r);
        return Status::ok();
      }
      if (is_at_end) {
        if (before != 0) return Status::data_loss("spilled run {} ends inside a record", path);
        return Status::ok();
      }
      buffer.erase(0, used);
      used = 0;
      const size_t old = buffer.size();
      buffer.resize(old + kRunBuffer);
      ssize_t n = 0;
      do {
        n = ::read(fd, buffer.data() + old, kRunBuffer);
      } while (n < 0 && errno == EINTR);
      if (n < 0) return Status::unavailable("reading {}: {}", path, std::strerror(errno));
      buffer.resize(old + static_cast<size_t>(n));
      if (n == 0) is_at_end = true;
    }
  }
};

RecordSorter::RecordSorter(std::string spill_dir, uint64_t memory_limit)
    : spill_dir_(std::move(spill_dir)), memory_limit_(std::max<uint64_t>(memory_limit, 1)) {}

RecordSorter::~RecordSorter() {
  runs_.clear();
  if (!spill_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(spill_dir_, ignored);
  }
}

Status RecordSorter::add(Record record) {
  memory_bytes_ += record.memory();
  memory_.push_back(std::move(record));
  ++records_;
  if (memory_bytes_ >= memory_limit_) return spill();
  return Status::ok();
}

// A run being written: records appended in order through a buffer.
class RecordSorter::RunWriter {
 public:
  static Result<std::unique_ptr<RunWriter>> open(const std::string& path, uint32_t level) {
    const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return Status::unavailable("creating {}: {}", path, std::strerror(errno));
    auto writer = std::unique_ptr<RunWriter>(new RunWriter);
    writer->run_ = std::make_unique<Run>();
    writer->run_->path = path;
    writer->run_->fd = fd;
    writer->run_->level = level;
    return writer;
  }
  Status add(const Record& r) {
    append_record(chunk_, r);
    if (chunk_.size() < kRunBuffer) return Status::ok();
    return flush();
  }
  // The run, to be read from its start.
  Result<std::unique_ptr<Run>> close() {
    RETURN_IF_ERROR(flush());
    if (::lseek(run_->fd, 0, SEEK_SET) != 0) {
      return Status::unavailable("seeking {}: {}", run_->path, std::strerror(errno));
    }
    return std::move(run_);
  }
  uint64_t written() const { return written_; }

 private:
  Status flush() {
    RETURN_IF_ERROR(write_all(run_->fd, chunk_, run_->path));
    written_ += chunk_.size();
    chunk_.clear();
    return Status::ok();
  }
  std::unique_ptr<Run> run_;
  std::string chunk_;
  uint64_t written_ = 0;
};

Result<std::unique_ptr<RecordSorter::RunWriter>> RecordSorter::new_run(uint32_t level) {
  std::error_code ec;
  std::filesystem::create_directories(spill_dir_, ec);
  if (ec) return Status::unavailable("creating {}: {}", spill_dir_, ec.message());
  return RunWriter::open(fmt::format("{}/run-{:06}", spill_dir_, next_run_++), level);
}

Status RecordSorter::spill() {
  std::sort(memory_.begin(), memory_.end());
  ASSIGN_OR_RETURN(auto writer, new_run(0));
  for (const Record& r : memory_) RETURN_IF_ERROR(writer->add(r));
  ASSIGN_OR_RETURN(auto run, writer->close());
  spilled_bytes_ += writer->written();
  runs_.push_back(std::move(run));
  memory_.clear();
  memory_.shrink_to_fit();
  memory_bytes_ = 0;
  // Tiers: kMaxRunsPerLevel runs of one level merge into one of the next, so the runs
  // (and the buffers and files a merge holds open) stay few: about kMaxRunsPerLevel per
  // level, each record rewritten once per level.
  for (uint32_t level = 0;; ++level) {
    std::vector<std::unique_ptr<Run>> tier;
    for (auto& r : runs_) {
      if (r->level == level) tier.push_back(std::move(r));
    }
    std::erase(runs_, nullptr);
    if (tier.size() < kMaxRunsPerLevel) {
      for (auto& r : tier) runs_.push_back(std::move(r));
      return Status::ok();
    }
    RETURN_IF_ERROR(merge(std::move(tier), level + 1));
  }
}

Status RecordSorter::merge(std::vector<std::unique_ptr<Run>> tier, uint32_t level) {
  for (auto& r : tier) RETURN_IF_ERROR(r->advance());
  ASSIGN_OR_RETURN(auto writer, new_run(level));
  for (;;) {
    Run* least = nullptr;
    for (auto& r : tier) {
      if (r->current && (least == nullptr || *r->current < *least->current)) least = r.get();
    }
    if (least == nullptr) break;
    RETURN_IF_ERROR(writer->add(*least->current));
    RETURN_IF_ERROR(least->advance());
  }
  ASSIGN_OR_RETURN(auto merged, writer->close());
  spilled_bytes_ += writer->written();
  for (auto& r : tier) ::unlink(r->path.c_str());
  runs_.push_back(std::move(merged));
  return Status::ok();
}

Status RecordSorter::finish() {
  if (is_finished_) return Status::ok();
  std::sort(memory_.begin(), memory_.end());
  for (auto& run : runs_) RETURN_IF_ERROR(run->advance());
  is_finished_ = true;
  return Status::ok();
}

Result<bool> RecordSorter::next_page(std::string& out, size_t max_bytes) {
  // A k-way merge of the runs and memory_: few sources (one run per memory_limit of
  // records), so a linear scan for the least is as quick as a heap.
  while (out.size() < max_bytes) {
    const Record* least = memory_next_ < memory_.size() ? &memory_[memory_next_] : nullptr;
    Run* from = nullptr;
    for (auto& run : runs_) {
      if (run->current && (least == nullptr || *run->current < *least)) {
        least = &*run->current;
        from = run.get();
      }
    }
    if (least == nullptr) return false;
    append_record(out, *least);
    if (from != nullptr) {
      RETURN_IF_ERROR(from->advance());
    } else {
      ++memory_next_;
    }
  }
  if (memory_next_ < memory_.size()) return true;
  for (const auto& run : runs_) {
    if (run->current) return true;
  }
  return false;
}

}  // namespace silo::dsort
