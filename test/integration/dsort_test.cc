// Resharding jobs (dsort, docs/resharding.md) on a real cluster of 1 proxy and 4 targets:
// 200 input shards of 100 samples of varied sizes into 4 MiB shards in random, key,
// content and list order, checked sample by sample (each exactly once, members together
// and in order, the order asked for, sizes within one sample of the target); the same
// spec twice, and with a memory limit that forces spilling, gives byte-identical shards;
// tgz output (the same tar streams, compressed); loose objects into shards; a dry run; an abort mid-creation, a target killed mid-job and
// a rebalance starting mid-job leave no output; bad specs are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "archive/compressed.h"
#include "archive/members.h"
#include "archive/tar_reader.h"
#include "base/hash.h"
#include "objects_util.h"
#include "shards_util.h"

namespace silo::integration {
namespace {

constexpr std::string_view kIn = "dsort-in";
constexpr std::string_view kOut = "dsort-out";
constexpr uint64_t kShardSize = 4ull << 20;
constexpr auto kJobTimeout = std::chrono::seconds(240);

struct Sample {
  std::string key;
  std::string source;
  Members members;
  uint64_t tar_bytes = 0;
};

// 200 shards x 100 samples: KEY.jpg (200 B .. 6 KiB, a few 40 KiB), KEY.cls (an integer),
// KEY.json. Keys interleave across shards so that no order is the input's.
std::vector<Sample> make_input(client::Client& c, int shards, int per_shard) {
  silo::testing::Random random(21);
  std::vector<Sample> samples;
  for (int s = 0; s < shards; ++s) {
    Members members;
    for (int i = 0; i < per_shard; ++i) {
      Sample& sample = samples.emplace_back();
      sample.key = fmt::format("img{}", i * shards + s);  // natural order differs from byte order
      sample.source = fmt::format("in-{:03}.tar", s);
      const size_t size = random.uniform(0, 49) == 0 ? 40 * 1024 : random.uniform(200, 6 * 1024);
      sample.members = {{sample.key + ".jpg", random.bytes(size)},
                        {sample.key + ".cls", std::to_string(static_cast<int>(random.uniform(0, 40)) - 20)},
                        {sample.key + ".json", fmt::format(R"({{"key":"{}"}})", sample.key)}};
      for (const auto& [name, bytes] : sample.members) {
        sample.tar_bytes += archive::tar_member_bytes(name, bytes.size());
        members.emplace_back(name, bytes);
      }
    }
    EXPECT_OK(c.put(kIn, fmt::format("in-{:03}.tar", s), tar_of(members)).status());
  }
  return samples;
}

// Digit runs by value, the rest by byte: the test's own natural order.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const uint64_t x = std::stoull(a.substr(i, ie - i)), y = std::stoull(b.substr(j, je - j));
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

struct Output {
  std::vector<std::string> names;   // the shards, by name
  std::vector<std::string> bytes;   // each shard's bytes
  std::vector<std::string> keys;    // every sample's key, in order across the shards
  std::map<std::string, Members> samples;
};

// Reads every shard named with `prefix` and splits it into samples, checking that a
// sample's members are adjacent (a key seen again later is a failure).
Output read_output(client::Client& c, std::string_view prefix) {
  Output out;
  auto listed = c.list_all(kOut, prefix);
  EXPECT_TRUE(listed.has_value()) << listed.status();
  if (!listed) return out;
  for (const auto& o : *listed) {
    out.names.push_back(o.name);
    auto bytes = c.get(kOut, o.name);
    EXPECT_TRUE(bytes.has_value()) << bytes.status();
    if (!bytes) return out;
    out.bytes.push_back(*bytes);
    for (const auto& [name, data] : members_of(*bytes)) {
      const std::string key(archive::split_sample_key(name).first);
      if (out.keys.empty() || out.keys.back() != key) {
        EXPECT_EQ(out.samples.count(key), 0u) << "sample " << key << " is not in one piece, or twice";
        out.keys.push_back(key);
      }
      out.samples[key].emplace_back(name, data);
    }
  }
  return out;
}

// A tgz whose tar stream is `tar`, byte for byte: the members at the same offsets of the
// decompressed stream, and the whole stream read as one member.
void expect_tgz_of(const std::string& tgz, const std::string& tar, const std::string& what) {
  EXPECT_EQ(archive::sniff_format(tgz), wire::ARCHIVE_FORMAT_TGZ) << what;
  auto compressed = archive::index_archive(wire::ARCHIVE_FORMAT_TGZ, archive::read_bytes(tgz), tgz.size());
  ASSERT_TRUE(compressed.has_value()) << what << ": " << compressed.status();
  auto plain = archive::index_tar(archive::read_bytes(tar), tar.size());
  ASSERT_TRUE(plain.has_value()) << what << ": " << plain.status();
  ASSERT_EQ(compressed->members_size(), plain->members_size()) << what;
  for (int i = 0; i < plain->members_size(); ++i) {
    EXPECT_EQ(compressed->members(i).name(), plain->members(i).name()) << what;
    EXPECT_EQ(compressed->members(i).offset(), plain->members(i).offset()) << what;
    EXPECT_EQ(compressed->members(i).size(), plain->members(i).size()) << what;
  }
  wire::ArchiveMember whole;
  whole.set_offset(0);
  whole.set_size(tar.size());
  std::string bytes;
  const Status read = archive::read_member(wire::ARCHIVE_FORMAT_TGZ, archive::read_bytes(tgz), tgz.size(), whole,
                                           {.offset = 0, .length = tar.size()}, [&bytes](std::span<const char> b) {
                                             bytes.append(b.data(), b.size());
                                             return Status::ok();
                                           });
  ASSERT_TRUE(read.is_ok()) << what << ": " << read;
  EXPECT_TRUE(bytes == tar) << what;
}

// Runs `spec` to its end; returns the job.
wire::JobEntry run_job(client::Client& c, const std::string& spec, std::string_view state = "finished") {
  auto started = c.start_job(spec);
  EXPECT_TRUE(started.has_value()) << started.status();
  if (!started) return {};
  auto job = c.wait_job(started->id, kJobTimeout);
  EXPECT_TRUE(job.has_value()) << job.status();
  if (!job) return {};
  EXPECT_EQ(job->state, state) << job->detail;
  return *job;
}

std::string spec_of(std::string_view order, std::string_view out_template, std::string_view extra = "") {
  return fmt::format(R"({{"kind": "dsort", "input": {{"bucket": "{}", "template": "in-{{000..199}}.tar"}},
      "output": {{"bucket": "{}", "template": "{}", "shard_size": {}}}, "order": {}{}}})",
                     kIn, kOut, out_template, kShardSize, order, extra);
}

