// Archive reads (docs/shards.md) against a real cluster: one member, a WebDataset sample
// and pattern selections as tars, the member list, Range within a member, S3 and native,
// through the proxy; errors for missing members and objects that are no archive; members
// of shards that a rebalance moved.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "archive/members.h"
#include "archive/tar_reader.h"
#include "archive/tar_writer.h"
#include "cli_util.h"
#include "objects_util.h"
#include "shards_util.h"
#include "testing/subprocess.h"
#include "wire/batch_json.h"

namespace silo::integration {
namespace {

// A WebDataset shard of `samples` samples: KEY.jpg (random, up to 40 KiB), KEY.cls, KEY.json.
Members wds_shard(silo::testing::Random& random, int shard, int samples) {
  Members members;
  for (int i = 0; i < samples; ++i) {
    const std::string key = fmt::format("s{:03}-{:04}", shard, i);
    members.emplace_back(key + ".jpg", random.bytes(random.uniform(1, 40 * 1024)));
    members.emplace_back(key + ".cls", std::to_string(i % 10));
    members.emplace_back(key + ".json", fmt::format(R"({{"key":"{}"}})", key));
  }
  return members;
}

Members only(const Members& all, const std::function<bool(const std::string&)>& keep) {
  Members out;
  for (const auto& m : all) {
    if (keep(m.first)) out.push_back(m);
  }
  return out;
}

// One S3 GET through the proxy (path style), signed with the admin keys.
std::pair<int, std::string> s3_get(const LocalCluster& cluster, const std::string& target,
                                   std::vector<std::pair<std::string, std::string>> headers = {}) {
  auto conn = RawConnection::open(cluster.endpoint());
  EXPECT_TRUE(conn.has_value()) << conn.status();
  if (!conn) return {0, ""};
  EXPECT_TRUE(conn->send(signed_request("GET", target, "test", std::move(headers))));
  const std::string head = conn->read_head(std::chrono::milliseconds(30000));
  const size_t at = head.find("Content-Length: ");
  const size_t length = at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
  return {status_code(head), conn->read(length)};
}

TEST(ShardsTest, MembersSamplesSelectionsAndTheListReadBackExactly) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3, .mountpaths = 2}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kBucket));
  silo::testing::Random random;
  const Members shard = wds_shard(random, 0, 50);
  ASSERT_OK(c.put(kBucket, "train-0000.tar", tar_of(shard)).status());

  // Every member, whole and in part.
  for (const auto& [name, bytes] : shard) {
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get_archive(kBucket, "train-0000.tar", {.path = name}));
    ASSERT_EQ(got, bytes) << name;
  }
  const auto& [jpg_name, jpg] = shard[3];
  ASSERT_GT(jpg.size(), 10u);
  ASSERT_OK_AND_ASSIGN(const std::string part, c.get_archive(kBucket, "train-0000.tar", {.path = jpg_name},
                                                             client::ByteRange{"bytes=3-9"}));
  EXPECT_EQ(part, jpg.substr(3, 7));
  ASSERT_OK_AND_ASSIGN(const std::string tail, c.get_archive(kBucket, "train-0000.tar", {.path = jpg_name},
                                                             client::ByteRange{"bytes=-4"}));
  EXPECT_EQ(tail, jpg.substr(jpg.size() - 4));

  // A sample by its key, and selections by pattern: tars of the members, in archive order.
  ASSERT_OK_AND_ASSIGN(const std::string sample,
                       c.get_archive(kBucket, "train-0000.tar", {.path = "s000-0007", .mode = "wdskey"}));
  EXPECT_EQ(members_of(sample), only(shard, [](const std::string& n) { return n.starts_with("s000-0007."); }));
  const std::map<std::string, std::function<bool(const std::string&)>> modes = {
      {"suffix", [](const std::string& n) { return n.ends_with(".cls"); }},
      {"prefix", [](const std::string& n) { return n.starts_with("s000-001"); }},
      {"substr", [](const std::string& n) { return n.find("-002") != std::string::npos; }},
      {"regexp", [](const std::string& n) { return n == "s000-0001.json" || n == "s000-0002.json"; }}};
  const std::map<std::string, std::string> patterns = {
      {"suffix", ".cls"}, {"prefix", "s000-001"}, {"substr", "-002"}, {"regexp", "s000-000[12]\\.json"}};
  for (const auto& [mode, keep] : modes) {
    ASSERT_OK_AND_ASSIGN(const std::string selected,
                         c.get_archive(kBucket, "train-0000.tar", {.path = patterns.at(mode), .mode = mode}));
    EXPECT_EQ(members_of(selected), only(shard, keep)) << mode;
  }

  // The list, from the index.
  ASSERT_OK_AND_ASSIGN(const std::string list, c.get_archive(kBucket, "train-0000.tar", {.lists = true}));
  EXPECT_TRUE(list.starts_with(R"({"format":"tar","members":[{"name":"s000-0000.jpg","offset":512,"size":)"))
      << list.substr(0, 200);
  size_t listed = 0;
  for (size_t at = list.find("\"name\""); at != std::string::npos; at = list.find("\"name\"", at + 1)) ++listed;
  EXPECT_EQ(listed, shard.size());

  // S3: the query is signed like any other; Range within the member.
  const auto [status, body] = s3_get(*cluster, fmt::format("/{}/train-0000.tar?archpath={}", kBucket, jpg_name));
  EXPECT_EQ(status, 200) << body.substr(0, 300);
  EXPECT_TRUE(body == jpg);
  const auto [ranged, some] =
      s3_get(*cluster, fmt::format("/{}/train-0000.tar?archpath={}", kBucket, jpg_name), {{"Range", "bytes=0-1"}});
  EXPECT_EQ(ranged, 206) << some.substr(0, 300);
  EXPECT_TRUE(some == jpg.substr(0, 2));
  const auto [missing_status, missing_body] = s3_get(*cluster, fmt::format("/{}/train-0000.tar?archpath=nope", kBucket));
  EXPECT_EQ(missing_status, 404);
  EXPECT_NE(missing_body.find("<Code>NoSuchArchiveMember</Code>"), std::string::npos) << missing_body;

  // Errors: a member not there, an object that is no archive, a bad mode.
  const auto missing = c.get_archive(kBucket, "train-0000.tar", {.path = "s999.jpg"});
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().reason(), "NoSuchArchiveMember") << missing.status();
  ASSERT_OK(c.put(kBucket, "broken.tar", random.bytes(3000)).status());
  const auto broken = c.get_archive(kBucket, "broken.tar", {.path = "x"});
  EXPECT_EQ(broken.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(broken.status().reason(), "NotAnArchive") << broken.status();
  const std::string whole = tar_of(shard);
  ASSERT_OK(c.put(kBucket, "cut.tar", whole.substr(0, whole.size() / 2)).status());
  EXPECT_EQ(c.get_archive(kBucket, "cut.tar", {.path = shard.back().first}).status().reason(), "CorruptArchive");
  EXPECT_EQ(c.get_archive(kBucket, "train-0000.tar", {.path = "x", .mode = "glob"}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(c.get_archive(kBucket, "nosuch.tar", {.path = "x"}).status().code(), Code::kNotFound);

  // Any object on demand: a tar under another name gets its index at the first member read.
  ASSERT_OK(c.put(kBucket, "samples.bin", tar_of({{"a.txt", "alpha"}})).status());
  ASSERT_OK_AND_ASSIGN(const std::string alpha, c.get_archive(kBucket, "samples.bin", {.path = "a.txt"}));
  EXPECT_EQ(alpha, "alpha");
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_archive_index_builds_total"), 1u)
      << "only the object not named like an archive was indexed at its read";
  EXPECT_GT(sum_over_targets(*cluster, "silo_target_archive_reads_total"), shard.size());

  // The CLI: the member list and one member, a sample as a tar, and a clear error.
  Cli cli(cluster->endpoint());
  CliResult r = cli.run({"ls", std::string(kBucket) + "/train-0000.tar", "--members", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(r.out.find(R"("format":"tar","members":[{"name":"s000-0000.jpg")") != std::string::npos) << r;
  r = cli.run({"ls", std::string(kBucket) + "/train-0000.tar", "--members", "--long"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(r.out.find(fmt::format("{} members", shard.size())) != std::string::npos) << r;
  r = cli.run({"cat", std::string(kBucket) + "/train-0000.tar", "--archpath", jpg_name});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out == jpg);
  r = cli.run({"cat", std::string(kBucket) + "/train-0000.tar", "--archpath", "s000-0007", "--archmode", "wdskey"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(members_of(r.out), only(shard, [](const std::string& n) { return n.starts_with("s000-0007."); }));
  r = cli.run({"cat", std::string(kBucket) + "/train-0000.tar", "--archpath", "nope.jpg"});
  EXPECT_EQ(r.code, kNotFound) << r;
  EXPECT_TRUE(r.err.find("has no member nope.jpg") != std::string::npos) << r;
}

TEST(ShardsTest, ShardsMovedByARebalanceStillServeTheirMembers) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 2, .mountpaths = 2}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kBucket, R"({"copies": 2})"));
  silo::testing::Random random;
  std::vector<Members> shards;
  for (int i = 0; i < 12; ++i) {
    shards.push_back(wds_shard(random, i, 5));
    ASSERT_OK(c.put(kBucket, fmt::format("train-{:04}.tar", i), tar_of(shards.back())).status());
  }
  ASSERT_OK(cluster->add_node("target").status());
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  wait_rebalance(c, map.rebalance_job());
  for (size_t i = 0; i < shards.size(); ++i) {
    for (const auto& [name, bytes] : shards[i]) {
      ASSERT_OK_AND_ASSIGN(const std::string got,
                           c.get_archive(kBucket, fmt::format("train-{:04}.tar", i), {.path = name}));
      ASSERT_EQ(got, bytes) << i << "/" << name;
    }
  }
  // And through batch GET: every sample of every moved shard in one request.
  wire::BatchRequest batch;
  Members expected;
  for (size_t i = 0; i < shards.size(); ++i) {
    for (const auto& [name, bytes] : shards[i]) {
      if (!name.ends_with(".jpg")) continue;
      const std::string key(archive::split_sample_key(name).first);
      batch.entries.push_back({.bucket = std::string(kBucket), .name = fmt::format("train-{:04}.tar", i),
                               .archpath = key, .archmode = "wdskey"});
      for (const auto& m : only(shards[i], [&key](const std::string& n) { return n.starts_with(key + "."); })) {
        expected.emplace_back(fmt::format("{}/train-{:04}.tar/{}", kBucket, i, m.first), m.second);
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(const std::string tar, get_batch(c, batch));
  EXPECT_EQ(members_of(tar), expected);
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_archive_index_builds_total"), 0u)
      << "moved shards arrive with their index (built as they are installed)";
}

// Compressed shards (tgz, tar.lz4, zip; docs/shards.md "Formats"), written by the system's
// tar, gzip, lz4 and zip: every member whole and in part, a sample, the list, and batch GET
// of all of them; the object's own bytes stay what was PUT.
// A shard in an erasure-coded bucket: its index is built from the slices at the first
// member read and kept; members, ranges, samples, selections, the list, S3 and batch GET
// read through the slices, also with a target down (degraded: reconstructed).
TEST(ShardsTest, ErasureCodedShardsServeTheirMembersFromTheirSlices) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3, .mountpaths = 1}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kBucket, R"({"ec": {"data": 2, "parity": 1, "min_size": 1024}})"));
  silo::testing::Random random;
  const Members shard = wds_shard(random, 0, 300);  // ~6 MiB: several stripes of 2 x 1 MiB cells
  const std::string whole = tar_of(shard);
  ASSERT_GT(whole.size(), 4u << 20);
  ASSERT_OK(c.put(kBucket, "coded-0000.tar", whole).status());
  ASSERT_OK_AND_ASSIGN(const std::string back, c.get(kBucket, "coded-0000.tar"));
  ASSERT_TRUE(back == whole);

  ASSERT_OK_AND_ASSIGN(const std::string list, c.get_archive(kBucket, "coded-0000.tar", {.lists = true}));
  EXPECT_TRUE(list.starts_with(R"({"format":"tar","members":[{"name":"s000-0000.jpg","offset":512,"size":)"))
      << list.substr(0, 200);
  for (size_t i = 0; i < shard.size(); i += 7) {
    const auto& [name, bytes] = shard[i];
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get_archive(kBucket, "coded-0000.tar", {.path = name}));
    ASSERT_TRUE(got == bytes) << name;
  }
  // Each holder that served a read built the index once, beside its own slice.
  const uint64_t builds = sum_over_targets(*cluster, "silo_target_archive_index_builds_total");
  EXPECT_GE(builds, 1u);
  EXPECT_LE(builds, 3u);
  for (size_t i = 3; i < shard.size(); i += 7) {
    ASSERT_OK(c.get_archive(kBucket, "coded-0000.tar", {.path = shard[i].first}).status());
  }
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_archive_index_builds_total"), builds)
      << "the indexes built at the first reads are kept";
  const auto& [jpg_name, jpg] = shard[3 * 150];
  ASSERT_GT(jpg.size(), 10u);
  ASSERT_OK_AND_ASSIGN(const std::string part, c.get_archive(kBucket, "coded-0000.tar", {.path = jpg_name},
                                                             client::ByteRange{"bytes=3-9"}));
  EXPECT_EQ(part, jpg.substr(3, 7));
  ASSERT_OK_AND_ASSIGN(const std::string sample,
                       c.get_archive(kBucket, "coded-0000.tar", {.path = "s000-0150", .mode = "wdskey"}));
  EXPECT_EQ(members_of(sample), only(shard, [](const std::string& n) { return n.starts_with("s000-0150."); }));
  ASSERT_OK_AND_ASSIGN(const std::string labels,
                       c.get_archive(kBucket, "coded-0000.tar", {.path = "-01", .mode = "substr"}));
  EXPECT_EQ(members_of(labels), only(shard, [](const std::string& n) { return n.find("-01") != std::string::npos; }));
  const auto [status, body] = s3_get(*cluster, fmt::format("/{}/coded-0000.tar?archpath={}", kBucket, jpg_name));
  EXPECT_EQ(status, 200) << body.substr(0, 300);
  EXPECT_TRUE(body == jpg);
  const auto missing = c.get_archive(kBucket, "coded-0000.tar", {.path = "s999.jpg"});
  EXPECT_EQ(missing.status().reason(), "NoSuchArchiveMember") << missing.status();

  // Batch GET of members and samples of the coded shard.
  wire::BatchRequest request;
  Members expected;
  for (size_t i = 0; i < shard.size(); i += 11) {
    request.entries.push_back({.bucket = std::string(kBucket), .name = "coded-0000.tar", .archpath = shard[i].first});
    expected.emplace_back(request.entries.back().tar_name(), shard[i].second);
  }
  request.entries.push_back({.bucket = std::string(kBucket), .name = "coded-0000.tar", .archpath = "s000-0020", .archmode = "wdskey"});
  for (const auto& m : only(shard, [](const std::string& n) { return n.starts_with("s000-0020."); })) {
    expected.emplace_back(std::string(kBucket) + "/coded-0000.tar/" + m.first, m.second);
  }
  ASSERT_OK_AND_ASSIGN(const std::string batch, get_batch(c, request));
  EXPECT_EQ(members_of(batch), expected);

  // One target down: members are reconstructed from the other slices.
  const std::string down = cluster->target_ids()[0];
  ASSERT_OK(cluster->kill(down));
  for (size_t i = 1; i < shard.size(); i += 13) {
    const auto& [name, bytes] = shard[i];
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get_archive(kBucket, "coded-0000.tar", {.path = name}));
    ASSERT_TRUE(got == bytes) << name;
  }
  ASSERT_OK_AND_ASSIGN(const std::string batch_degraded, get_batch(c, request));
  EXPECT_EQ(members_of(batch_degraded), expected);
}

