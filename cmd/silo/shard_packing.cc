#include "shard_packing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "archive/members.h"
#include "commands.h"
#include "archive/tar_writer.h"

namespace silo::cli {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kEndBytes = 1024;  // the two end-of-archive blocks

uint64_t member_bytes(const ShardMember& m) { return archive::tar_member_bytes(m.name, m.size); }

// The tar of `plan`, produced piece by piece for a streamed PUT: header, file bytes (read
// as they go out), padding, and the end blocks.
class ShardReader {
 public:
  explicit ShardReader(const ShardPlan& plan) : plan_(plan) {}

  // Fills `buffer`; 0 at the end, or after a read error (status() says which).
  size_t fill(std::span<char> buffer) {
    size_t done = 0;
    while (done < buffer.size() && status_.is_ok()) {
      if (pending_.empty() && !file_.is_open()) {
        if (!next_piece()) break;
      }
      if (!pending_.empty()) {
        const size_t n = std::min(buffer.size() - done, pending_.size() - pending_at_);
        std::memcpy(buffer.data() + done, pending_.data() + pending_at_, n);
        done += n;
        pending_at_ += n;
        if (pending_at_ == pending_.size()) {
          pending_.clear();
          pending_at_ = 0;
        }
        continue;
      }
      const uint64_t want = std::min<uint64_t>(buffer.size() - done, left_in_file_);
      file_.read(buffer.data() + done, static_cast<std::streamsize>(want));
      const auto n = static_cast<uint64_t>(file_.gcount());
      if (n != want) {
        status_ = Status::unavailable("{} changed while it was packed (shorter than {} bytes)",
                                      plan_.members[member_ - 1].path, plan_.members[member_ - 1].size);
        break;
      }
      done += n;
      left_in_file_ -= n;
      if (left_in_file_ == 0) {
        file_.close();
        pending_ = archive::tar_padding(plan_.members[member_ - 1].size);
      }
    }
    return done;
  }
  const Status& status() const { return status_; }

 private:
  // Queues the next header (and opens its file), or the end blocks; false at the end.
  bool next_piece() {
    if (member_ == plan_.members.size()) {
      if (is_ended_) return false;
      is_ended_ = true;
      pending_ = archive::tar_end();
      return true;
    }
    const ShardMember& m = plan_.members[member_++];
    pending_ = archive::tar_header(m.name, m.size, 0);
    left_in_file_ = m.size;
    if (m.size > 0) {
      file_.open(m.path, std::ios::binary);
      if (!file_) status_ = Status::unavailable("cannot read {}", m.path);
    } else {
      pending_ += archive::tar_padding(0);
    }
    return true;
  }

  const ShardPlan& plan_;
  size_t member_ = 0;
  std::string pending_;
  size_t pending_at_ = 0;
  std::ifstream file_;
  uint64_t left_in_file_ = 0;
  bool is_ended_ = false;
  Status status_;
};

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      // Leading zeros do not count; then the longer run is the larger number.
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      const size_t alen = ie - is, blen = je - js;
      if (alen != blen) return alen < blen;
      const int c = a.compare(is, alen, b, js, blen);
      if (c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;  // "01" before "001" only to stay total
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::vector<ShardPlan> plan_shards(std::vector<ShardMember> members, uint64_t shard_size, const std::string& prefix) {
  std::map<std::string, std::vector<ShardMember>, decltype(&natural_less)> samples(&natural_less);
  for (ShardMember& m : members) {
    const std::string key(archive::split_sample_key(m.name).first);
    samples[key].push_back(std::move(m));
  }
  const std::string base = prefix.empty() || prefix.back() == '/' ? prefix + "shard-" : prefix;
  std::vector<ShardPlan> plans;
  for (auto& [key, files] : samples) {
    std::sort(files.begin(), files.end(), [](const ShardMember& x, const ShardMember& y) { return x.name < y.name; });
    uint64_t bytes = 0;
    for (const ShardMember& m : files) bytes += member_bytes(m);
    if (plans.empty() || (plans.back().samples > 0 && plans.back().bytes + bytes + kEndBytes > shard_size)) {
      plans.push_back({.name = fmt::format("{}{:06}.tar", base, plans.size()), .members = {}, .samples = 0, .bytes = 0});
    }
    ShardPlan& plan = plans.back();
    for (ShardMember& m : files) plan.members.push_back(std::move(m));
    plan.samples += 1;
    plan.bytes += bytes;
  }
  for (ShardPlan& plan : plans) plan.bytes += kEndBytes;
  return plans;
}

Status put_shards(Context& context, const std::string& dir, const std::string& bucket, const std::string& prefix,
                  uint64_t shard_size, int workers) {
  if (shard_size < 10 * 1024) return Status::invalid_argument("--shard-size must be at least 10KiB");
  ASSIGN_OR_RETURN(client::Client * c, context.client());
  RETURN_IF_ERROR(check_put_bucket(*c, bucket));
  std::vector<ShardMember> members;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    members.push_back({.path = it->path().string(),
                       .name = fs::relative(it->path(), dir).generic_string(),
                       .size = it->file_size()});
  }
  if (ec) return Status::invalid_argument("walking {}: {}", dir, ec.message());
  if (members.empty()) return Status::invalid_argument("{} holds no files", dir);
  const std::vector<ShardPlan> plans = plan_shards(std::move(members), shard_size, prefix);

  std::vector<Status> results(plans.size());
  std::mutex print_mutex;
  run_parallel(plans.size(), workers, [&](size_t i) {
    const ShardPlan& plan = plans[i];
    ShardReader reader(plan);
    const client::FillFn fill = [&reader](std::span<char> buffer) { return reader.fill(buffer); };
    auto put = c->put_stream(bucket, plan.name, plan.bytes, fill);
    results[i] = !reader.status().is_ok() ? reader.status() : put.status();
    if (results[i].is_ok() && !context.options.is_json && !context.options.is_quiet) {
      const std::lock_guard lock(print_mutex);
      std::printf("%s/%s: %llu samples, %zu files, %s\n", bucket.c_str(), plan.name.c_str(),
                  static_cast<unsigned long long>(plan.samples), plan.members.size(), human_bytes(plan.bytes).c_str());
    }
  });
  if (context.options.is_json) {
    std::string out = fmt::format(R"({{"bucket":{},"shards":[)", json_string(bucket));
    for (size_t i = 0; i < plans.size(); ++i) {
      out += fmt::format(R"({}{{"name":{},"samples":{},"files":{},"size":{},"ok":{}}})", i == 0 ? "" : ",",
                         json_string(plans[i].name), plans[i].samples, plans[i].members.size(), plans[i].bytes,
                         results[i].is_ok() ? "true" : "false");
    }
    std::printf("%s]}\n", out.c_str());
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!results[i].is_ok()) {
      Status failed = results[i];
      return failed.annotate("shard {}", plans[i].name);
    }
  }
  return Status::ok();
}

}  // namespace silo::cli