// Every input sample exactly once, whole; shards named in sequence within one sample of
// the target size; the keys in `expected` order.
void check_output(const Output& out, const std::vector<Sample>& input, const std::vector<std::string>& expected,
                  std::string_view prefix) {
  ASSERT_EQ(out.samples.size(), input.size());
  uint64_t largest_sample = 0;
  for (const Sample& s : input) {
    const auto it = out.samples.find(s.key);
    ASSERT_NE(it, out.samples.end()) << s.key;
    ASSERT_EQ(it->second, s.members) << s.key;
    largest_sample = std::max(largest_sample, s.tar_bytes);
  }
  EXPECT_EQ(out.keys, expected);
  for (size_t i = 0; i < out.names.size(); ++i) {
    EXPECT_EQ(out.names[i], fmt::format("{}{:05}.tar", prefix, i));
    EXPECT_LE(out.bytes[i].size(), kShardSize) << out.names[i];
    if (i + 1 < out.names.size()) {
      EXPECT_GT(out.bytes[i].size() + largest_sample, kShardSize) << out.names[i];
    }
  }
}

class DsortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(cluster_, LocalCluster::start({.proxies = 1, .targets = 4, .mountpaths = 1}));
    // The targets' joins start rebalances, and a reshard is refused while one runs.
    ASSERT_OK_AND_ASSIGN(const client::NodeMap map, cluster_->client().node_map());
    if (!map.rebalance_job().empty()) {
      ASSERT_OK_AND_ASSIGN(const client::JobEntry job, cluster_->client().wait_job(map.rebalance_job(), std::chrono::seconds(60)));
      ASSERT_EQ(job.state, "finished") << job.detail;
    }
    ASSERT_OK(cluster_->client().create_bucket(kIn));
    ASSERT_OK(cluster_->client().create_bucket(kOut));
  }
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(DsortTest, ARandomReshardHasEverySampleOnceAndIsTheSameEveryTimeSpilledOrNot) {
  client::Client& c = cluster_->client();
  const std::vector<Sample> input = make_input(c, 200, 100);

  // Random: by XXH64(seed, key) (ties: key, then input shard).
  const wire::JobEntry random_job = run_job(c, spec_of(R"({"by": "random", "seed": 7})", "rand-{00000..99999}.tar"));
  ASSERT_TRUE(random_job.dsort.has_value());
  EXPECT_EQ(random_job.dsort->samples, input.size());
  EXPECT_EQ(random_job.dsort->spilled_bytes, 0u);
  std::vector<std::pair<uint64_t, std::string>> hashed;
  for (const Sample& s : input) hashed.emplace_back(hash::xxh64(s.key, 7), s.key);
  std::sort(hashed.begin(), hashed.end());
  std::vector<std::string> expected;
  for (const auto& h : hashed) expected.push_back(h.second);
  const Output random_out = read_output(c, "rand-");
  check_output(random_out, input, expected, "rand-");
  EXPECT_EQ(random_job.dsort->output_shards, random_out.names.size());
  // Each target's part adds up to the whole: inputs read, records merged, shards built.
  const wire::JobEntry::Dsort& d = *random_job.dsort;
  EXPECT_EQ(d.samples_created, input.size());
  EXPECT_EQ(d.input_bytes + d.output_shards * 1024, d.bytes) << "the samples' bytes and one end block a shard";
  ASSERT_EQ(d.parts.size(), 4u);
  uint64_t inputs = 0, records = 0, shards = 0, samples = 0, bytes = 0;
  for (const auto& part : d.parts) {
    EXPECT_EQ(part.inputs_read, part.inputs_total) << part.id;
    EXPECT_EQ(part.records_ordered, part.records) << part.id << ": every record merged";
    EXPECT_EQ(part.shards_created, part.shards_planned) << part.id;
    EXPECT_EQ(part.samples_created, part.samples_planned) << part.id;
    EXPECT_EQ(part.bytes_created, part.bytes_planned) << part.id;
    inputs += part.inputs_read;
    records += part.records;
    shards += part.shards_created;
    samples += part.samples_created;
    bytes += part.bytes_created;
  }
  EXPECT_EQ(inputs, 200u);
  EXPECT_EQ(records, input.size());
  EXPECT_EQ(shards, d.output_shards);
  EXPECT_EQ(samples, input.size());
  EXPECT_EQ(bytes, d.bytes);

  // The same spec again, and with records spilled in many runs: the same bytes.
  run_job(c, spec_of(R"({"by": "random", "seed": 7})", "again-{00000..99999}.tar"));
  const wire::JobEntry spilled_job =
      run_job(c, spec_of(R"({"by": "random", "seed": 7})", "spill-{00000..99999}.tar", R"(, "memory_limit": 65536)"));
  ASSERT_TRUE(spilled_job.dsort.has_value());
  EXPECT_GT(spilled_job.dsort->spilled_bytes, 0u) << "a 64 KiB limit spills";
  for (std::string_view prefix : {"again-", "spill-"}) {
    const Output again = read_output(c, prefix);
    ASSERT_EQ(again.bytes.size(), random_out.bytes.size()) << prefix;
    for (size_t i = 0; i < again.bytes.size(); ++i) EXPECT_TRUE(again.bytes[i] == random_out.bytes[i]) << prefix << i;
  }

  // Names ending in .tgz: the same tar streams, gzip-compressed, indexed as shards.
  run_job(c, spec_of(R"({"by": "random", "seed": 7})", "gz-{00000..99999}.tgz"));
  auto gz = c.list_all(kOut, "gz-");
  ASSERT_TRUE(gz.has_value()) << gz.status();
  ASSERT_EQ(gz->size(), random_out.names.size());
  for (size_t i = 0; i < gz->size(); ++i) {
    const std::string& name = (*gz)[i].name;
    EXPECT_EQ(name, fmt::format("gz-{:05}.tgz", i));
    auto compressed = c.get(kOut, name);
    ASSERT_TRUE(compressed.has_value()) << compressed.status();
    EXPECT_LT(compressed->size(), random_out.bytes[i].size()) << name;
    expect_tgz_of(*compressed, random_out.bytes[i], name);
  }
  auto members = c.list_members(kOut, (*gz)[0].name);
  ASSERT_TRUE(members.has_value()) << members.status();
  const auto tar_members = members_of(random_out.bytes[0]);
  ASSERT_EQ(members->members.size(), tar_members.size());
  const auto& [first_name, first_bytes] = tar_members.front();
  EXPECT_EQ(members->members.front().name, first_name);
  auto member = c.get_archive(kOut, (*gz)[0].name, {.path = first_name});
  ASSERT_TRUE(member.has_value()) << member.status();
  EXPECT_EQ(*member, first_bytes);
}