TEST(ShardsTest, CompressedShardsServeTheirMembersDecompressed) {
  // A plain bucket (members decompressed from the file) and an erasure-coded one (from the
  // object's bytes as its slices give them).
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3, .mountpaths = 1}));
  client::Client& c = cluster->client();
  const std::string coded = "coded";
  ASSERT_OK(c.create_bucket(kBucket));
  ASSERT_OK(c.create_bucket(coded, R"({"ec": {"data": 2, "parity": 1, "min_size": 1024}})"));
  ASSERT_OK_AND_ASSIGN(auto dir, silo::testing::TempDir::create("silo-compressed"));
  silo::testing::Random random;
  const Members shard = wds_shard(random, 0, 30);
  std::filesystem::create_directories(dir.path() + "/files");
  for (const auto& [name, bytes] : shard) std::ofstream(dir.path() + "/files/" + name, std::ios::binary) << bytes;
  const std::string list = dir.path() + "/names.txt";
  {
    std::ofstream names(list);
    for (const auto& m : shard) names << m.first << "\n";
  }
  const std::map<std::string, std::string> commands = {
      {"s.tgz", "tar -czf ../s.tgz -T " + list},
      {"s.tar.lz4", "tar -cf - -T " + list + " | lz4 -q > ../s.tar.lz4"},
      {"s.zip", "zip -q ../s.zip -@ < " + list},
  };
  std::map<std::string, std::string> archives;
  for (const auto& [name, command] : commands) {
    ASSERT_OK_AND_ASSIGN(const int exit_code,
                         silo::testing::run_command({"bash", "-c", "cd " + dir.path() + "/files && " + command}, {}));
    ASSERT_EQ(exit_code, 0) << command;
    std::ifstream in(dir.path() + "/" + name, std::ios::binary);
    archives[name] = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  for (const std::string& bucket : {std::string(kBucket), coded}) {
    for (const auto& [name, bytes] : archives) {
      const std::string where = bucket + "/" + name;
      ASSERT_OK(c.put(bucket, name, bytes).status());
      for (const auto& [member, member_bytes] : shard) {
        ASSERT_OK_AND_ASSIGN(const std::string got, c.get_archive(bucket, name, {.path = member}));
        ASSERT_TRUE(got == member_bytes) << where << "/" << member;
      }
      const auto& [jpg_name, jpg] = shard[6];
      ASSERT_OK_AND_ASSIGN(const std::string part,
                           c.get_archive(bucket, name, {.path = jpg_name}, client::ByteRange{"bytes=2-9"}));
      EXPECT_EQ(part, jpg.substr(2, 8)) << where;
      ASSERT_OK_AND_ASSIGN(const std::string sample,
                           c.get_archive(bucket, name, {.path = "s000-0011", .mode = "wdskey"}));
      EXPECT_EQ(members_of(sample), only(shard, [](const std::string& n) { return n.starts_with("s000-0011."); }))
          << where;
      ASSERT_OK_AND_ASSIGN(const std::string listed, c.get_archive(bucket, name, {.lists = true}));
      EXPECT_NE(listed.find(R"("name":"s000-0029.json")"), std::string::npos) << listed.substr(0, 300);
      EXPECT_EQ(c.get_archive(bucket, name, {.path = "nope"}).status().reason(), "NoSuchArchiveMember");
      ASSERT_OK_AND_ASSIGN(const std::string whole, c.get(bucket, name));
      EXPECT_TRUE(whole == bytes) << where;
    }
    if (bucket == kBucket) {
      EXPECT_EQ(sum_over_targets(*cluster, "silo_target_archive_index_builds_total"), 0u)
          << "indexed as they were installed";
    }
  }
  wire::BatchRequest batch;
  Members expected;
  for (const std::string& bucket : {std::string(kBucket), coded}) {
    for (const auto& [name, command] : commands) {
      for (size_t i = 0; i < shard.size(); i += 7) {
        batch.entries.push_back({.bucket = bucket, .name = name, .archpath = shard[i].first});
        expected.emplace_back(fmt::format("{}/{}/{}", bucket, name, shard[i].first), shard[i].second);
      }
    }
  }
  ASSERT_OK_AND_ASSIGN(const std::string tar, get_batch(c, batch));
  EXPECT_EQ(members_of(tar), expected);

  // A target down: the coded archives' members are decompressed from the bytes rebuilt
  // out of the other slices.
  ASSERT_OK(cluster->kill(cluster->target_ids()[0]));
  for (const auto& [name, bytes] : archives) {
    for (size_t i = 2; i < shard.size(); i += 9) {
      ASSERT_OK_AND_ASSIGN(const std::string got, c.get_archive(coded, name, {.path = shard[i].first}));
      ASSERT_TRUE(got == shard[i].second) << coded << "/" << name << "/" << shard[i].first;
    }
  }
}

