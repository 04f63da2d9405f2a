// Batch GET (POST /v1/batch, docs/shards.md "Batch GET") against a real cluster: 5,000
// entries mixing objects, ranges, members and samples over every target, through the
// proxy and through a target; continue_on_error; errors before the first byte; the CLI;
// a client that goes away mid-batch; the serving node's memory during a batch of large
// members.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <filesystem>

#include "archive/members.h"
#include "archive/tar_reader.h"
#include "archive/tar_writer.h"
#include "cli_util.h"
#include "objects_util.h"
#include "shards_util.h"
#include "wire/batch_json.h"

namespace silo::integration {
namespace {

const std::string kShards(kBucket);

// The peak resident memory of process `pid` seen by sampling while it is set.
class RssSampler {
 public:
  explicit RssSampler(pid_t pid) : pid_(pid), thread_([this] { run(); }) {}
  ~RssSampler() { stop(); }
  uint64_t stop() {
    is_done_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_;
  }
  static uint64_t rss_of(pid_t pid) {
    std::ifstream status(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("VmRSS:")) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
  }

 private:
  void run() {
    while (!is_done_) {
      peak_ = std::max(peak_, rss_of(pid_));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  pid_t pid_;
  std::atomic<bool> is_done_{false};
  uint64_t peak_ = 0;
  std::thread thread_;
};

TEST(BatchTest, FiveThousandEntriesOfObjectsRangesMembersAndSamplesComeBackInOrder) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3, .mountpaths = 2}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kShards));
  ASSERT_OK(c.create_bucket("other"));
  silo::testing::Random random;
  // 12 shards of 40 samples (KEY.jpg, KEY.cls) and 300 plain objects in two buckets.
  std::vector<Members> shards;
  for (int s = 0; s < 12; ++s) {
    Members shard;
    for (int i = 0; i < 40; ++i) {
      const std::string key = fmt::format("s{:02}-{:03}", s, i);
      shard.emplace_back(key + ".jpg", random.bytes(random.uniform(1, 12 * 1024)));
      shard.emplace_back(key + ".cls", std::to_string(i % 10));
    }
    ASSERT_OK(c.put(kShards, fmt::format("shard-{:02}.tar", s), tar_of(shard)).status());
    shards.push_back(std::move(shard));
  }
  std::map<std::pair<std::string, std::string>, std::string> objects;
  for (int i = 0; i < 300; ++i) {
    const std::string bucket = i % 3 == 0 ? "other" : kShards;
    const std::string name = fmt::format("dir/obj-{:03}", i);
    objects[{bucket, name}] = random.bytes(random.uniform(0, 70 * 1024));
    ASSERT_OK(c.put(bucket, name, objects[{bucket, name}]).status());
  }
  // 5,000 entries of every kind, with what each must give.
  wire::BatchRequest request;
  Members expected;
  for (int i = 0; i < 5000; ++i) {
    wire::BatchEntry entry;
    const int kind = static_cast<int>(random.uniform(0, 4));
    if (kind <= 1) {
      auto it = objects.begin();
      std::advance(it, random.uniform(0, objects.size() - 1));
      entry.bucket = it->first.first;
      entry.name = it->first.second;
      std::string bytes = it->second;
      if (kind == 1 && bytes.size() > 10) {
        entry.start = random.uniform(0, bytes.size() - 2);
        entry.length = random.uniform(1, bytes.size() - *entry.start);
        bytes = bytes.substr(*entry.start, *entry.length);
      }
      expected.emplace_back(entry.tar_name(), bytes);
    } else {
      const size_t s = random.uniform(0, shards.size() - 1);
      const size_t m = random.uniform(0, shards[s].size() / 2 - 1) * 2;  // a sample's .jpg
      entry.bucket = kShards;
      entry.name = fmt::format("shard-{:02}.tar", s);
      if (kind == 2) {
        entry.archpath = shards[s][m].first;
        expected.emplace_back(entry.tar_name(), shards[s][m].second);
      } else if (kind == 3) {
        entry.archpath = std::string(archive::split_sample_key(shards[s][m].first).first);
        entry.archmode = "wdskey";
        for (size_t k = m; k < m + 2; ++k) {
          expected.emplace_back(entry.bucket + "/" + entry.name + "/" + shards[s][k].first, shards[s][k].second);
        }
      } else {
        entry.archpath = shards[s][m].first;
        entry.start = 1;
        expected.emplace_back(entry.tar_name(), shards[s][m].second.substr(std::min<size_t>(1, shards[s][m].second.size())));
        if (shards[s][m].second.size() < 2) {  // a range past the end of a 1-byte member: ask whole
          entry.start.reset();
          expected.back().second = shards[s][m].second;
        }
      }
    }
    request.entries.push_back(std::move(entry));
  }
  ASSERT_OK_AND_ASSIGN(const std::string tar, get_batch(c, request));
  const Members got = members_of(tar);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].first, expected[i].first) << i;
    ASSERT_TRUE(got[i].second == expected[i].second) << i << " " << got[i].first;
  }
  EXPECT_EQ(metric_sum(cluster->endpoint(), "silo_batch_entries_total"), request.entries.size());
  // Entries came in runs, members too (their shards' indexes were built at PUT); a GET only
  // for what a run leaves (an object moved by the joining targets' rebalance, say).
  const size_t runnable = std::count_if(request.entries.begin(), request.entries.end(),
                                        [](const wire::BatchEntry& e) { return !e.archmode; });
  EXPECT_GT(sum_over_targets(*cluster, "silo_batch_run_entries_read_total"), runnable * 9 / 10);
  // Every target served part of it.
  for (const auto& id : cluster->target_ids()) {
    ASSERT_OK_AND_ASSIGN(const auto node, cluster->node(id));
    EXPECT_GT(metric_sum(node.url, "silo_target_archive_reads_total"), 0u) << id;
  }

  // Any node serves a batch: the same through a target.
  ASSERT_OK_AND_ASSIGN(auto direct, cluster->client_of(cluster->target_ids()[1]));
  wire::BatchRequest some;
  some.entries.assign(request.entries.begin(), request.entries.begin() + 300);
  ASSERT_OK_AND_ASSIGN(const std::string from_target, get_batch(*direct, some));
  const Members got_there = members_of(from_target);
  ASSERT_EQ(got_there.size(), 300u + std::count_if(some.entries.begin(), some.entries.end(),
                                                   [](const auto& e) { return e.archmode.has_value(); }));
  EXPECT_TRUE(std::equal(got_there.begin(), got_there.end(), got.begin()));

  // continue_on_error: missing objects, members and buckets are empty __404__/ members.
  wire::BatchRequest holes{.entries = {request.entries[0],
                                       {.bucket = kShards, .name = "nope"},
                                       {.bucket = kShards, .name = "shard-00.tar", .archpath = "nope.jpg"},
                                       {.bucket = "nobucket", .name = "x"},
                                       request.entries[1]},
                           .continue_on_error = true};
  ASSERT_OK_AND_ASSIGN(const std::string with_holes, get_batch(c, holes));
  const Members holed = members_of(with_holes);
  ASSERT_EQ(holed.size(), 5u + (holes.entries[0].archmode ? 1 : 0) + (holes.entries[4].archmode ? 1 : 0));
  const size_t first = holes.entries[0].archmode ? 2 : 1;
  EXPECT_EQ(holed[first], std::make_pair(std::string("__404__/") + kShards + "/nope", std::string()));
  EXPECT_EQ(holed[first + 1].first, std::string("__404__/") + kShards + "/shard-00.tar/nope.jpg");
  EXPECT_EQ(holed[first + 2].first, "__404__/nobucket/x");
  EXPECT_EQ(metric_sum(cluster->endpoint(), "silo_batch_missing_entries_total"), 3u);

  // Without it, a first entry that is missing is the entry's 404; a bad request is 400.
  holes.continue_on_error = false;
  holes.entries.erase(holes.entries.begin());
  const auto refused = get_batch(c, holes);
  EXPECT_EQ(refused.status().code(), Code::kNotFound) << refused.status();
  EXPECT_NE(refused.status().message().find("batch entry 0"), std::string::npos) << refused.status();
  wire::BatchRequest bad_range{.entries = {{.bucket = kShards, .name = "shard-00.tar", .start = 1u << 30}}};
  EXPECT_EQ(get_batch(c, bad_range).status().code(), Code::kOutOfRange);
  ASSERT_OK_AND_ASSIGN(const client::Response malformed,
                       c.request(http::Method::kPost, "/v1/batch", R"({"entries": [{"bucket": "b"}]})"));
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  // A miss after the first byte cuts the stream: an error, never a shorter archive.
  wire::BatchRequest late = some;
  late.entries.push_back({.bucket = kShards, .name = "nope"});
  const auto cut = get_batch(c, late);
  EXPECT_FALSE(cut.has_value());

  // The CLI: a list of lines, samples by key, a file written whole.
  ASSERT_OK_AND_ASSIGN(auto dir, silo::testing::TempDir::create("silo-batch"));
  std::ofstream(dir.path() + "/list.txt") << "# samples\n"
                                          << kShards << "/shard-03.tar s03-007\n\n"
                                          << kShards << "/shard-04.tar s04-010\n";
  Cli cli(cluster->endpoint());
  CliResult r = cli.run({"batch", "get", dir.path() + "/list.txt", dir.path() + "/out.tar", "--archmode", "wdskey"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_NE(r.out.find("2 entries"), std::string::npos) << r;
  std::ifstream written(dir.path() + "/out.tar", std::ios::binary);
  const std::string out_tar((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  const Members cli_members = members_of(out_tar);
  ASSERT_EQ(cli_members.size(), 4u);
  EXPECT_EQ(cli_members[0].first, std::string(kShards) + "/shard-03.tar/s03-007.jpg");
  EXPECT_EQ(cli_members[3], std::make_pair(std::string(kShards) + "/shard-04.tar/s04-010.cls", std::string("0")));
  std::ofstream(dir.path() + "/bad.txt") << kShards << "/shard-03.tar s03-007\n" << kShards << "/nope\n";
  r = cli.run({"batch", "get", dir.path() + "/bad.txt", dir.path() + "/bad.tar"});
  EXPECT_NE(r.code, 0) << r;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/bad.tar")) << "nothing left of a failed batch";
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/bad.tar.silo-partial"));
}

// A client that goes away mid-batch: the serving node stops asking, and the owners stop
// sending (their connections are closed), long before the batch's bytes were read.
TEST(BatchTest, AClientThatGoesAwayStopsTheWorkOnEveryOwner) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3, .mountpaths = 1}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kShards));
  silo::testing::Random random;
  constexpr int kObjects = 40;
  constexpr uint64_t kSize = 4 << 20;
  for (int i = 0; i < kObjects; ++i) ASSERT_OK(c.put(kShards, fmt::format("o{}", i), random.bytes(kSize)).status());
  wire::BatchRequest request;
  for (int i = 0; i < 1000; ++i) request.entries.push_back({.bucket = kShards, .name = fmt::format("o{}", i % kObjects)});
  const std::string body = wire::batch_request_json(request);  // 4 GB if read to the end
  const uint64_t sent_before = sum_over_targets(*cluster, "silo_target_bytes_sent_total");
  {
    ASSERT_OK_AND_ASSIGN(auto conn, RawConnection::open(cluster->endpoint()));
    ASSERT_TRUE(conn.send(signed_request("POST", "/v1/batch", "test",
                                         {{"content-length", std::to_string(body.size())}}) +
                          body));
    const std::string head = conn.read_head(std::chrono::milliseconds(30000));
    ASSERT_EQ(status_code(head), 200) << head;
    EXPECT_EQ(conn.read(8 << 20, std::chrono::milliseconds(30000)).size(), 8u << 20);
  }  // gone
  // The serving node notices at its next write, and cuts.
  for (int i = 0; i < 200 && metric_sum(cluster->endpoint(), "silo_batch_failures_total") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(metric_sum(cluster->endpoint(), "silo_batch_failures_total"), 1u);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const uint64_t settled = sum_over_targets(*cluster, "silo_target_bytes_sent_total") - sent_before;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_bytes_sent_total") - sent_before, settled)
      << "owners still sending after the client left";
  // At most the window (64 entries) beyond what the client read, of 1,000.
  EXPECT_LT(settled, 100 * kSize) << "bytes the owners sent for a client that read 8 MiB";
  std::printf("owners sent %llu MiB for a client that read 8 MiB of a 4,000 MiB batch\n",
              static_cast<unsigned long long>(settled >> 20));
}