TEST_F(DsortTest, KeyContentAndListOrdersPutEverySampleWhereTheySay) {
  client::Client& c = cluster_->client();
  const std::vector<Sample> input = make_input(c, 200, 100);
  // Key: natural order.
  run_job(c, spec_of(R"({"by": "key"})", "key-{00000..99999}.tar"));
  std::vector<std::string> expected;
  for (const Sample& s : input) expected.push_back(s.key);
  std::sort(expected.begin(), expected.end(), natural_less);
  check_output(read_output(c, "key-"), input, expected, "key-");

  // Content: the .cls member as an integer, then the key.
  run_job(c, spec_of(R"({"by": "content", "member": "cls", "type": "int"})", "cls-{00000..99999}.tar"));
  std::vector<std::pair<int, std::string>> by_class;
  for (const Sample& s : input) by_class.emplace_back(std::stoi(s.members[1].second), s.key);
  std::sort(by_class.begin(), by_class.end());
  expected.clear();
  for (const auto& k : by_class) expected.push_back(k.second);
  check_output(read_output(c, "cls-"), input, expected, "cls-");

  // List: an object that maps keys to output shards (in its own order, sizes as they come).
  std::string list = "{";
  std::vector<std::vector<std::string>> listed(3);
  for (size_t i = 0; i < input.size(); ++i) listed[(i * 7) % 3].push_back(input[input.size() - 1 - i].key);
  for (size_t s = 0; s < listed.size(); ++s) {
    list += fmt::format(R"({}"list-{}.tar": [)", s == 0 ? "" : ",", 2 - s);
    for (size_t k = 0; k < listed[s].size(); ++k) list += fmt::format(R"({}"{}")", k == 0 ? "" : ",", listed[s][k]);
    list += "]";
  }
  list += "}";
  ASSERT_OK(c.put(kIn, "keys.json", list).status());
  run_job(c, spec_of(fmt::format(R"({{"by": "list", "object": "{}/keys.json"}})", kIn), "unused-{0..9}.tar"));
  const Output by_list = read_output(c, "list-");
  ASSERT_EQ(by_list.names, (std::vector<std::string>{"list-0.tar", "list-1.tar", "list-2.tar"}));
  ASSERT_EQ(by_list.samples.size(), input.size());
  // list-2 holds listed[0], in the list's order, and so on.
  for (size_t s = 0; s < listed.size(); ++s) {
    const Output one = read_output(c, fmt::format("list-{}", 2 - s));
    EXPECT_EQ(one.keys, listed[s]) << s;
  }

  // The inputs are untouched.
  for (int s = 0; s < 200; s += 37) {
    ASSERT_OK_AND_ASSIGN(const std::string bytes, c.get(kIn, fmt::format("in-{:03}.tar", s)));
    Members members;
    for (const Sample& sample : input) {
      if (sample.source == fmt::format("in-{:03}.tar", s)) members.insert(members.end(), sample.members.begin(), sample.members.end());
    }
    EXPECT_TRUE(bytes == tar_of(members)) << s;
  }
}