// `silo put DIR BUCKET/PREFIX --shard-size`: samples whole and in natural key order, each
// shard near the size asked for, every file a member that reads back.
TEST(ShardsTest, TheCliPacksADirectoryIntoShardsOfSamples) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 2, .mountpaths = 1}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket(kBucket));
  ASSERT_OK_AND_ASSIGN(auto dir, silo::testing::TempDir::create("silo-pack"));
  silo::testing::Random random;
  std::map<std::string, std::string> files;  // relative name -> bytes
  for (int i = 0; i < 30; ++i) {
    const std::string key = fmt::format("part{}/sample{}", i % 2, i);  // sample9 before sample10
    files[key + ".jpg"] = random.bytes(random.uniform(1000, 8000));
    files[key + ".cls"] = std::to_string(i);
  }
  for (const auto& [name, bytes] : files) {
    std::filesystem::create_directories(std::filesystem::path(dir.path() + "/" + name).parent_path());
    std::ofstream(dir.path() + "/" + name, std::ios::binary) << bytes;
  }
  Cli cli(cluster->endpoint());
  const CliResult r = cli.run({"put", dir.path(), std::string(kBucket) + "/train-", "--shard-size", "20KiB"});
  ASSERT_EQ(r.code, 0) << r;
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all(kBucket, "train-"));
  ASSERT_GT(listed.size(), 3u) << r.out;
  std::map<std::string, std::string> read;
  std::vector<std::string> keys_in_order;
  for (const auto& entry : listed) {
    EXPECT_NE(r.out.find(entry.name), std::string::npos) << "printed: " << entry.name;
    EXPECT_LE(entry.size, 20u * 1024 + 8 * 1024 + 3 * 512) << entry.name << ": one sample past the size at most";
    ASSERT_OK_AND_ASSIGN(const std::string shard, c.get(kBucket, entry.name));
    std::string last_key;
    for (const auto& [name, bytes] : members_of(shard)) {
      read[name] = bytes;
      const std::string key(archive::split_sample_key(name).first);
      if (key != last_key) keys_in_order.push_back(key);
      last_key = key;
    }
  }
  EXPECT_EQ(read, files);
  EXPECT_EQ(keys_in_order.size(), files.size() / 2) << "every sample whole in one shard";
  EXPECT_TRUE(std::find(keys_in_order.begin(), keys_in_order.end(), "part1/sample9") + 1 ==
              std::find(keys_in_order.begin(), keys_in_order.end(), "part1/sample11"))
      << "natural key order";
}

}  // namespace
}  // namespace silo::integration