// 1,000 entries of 16 MiB members (16 GB through the serving node): its memory stays
// within the window, whatever the batch's size.
TEST(BatchTest, TheServingNodesMemoryStaysBoundedDuringABatchOfLargeMembers) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3, .mountpaths = 1}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kShards));
  silo::testing::Random random;
  constexpr uint64_t kMember = 16 << 20;
  const std::string bytes = random.bytes(kMember);
  for (int s = 0; s < 6; ++s) {
    ASSERT_OK(c.put(kShards, fmt::format("big-{}.tar", s), tar_of({{"a.bin", bytes}, {"b.bin", bytes}})).status());
  }
  wire::BatchRequest request;
  for (int i = 0; i < 1000; ++i) {
    request.entries.push_back(
        {.bucket = kShards, .name = fmt::format("big-{}.tar", i % 6), .archpath = i % 2 ? "a.bin" : "b.bin"});
  }
  ASSERT_OK_AND_ASSIGN(const auto proxy, cluster->node(cluster->proxy_ids()[0]));
  const uint64_t before = RssSampler::rss_of(proxy.pid);
  RssSampler sampler(proxy.pid);
  uint64_t members = 0;
  uint64_t mismatches = 0;
  uint64_t received = 0;
  uint64_t trailer = 0;  // bytes after the last member: the two end blocks, zeros
  // Each member is a 512-byte header, then 16 MiB (a multiple of 512: no padding).
  const auto got = c.get_batch(request, [&](std::span<const char> data) {
    for (size_t at = 0; at < data.size();) {
      if (members == request.entries.size()) {
        mismatches += std::count_if(data.begin() + at, data.end(), [](char b) { return b != 0; });
        trailer += data.size() - at;
        break;
      }
      const uint64_t position = received % (512 + kMember);
      size_t n = 0;
      if (position < 512) {
        n = std::min<uint64_t>(512 - position, data.size() - at);
      } else {
        const uint64_t in_member = position - 512;
        n = std::min<uint64_t>(kMember - in_member, data.size() - at);
        if (std::memcmp(data.data() + at, bytes.data() + in_member, n) != 0) ++mismatches;
        if (in_member + n == kMember) ++members;
      }
      at += n;
      received += n;
    }
    return Status::ok();
  });
  const uint64_t peak = sampler.stop();
  ASSERT_OK(got.status());
  EXPECT_EQ(members, 1000u);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(trailer, 1024u);
  std::printf("serving node RSS: %llu MiB before, %llu MiB at peak, over a batch of %llu MiB\n",
              static_cast<unsigned long long>(before >> 20), static_cast<unsigned long long>(peak >> 20),
              static_cast<unsigned long long>(*got >> 20));
  // The window (64 MiB read ahead), one chunk per batch and the connections' buffers; the
  // large buffers go back to the system when freed (silod's mmap threshold), so there is
  // no allocator slack of another window.
  EXPECT_LT(peak, before + (96ull << 20));
}

}  // namespace
}  // namespace silo::integration