TEST_F(DsortTest, LooseObjectsBecomeShardsAndADryRunWritesNothing) {
  client::Client& c = cluster_->client();
  silo::testing::Random random(5);
  std::map<std::string, Members> samples;
  for (int i = 0; i < 300; ++i) {
    const std::string key = fmt::format("photos/p{}", i);
    Members& m = samples[key];
    m.emplace_back(key + ".cls", std::to_string(i % 7));
    m.emplace_back(key + ".jpg", random.bytes(random.uniform(100, 20000)));
    for (const auto& [name, bytes] : m) ASSERT_OK(c.put(kIn, name, bytes).status());
  }
  const std::string spec = fmt::format(
      R"({{"kind": "dsort", "input": {{"bucket": "{}", "prefix": "photos/", "format": "loose"}},
          "output": {{"bucket": "{}", "template": "loose-{{000..999}}.tar", "shard_size": 262144}},
          "order": {{"by": "content", "member": "cls", "type": "int"}}{}}})",
      kIn, kOut, "");
  const wire::JobEntry dry = run_job(c, spec.substr(0, spec.size() - 1) + R"(, "dry_run": true})");
  ASSERT_TRUE(dry.dsort.has_value());
  EXPECT_EQ(dry.dsort->samples, 300u);
  EXPECT_GT(dry.dsort->output_shards, 5u);
  ASSERT_OK_AND_ASSIGN(const auto nothing, c.list_all(kOut));
  EXPECT_TRUE(nothing.empty()) << "a dry run writes no shard";

  const wire::JobEntry job = run_job(c, spec);
  ASSERT_TRUE(job.dsort.has_value());
  EXPECT_EQ(job.dsort->output_shards, dry.dsort->output_shards);
  EXPECT_EQ(job.dsort->bytes, dry.dsort->bytes);
  const Output out = read_output(c, "loose-");
  ASSERT_EQ(out.samples.size(), samples.size());
  for (const auto& [key, members] : samples) EXPECT_EQ(out.samples.at(key), members) << key;
  std::vector<std::pair<int, std::string>> by_class;
  for (const auto& [key, members] : samples) by_class.emplace_back(std::stoi(members[0].second), key);
  std::sort(by_class.begin(), by_class.end());
  std::vector<std::string> expected;
  for (const auto& k : by_class) expected.push_back(k.second);
  EXPECT_EQ(out.keys, expected);
}

TEST_F(DsortTest, AnAbortMidCreationAKilledTargetAndARebalanceLeaveNoOutput) {
  client::Client& c = cluster_->client();
  make_input(c, 200, 100);
  // Small output shards: creation takes long enough to be caught in the middle.
  const std::string spec = fmt::format(
      R"({{"kind": "dsort", "input": {{"bucket": "{}", "prefix": "in-"}},
          "output": {{"bucket": "{}", "template": "o-{{00000..99999}}.tar", "shard_size": 40960}},
          "order": {{"by": "random", "seed": 1}}}})",
      kIn, kOut);
  const auto wait_for_creation = [&c](const std::string& id) {
    for (int i = 0; i < 2400; ++i) {
      auto job = c.job(id);
      if (job && (job->objects_done > 0 || job->state != "running")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << id << " made no shard";
  };
  ASSERT_OK_AND_ASSIGN(const wire::JobEntry started, c.start_job(spec));
  wait_for_creation(started.id);
  ASSERT_OK(c.abort_job(started.id));
  ASSERT_OK_AND_ASSIGN(const wire::JobEntry aborted, c.job(started.id));
  EXPECT_EQ(aborted.state, "aborted") << aborted.detail;
  EXPECT_NE(aborted.detail.find("removed"), std::string::npos) << aborted.detail;
  ASSERT_OK_AND_ASSIGN(const auto after_abort, c.list_all(kOut));
  EXPECT_TRUE(after_abort.empty()) << after_abort.size() << " output shards left after the abort";

  // A target killed mid-creation: the job fails, says why, and removes what it made
  // (the killed target's shards once it is back).
  ASSERT_OK_AND_ASSIGN(const wire::JobEntry second, c.start_job(spec));
  wait_for_creation(second.id);
  ASSERT_OK(cluster_->kill("t2"));
  ASSERT_OK_AND_ASSIGN(const wire::JobEntry failed, c.wait_job(second.id, kJobTimeout));
  EXPECT_EQ(failed.state, "failed") << failed.detail;
  ASSERT_OK(cluster_->restart("t2"));
  std::vector<client::ObjectEntry> left;
  for (int i = 0; i < 600; ++i) {
    auto listed = c.list_all(kOut);
    if (listed && listed->empty()) break;
    if (listed) left = *listed;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_OK_AND_ASSIGN(const auto after_kill, c.list_all(kOut));
  EXPECT_TRUE(after_kill.empty()) << after_kill.size() << " output shards left after the failure: "
                                  << (after_kill.empty() ? "" : after_kill.front().name);

  // A rebalance starting mid-job (a target put in maintenance) fails it the same way.
  ASSERT_OK_AND_ASSIGN(const wire::JobEntry third, c.start_job(spec));
  wait_for_creation(third.id);
  ASSERT_OK(c.set_maintenance("t3", true).status());
  ASSERT_OK_AND_ASSIGN(const wire::JobEntry preempted, c.wait_job(third.id, kJobTimeout));
  EXPECT_EQ(preempted.state, "failed") << preempted.detail;
  EXPECT_NE(preempted.detail.find("targets changed"), std::string::npos) << preempted.detail;
  for (int i = 0; i < 600; ++i) {
    auto listed = c.list_all(kOut);
    if (listed && listed->empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_OK_AND_ASSIGN(const auto after_rebalance, c.list_all(kOut));
  EXPECT_TRUE(after_rebalance.empty()) << after_rebalance.size() << " output shards left after the rebalance: "
                                       << (after_rebalance.empty() ? "" : after_rebalance.front().name);
}

TEST_F(DsortTest, BadSpecsAndMissingSamplesAreRefusedClearly) {
  client::Client& c = cluster_->client();
  const auto refused = [&c](const std::string& spec, std::string_view words) {
    auto job = c.start_job(spec);
    ASSERT_FALSE(job.has_value()) << spec;
    EXPECT_NE(job.status().message().find(words), std::string::npos) << job.status();
  };
  refused(R"({"kind": "dsort", "input": {"bucket": "dsort-in"}})", "output");
  refused(R"({"kind": "dsort", "input": {"bucket": "nope"}, "output": {"bucket": "dsort-out", "template": "a{0..1}",
             "shard_size": 10}})", "nope");
  refused(R"({"kind": "dsort", "input": {"bucket": "dsort-in", "prefix": "x"}, "output": {"bucket": "dsort-in",
             "template": "x{0..1}", "shard_size": 10}})", "could be read as input");
  // A sample without the member the order reads: the job fails naming it.
  Members members = {{"a.jpg", "x"}, {"a.cls", "1"}, {"b.jpg", "y"}};
  ASSERT_OK(c.put(kIn, "in-000.tar", tar_of(members)).status());
  const wire::JobEntry job = run_job(
      c,
      R"({"kind": "dsort", "input": {"bucket": "dsort-in", "prefix": "in-"}, "output": {"bucket": "dsort-out",
          "template": "o-{0..9}.tar", "shard_size": 100000}, "order": {"by": "content", "member": "cls"}})",
      "failed");
  EXPECT_NE(job.detail.find("sample b has no member .cls"), std::string::npos) << job.detail;
  // Duplicate keys fail the job when asked to.
  ASSERT_OK(c.put(kIn, "in-001.tar", tar_of({{"a.jpg", "z"}, {"a.cls", "2"}})).status());
  const wire::JobEntry duplicate = run_job(
      c,
      R"({"kind": "dsort", "input": {"bucket": "dsort-in", "prefix": "in-"}, "output": {"bucket": "dsort-out",
          "template": "o-{0..9}.tar", "shard_size": 100000}, "order": {"by": "key"}, "on_duplicate": "fail"})",
      "failed");
  EXPECT_NE(duplicate.detail.find("sample key a is in in-000.tar and in in-001.tar"), std::string::npos)
      << duplicate.detail;
  ASSERT_OK_AND_ASSIGN(const auto nothing, c.list_all(kOut));
  EXPECT_TRUE(nothing.empty());
}

}  // namespace
}  // namespace silo::integration
