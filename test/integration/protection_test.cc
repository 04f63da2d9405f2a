// Data protection against real processes (docs/data-protection.md): buckets with several
// copies survive a killed target and get the copies back when it is replaced; corrupt
// copies are never served and are repaired; the copy count of a filled bucket changes
// while a reader runs. Every test checks every byte of every object.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "archive/tar_writer.h"
#include "objects_util.h"
#include "placement/hrw.h"
#include "shards_util.h"

namespace silo::integration {
namespace {

ClusterOptions options(int targets) {
  return {.proxies = 1,
          .targets = targets,
          .mountpaths = 2,
          .env = {{"SILO_DURABILITY", "page_cache"}, {"SILO_KEEPALIVE_TIMEOUT_MS", "2000"}}};
}

// 1 proxy + `targets` targets; bucket kBucket with `props` holds `count` objects.
Result<std::unique_ptr<LocalCluster>> start_filled(int targets, std::string props, int count, Objects& objects) {
  ASSIGN_OR_RETURN(auto cluster, LocalCluster::start(options(targets)));
  RETURN_IF_ERROR(cluster->client().create_bucket(kBucket, std::move(props)));
  objects = put_objects(*cluster, count);
  return cluster;
}

// 3 targets, a coded bucket with `props`, and `count` objects PREFIX-NN of 4 KiB to
// `max_bytes` random bytes.
Result<std::unique_ptr<LocalCluster>> start_coded(std::string props, std::string_view prefix, int count,
                                                  uint64_t max_bytes, Objects& objects) {
  ASSIGN_OR_RETURN(auto cluster, LocalCluster::start(options(3)));
  RETURN_IF_ERROR(cluster->client().create_bucket(kBucket, std::move(props)));
  silo::testing::Random random;
  for (int i = 0; i < count; ++i) objects[fmt::format("{}-{:02}", prefix, i)] = random.bytes(random.uniform(4096, max_bytes));
  for (const auto& [name, bytes] : objects) RETURN_IF_ERROR(cluster->client().put(kBucket, name, bytes).status());
  return cluster;
}

// Every object read twice in a row (the proxy turns to the other copy for the second).
void read_each_twice(client::Client& c, const Objects& objects) {
  for (const auto& [name, bytes] : objects) {
    for (int i = 0; i < 2; ++i) {
      auto got = c.get(kBucket, name);
      ASSERT_TRUE(got.has_value()) << name << ": " << got.status();
      ASSERT_EQ(difference(bytes, *got), "") << name;
    }
  }
}

TEST(ProtectionTest, TwoCopiesSurviveAKilledTargetAndComeBackWhenItIsReplaced) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 300, objects));
  client::Client& c = cluster->client();
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), 2 * objects.size()) << "two copies of each object";
  ASSERT_OK_AND_ASSIGN(const auto props, c.bucket_props(kBucket));
  EXPECT_EQ(props.copies, 2u);

  // Killed: reads go to the other copy, before and after the node is marked down.
  ASSERT_OK(cluster->kill("t2"));
  expect_all_readable(c, objects);
  ASSERT_OK(cluster->wait_for_node_state("t2", "down", seconds(20)));
  expect_all_readable(c, objects);
  expect_listing_complete(c, objects, "with a target down");
  // A sync write whose copies include the down target is refused, never acknowledged short.
  size_t refused = 0;
  for (int i = 0; i < 20; ++i) {
    auto put = c.put(kBucket, fmt::format("while-down-{}", i), "x");
    if (!put) ++refused;
  }
  EXPECT_GT(refused, 0u) << "no write needed the down target";

  ASSERT_OK(cluster->restart("t2"));
  expect_all_readable(c, objects);
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), 2 * (objects.size()) + 2 * (20 - refused));

  // Lost for good: forgotten and replaced by a new target, the copies are made again.
  ASSERT_OK(cluster->kill("t3"));
  ASSERT_OK(cluster->wait_for_node_state("t3", "down", seconds(20)));
  ASSERT_OK(c.remove_node("t3").status());
  ASSERT_OK_AND_ASSIGN(const std::string added, cluster->add_node("target"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  wait_rebalance(c, map.rebalance_job());
  expect_all_readable(c, objects);
  EXPECT_EQ(files_on(*cluster, {"t1", "t2", added}), 2 * (objects.size() + 20 - refused))
      << "each object has its two copies on the targets now in the cluster";
  EXPECT_GT(files_on(*cluster, {added}), objects.size() / 4) << "the new target holds its share";
}

// Whether `metric` summed over the targets reaches `value` within `timeout`.
bool wait_for_sum(const LocalCluster& cluster, std::string_view metric, uint64_t value, std::chrono::seconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (sum_over_targets(cluster, metric) < value) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Reads each object twice in a row, as read_each_twice(), but a read may fail once the
// copy it reads is found corrupt after its first block went out (the answer is cut: a
// client cannot take it for complete): it is read again until the copy was repaired.
// The repair behind a cut read runs in the background: the reads wait for it, as they
// would otherwise find the same copy corrupt again (a busy machine is slow to repair).
// Returns how many reads were cut.
size_t read_each_twice_again_when_cut(const LocalCluster& cluster, client::Client& c, const Objects& objects) {
  size_t cut = 0;
  for (const auto& [name, bytes] : objects) {
    for (int i = 0; i < 2; ++i) {
      auto got = c.get(kBucket, name);
      const auto give_up = std::chrono::steady_clock::now() + seconds(20);
      if (!got) {
        ++cut;
        const uint64_t found = sum_over_targets(cluster, "silo_target_corrupt_copies_total");
        EXPECT_TRUE(wait_for_sum(cluster, "silo_target_corrupt_copies_repaired_total", found, seconds(20))) << name;
      }
      while (!got && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        got = c.get(kBucket, name);
      }
      EXPECT_TRUE(got.has_value()) << name << ": " << got.status();
      if (got) {
        EXPECT_EQ(difference(bytes, *got), "") << name;
      }
    }
  }
  return cut;
}

TEST(ProtectionTest, CorruptCopiesAreNeverServedAndAreRepaired) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 200, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  const size_t corrupted = corrupt_files(t1);
  ASSERT_GT(corrupted, objects.size() / 4);

  // Reads alternate between the two copies: reading each object twice in a row reads
  // every copy. A byte flipped past an object's first block (1 MiB) is found only once
  // that block went out: that read is cut and the copy repaired behind it.
  size_t large = 0;
  for (const auto& [name, bytes] : objects) large += bytes.size() / 2 >= (1u << 20) ? 1 : 0;
  const size_t cut = read_each_twice_again_when_cut(*cluster, c, objects);
  EXPECT_LE(cut, large) << "only reads of a corrupt block past the first are cut";
  const uint64_t found = sum_over_targets(*cluster, "silo_target_corrupt_copies_total");
  EXPECT_EQ(found, corrupted) << "every corrupt copy was found by a read";
  EXPECT_TRUE(wait_for_sum(*cluster, "silo_target_corrupt_copies_repaired_total", found, seconds(20)));
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_repaired_total"), found);
  // Repaired for good: reading every copy again finds nothing new.
  read_each_twice(c, objects);
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), found);

  // With one copy there is nothing to repair from: the read fails, the bad bytes never go out.
  ASSERT_OK(c.create_bucket("single"));
  ASSERT_OK_AND_ASSIGN(const auto single, c.bucket_props("single"));
  ASSERT_OK(c.put("single", "only", std::string(100000, 'a')));
  size_t changed = 0;
  for (const auto& id : cluster->target_ids()) {
    if (auto node = cluster->node(id)) changed += corrupt_files(*node, single.id);
  }
  ASSERT_EQ(changed, 1u);
  auto got = c.get("single", "only");
  ASSERT_FALSE(got) << "a corrupt object was served";
  EXPECT_NE(got.error().to_string().find("checksum"), std::string::npos) << got.error();
}

// The object files of bucket `bucket_id` on every target whose size is `size`.
std::vector<std::string> files_of_size(const LocalCluster& cluster, uint64_t bucket_id, uint64_t size) {
  std::vector<std::string> out;
  for (const auto& id : cluster.target_ids()) {
    auto node = cluster.node(id);
    if (!node) continue;
    for (const auto& mp : node->mountpaths) {
      for (const auto& path : object_files(mp)) {
        struct stat st {};
        if (path.find(fmt::format("/obj/{}/", bucket_id)) != std::string::npos && ::stat(path.c_str(), &st) == 0 &&
            static_cast<uint64_t>(st.st_size) == size) {
          out.push_back(path);
        }
      }
    }
  }
  return out;
}

// Flips the byte at `offset` of the file at `path`.
void flip_byte(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(offset)), 1);
  c = static_cast<char>(c ^ 0x5a);
  ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(offset)), 1);
  ::close(fd);
}

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(ProtectionTest, ReadsCheckOnlyTheBlocksTheyTouch) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start(options(3)));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("plain"));
  ASSERT_OK(c.create_bucket("two", R"({"copies": 2})"));
  ASSERT_OK_AND_ASSIGN(const auto plain, c.bucket_props("plain"));
  ASSERT_OK_AND_ASSIGN(const auto two, c.bucket_props("two"));
  silo::testing::Random random;
  const std::string bytes = random.bytes(5 * kMiB + 123);
  ASSERT_OK(c.put("plain", "big", bytes));
  ASSERT_OK(c.put("two", "big", bytes));
  // While the joining targets' rebalance runs a read also looks for copies elsewhere:
  // the counts below are those of a settled cluster.
  ASSERT_OK_AND_ASSIGN(const client::NodeMap map, c.node_map());
  if (!map.rebalance_job().empty()) wait_rebalance(c, map.rebalance_job());
  // Block 2 of the plain object and of one copy of the other.
  const uint64_t bad = 2 * kMiB + 100;
  const std::vector<std::string> plain_files = files_of_size(*cluster, plain.id, bytes.size());
  const std::vector<std::string> copies = files_of_size(*cluster, two.id, bytes.size());
  ASSERT_EQ(plain_files.size(), 1u);
  ASSERT_EQ(copies.size(), 2u);
  flip_byte(plain_files[0], bad);
  flip_byte(copies[0], bad);
  const auto range = [&](const char* bucket, uint64_t first, uint64_t last) {
    return c.get(bucket, "big", client::ByteRange::first_last(first, last));
  };

  // Ranges away from block 2 are served from either copy, and nothing is found corrupt.
  for (const char* bucket : {"plain", "two", "two"}) {
    auto head = range(bucket, 0, 2 * kMiB - 1);
    ASSERT_TRUE(head.has_value()) << bucket << ": " << head.status();
    EXPECT_EQ(*head, bytes.substr(0, 2 * kMiB)) << bucket;
    auto tail = range(bucket, 3 * kMiB + 5, bytes.size() - 1);
    ASSERT_TRUE(tail.has_value()) << bucket << ": " << tail.status();
    EXPECT_EQ(*tail, bytes.substr(3 * kMiB + 5)) << bucket;
  }
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), 0u);

  // A range in block 2 of the lone copy fails cleanly, before any byte; a whole GET is cut
  // after the good blocks went out. Neither is taken for complete.
  auto refused = range("plain", bad - 50, bad + 50);
  ASSERT_FALSE(refused.has_value()) << "a corrupt block was served";
  EXPECT_NE(refused.error().to_string().find("checksum"), std::string::npos) << refused.error();
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), 1u);
  auto whole = c.get("plain", "big");
  EXPECT_FALSE(whole.has_value() && *whole == bytes) << "a corrupt object was served whole";
  EXPECT_FALSE(whole.has_value()) << "a cut answer was taken for complete";
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), 2u);

  // With two copies a range in block 2 is served from the good one (the bad one repaired).
  for (int i = 0; i < 2; ++i) {
    auto served = range("two", bad - 50, bad + 50);
    ASSERT_TRUE(served.has_value()) << served.status();
    EXPECT_EQ(*served, bytes.substr(bad - 50, 101));
  }
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), 3u);
  EXPECT_TRUE(wait_for_sum(*cluster, "silo_target_corrupt_copies_repaired_total", 1, seconds(20)));
  for (int i = 0; i < 2; ++i) {
    auto again = c.get("two", "big");
    ASSERT_TRUE(again.has_value()) << again.status();
    EXPECT_EQ(difference(bytes, *again), "");
  }

  // A tar shard: a (2 MiB, blocks 0-2), b (20 KiB, block 2), c (2 MiB, blocks 2-4), the
  // corrupt byte in c's block 3. Members and selections that do not touch block 3 are
  // served; c's first block goes, then its answer is cut.
  const std::string a = random.bytes(2 * kMiB);
  const std::string b = random.bytes(20 * 1024);
  const std::string c_bytes = random.bytes(2 * kMiB);
  std::string tar;
  for (const auto& [name, member] : std::vector<std::pair<std::string, std::string>>{
           {"a.bin", a}, {"b.bin", b}, {"c.bin", c_bytes}}) {
    tar += archive::tar_header(name, member.size(), 1'760'000'000) + member + archive::tar_padding(member.size());
  }
  tar += archive::tar_end();
  ASSERT_OK(c.put("plain", "shard.tar", tar));
  const uint64_t c_offset = tar.find(c_bytes.substr(0, 4096));
  ASSERT_EQ(c_offset / kMiB, 2u);
  const uint64_t in_c = c_offset + kMiB + 7;  // block 3
  ASSERT_EQ(in_c / kMiB, 3u);
  const std::vector<std::string> shard_files = files_of_size(*cluster, plain.id, tar.size());
  ASSERT_EQ(shard_files.size(), 1u);
  flip_byte(shard_files[0], in_c);
  const uint64_t before = sum_over_targets(*cluster, "silo_target_corrupt_copies_total");
  auto member_a = c.get_archive("plain", "shard.tar", {.path = "a.bin"});
  ASSERT_TRUE(member_a.has_value()) << member_a.status();
  EXPECT_EQ(*member_a, a);
  auto member_b = c.get_archive("plain", "shard.tar", {.path = "b.bin"});
  ASSERT_TRUE(member_b.has_value()) << member_b.status();
  EXPECT_EQ(*member_b, b);
  auto start_of_c = c.get_archive("plain", "shard.tar", {.path = "c.bin"}, client::ByteRange::first_last(0, 999));
  ASSERT_TRUE(start_of_c.has_value()) << start_of_c.status();
  EXPECT_EQ(*start_of_c, c_bytes.substr(0, 1000));
  auto selection = c.get_archive("plain", "shard.tar", {.path = "^[ab]\\.bin$", .mode = "regexp"});
  ASSERT_TRUE(selection.has_value()) << selection.status();
  EXPECT_NE(selection->find(b), std::string::npos);
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), before) << "block 3 was never read";
  auto member_c = c.get_archive("plain", "shard.tar", {.path = "c.bin"});
  EXPECT_FALSE(member_c.has_value()) << "a member with a corrupt block was served";
  auto all = c.get_archive("plain", "shard.tar", {.path = ".bin", .mode = "suffix"});
  EXPECT_FALSE(all.has_value()) << "a selection with a corrupt block was served";
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), before + 2);

  // Small members are checked by their own sums (kept in the index): a corrupt one is
  // never served, by a member GET or by a batch (whose runs leave it to a GET).
  const std::string x = random.bytes(40 * 1024);
  const std::string y = random.bytes(40 * 1024);
  const std::string small = archive::tar_header("x.bin", x.size(), 0) + x + archive::tar_padding(x.size()) +
                            archive::tar_header("y.bin", y.size(), 0) + y + archive::tar_padding(y.size()) +
                            archive::tar_end();
  ASSERT_OK(c.put("plain", "small.tar", small));
  const std::vector<std::string> small_files = files_of_size(*cluster, plain.id, small.size());
  ASSERT_EQ(small_files.size(), 1u);
  flip_byte(small_files[0], small.find(y.substr(0, 4096)) + 20000);
  auto member_x = c.get_archive("plain", "small.tar", {.path = "x.bin"});
  ASSERT_TRUE(member_x.has_value()) << member_x.status();
  EXPECT_EQ(*member_x, x);
  wire::BatchRequest only_x{.entries = {{.bucket = "plain", .name = "small.tar", .archpath = "x.bin"}}};
  auto batch_x = get_batch(c, only_x);
  ASSERT_TRUE(batch_x.has_value()) << batch_x.status();
  EXPECT_EQ(members_of(*batch_x), (Members{{"plain/small.tar/x.bin", x}}));
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), before + 2);
  auto member_y = c.get_archive("plain", "small.tar", {.path = "y.bin"});
  EXPECT_FALSE(member_y.has_value()) << "a small member that fails its sum was served";
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), before + 3);
  wire::BatchRequest with_y = only_x;
  with_y.entries.push_back({.bucket = "plain", .name = "small.tar", .archpath = "y.bin"});
  auto batch_y = get_batch(c, with_y);
  EXPECT_FALSE(batch_y.has_value()) << "a batch served a member that fails its sum";
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), before + 4);
}

TEST(ProtectionTest, CopiesChangeOnAFilledBucketWhileReadsNeverFail) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, "", 500, objects));
  client::Client& c = cluster->client();
  ASSERT_EQ(files_on(*cluster, cluster->target_ids()), objects.size());
  Reader reader(*cluster, objects);

  ASSERT_OK(c.set_bucket_props(kBucket, R"({"copies": 2})"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap up, c.node_map());
  wait_rebalance(c, up.rebalance_job());
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), 2 * objects.size());

  ASSERT_OK(c.set_bucket_props(kBucket, R"({"copies": 1})"));
  ASSERT_OK_AND_ASSIGN(const client::NodeMap down, c.node_map());
  ASSERT_NE(down.rebalance_job(), up.rebalance_job());
  wait_rebalance(c, down.rebalance_job());
  reader.stop();
  EXPECT_EQ(reader.failures(), 0u) << "of " << reader.reads() << " reads; first: " << reader.first_failure();
  EXPECT_GT(reader.reads(), 50u);
  EXPECT_EQ(files_on(*cluster, cluster->target_ids()), objects.size());
  expect_all_readable(c, objects);
  expect_listing_complete(c, objects, "after the copies changed");

  // More copies than targets, or nonsense, is refused with the reason.
  const Status too_many = c.set_bucket_props(kBucket, R"({"copies": 4})");
  EXPECT_EQ(too_many.code(), Code::kInvalidArgument) << too_many;
  EXPECT_NE(too_many.to_string().find("targets"), std::string::npos) << too_many;
  EXPECT_EQ(c.set_bucket_props(kBucket, R"({"copies": 0})").code(), Code::kInvalidArgument);
  EXPECT_EQ(c.set_bucket_props(kBucket, R"({"write": "later"})").code(), Code::kInvalidArgument);
}

// Corrupt slices are repaired by a scrub and never served (issue #23 F1: with
// verify_reads false the scrub found them and repaired none, and GETs served the flipped
// bytes on). No bucket can turn read verification off any more (item 3).
TEST(ProtectionTest, AScrubRepairsCorruptSlicesAndNoBucketMayServeThemUnverified) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster,
                       start_coded(R"({"ec": {"data": 2, "parity": 1, "min_size": 1024}})", "coded", 12, 3 << 20, objects));
  client::Client& c = cluster->client();
  const Status unverified = c.set_bucket_props(kBucket, R"({"verify_reads": false})");
  EXPECT_EQ(unverified.code(), Code::kInvalidArgument) << unverified;
  EXPECT_NE(unverified.message().find("every read checks"), std::string::npos) << unverified;
  EXPECT_EQ(c.create_bucket("unverified", R"({"verify_reads": false})").code(), Code::kInvalidArgument);
  ASSERT_OK(c.set_bucket_props(kBucket, R"({"verify_reads": true})"));
  ASSERT_OK_AND_ASSIGN(const auto props, c.bucket_props(kBucket));
  ASSERT_OK_AND_ASSIGN(const NodeInfo rotten, cluster->node(cluster->target_ids()[0]));
  const size_t corrupted = corrupt_files(rotten, props.id);
  ASSERT_GT(corrupted, 0u);
  ASSERT_OK_AND_ASSIGN(const client::JobEntry started, c.start_job(R"({"kind": "scrub"})"));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry first, c.wait_job(started.id, seconds(120)));
  EXPECT_EQ(first.state, "finished") << first.detail;
  EXPECT_EQ(first.errors, 0u) << first.detail;
  EXPECT_GE(first.corrupt_found, corrupted);
  EXPECT_EQ(first.corrupt_repaired, first.corrupt_found) << "every corrupt slice found is rebuilt";
  ASSERT_OK_AND_ASSIGN(const client::JobEntry again, c.start_job(R"({"kind": "scrub"})"));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry second, c.wait_job(again.id, seconds(120)));
  EXPECT_EQ(second.corrupt_found, 0u) << "a corrupt slice was left";
  // The proxy takes turns over the three holders: each serves a read, all good bytes.
  for (const auto& [name, bytes] : objects) {
    for (int i = 0; i < 3; ++i) {
      auto got = c.get(kBucket, name);
      ASSERT_TRUE(got.has_value()) << name << ": " << got.status();
      ASSERT_EQ(difference(bytes, *got), "") << name;
    }
  }
}

// Every copy corrupt: nothing to repair from. The scrub says so (issue #23 F5: it reported
// "moved away while being read; retry"), GETs answer a data-loss error, never the bytes.
TEST(ProtectionTest, AScrubSaysSoWhenEveryCopyIsCorrupt) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 20, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const auto props, c.bucket_props(kBucket));
  size_t corrupted = 0;
  for (const auto& id : cluster->target_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo node, cluster->node(id));
    corrupted += corrupt_files(node, props.id);
  }
  ASSERT_EQ(corrupted, 2 * objects.size());
  ASSERT_OK_AND_ASSIGN(const client::JobEntry started, c.start_job(R"({"kind": "scrub"})"));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry scrub, c.wait_job(started.id, seconds(120)));
  EXPECT_EQ(scrub.corrupt_found, corrupted) << scrub.detail;
  EXPECT_EQ(scrub.corrupt_repaired, 0u) << scrub.detail;
  EXPECT_GT(scrub.errors, 0u) << scrub.detail;
  // Each target's last failure is in the job's answer.
  ASSERT_OK_AND_ASSIGN(const auto job, c.request(http::Method::kGet, "/v1/jobs/" + started.id));
  EXPECT_NE(job.body.find("corrupt or unreadable too"), std::string::npos) << job.body;
  EXPECT_EQ(job.body.find("moved away"), std::string::npos) << job.body;
  for (const auto& [name, bytes] : objects) {
    auto got = c.get(kBucket, name);
    ASSERT_FALSE(got.has_value()) << name << " served from a corrupt copy";
    // A one-block object fails before its head; a larger one may be cut after its good
    // first block went out (never a corrupt byte).
    if (bytes.size() <= (1u << 20)) {
      EXPECT_EQ(got.error().code(), Code::kDataLoss) << name << ": " << got.error();
    }
  }
}

// More slices corrupt than parity: the object is lost. Every read says so (issue #23 F5:
// 500 "try again" or 503 "changed while being read; retry"), the same each time, over the
// native API and S3 (DataLoss, naming the object), and a scrub repairs nothing.
TEST(ProtectionTest, ACodedObjectWithMoreCorruptSlicesThanParityAnswersDataLoss) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster,
                       start_coded(R"({"ec": {"data": 2, "parity": 1, "min_size": 1024}})", "lost", 6, 2 << 20, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const auto props, c.bucket_props(kBucket));
  size_t corrupted = 0;
  for (const std::string& id : {cluster->target_ids()[0], cluster->target_ids()[1]}) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo node, cluster->node(id));
    corrupted += corrupt_files(node, props.id);
  }
  ASSERT_EQ(corrupted, 2 * objects.size()) << "one slice of each object on each target";
  for (const auto& [name, bytes] : objects) {
    for (int i = 0; i < 3; ++i) {
      auto got = c.get(kBucket, name);
      ASSERT_FALSE(got.has_value()) << name << " served from corrupt slices";
      EXPECT_EQ(got.error().code(), Code::kDataLoss) << name << ": " << got.error();
    }
    ASSERT_OK_AND_ASSIGN(const auto s3, c.request(http::Method::kGet, "/" + std::string(kBucket) + "/" + name));
    EXPECT_EQ(s3.status, 500) << s3.body;
    EXPECT_NE(s3.body.find("<Code>DataLoss</Code>"), std::string::npos) << s3.body;
    EXPECT_NE(s3.body.find(name), std::string::npos) << s3.body;
  }
  ASSERT_OK_AND_ASSIGN(const client::JobEntry started, c.start_job(R"({"kind": "scrub"})"));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry scrub, c.wait_job(started.id, seconds(120)));
  EXPECT_EQ(scrub.corrupt_repaired, 0u) << scrub.detail;
  EXPECT_GT(scrub.errors, 0u) << scrub.detail;
}

TEST(ProtectionTest, ScrubRepairsCorruptCopiesAndRestoresMissingOnes) {
  Objects objects;
  ASSERT_OK_AND_ASSIGN(auto cluster, start_filled(3, R"({"copies": 2})", 200, objects));
  client::Client& c = cluster->client();
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1, cluster->node("t1"));
  const size_t corrupted = corrupt_files(t1);
  ASSERT_GT(corrupted, 0u);

  ASSERT_OK_AND_ASSIGN(const client::JobEntry started, c.start_job(R"({"kind": "scrub"})"));
  EXPECT_EQ(started.kind, "scrub");
  ASSERT_OK_AND_ASSIGN(const client::JobEntry scrub, c.wait_job(started.id, seconds(120)));
  EXPECT_EQ(scrub.state, "finished") << scrub.detail;
  EXPECT_EQ(scrub.corrupt_found, corrupted);
  EXPECT_EQ(scrub.corrupt_repaired, corrupted);
  EXPECT_EQ(scrub.errors, 0u) << scrub.detail;
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_repaired_total"), corrupted);
  read_each_twice(c, objects);
  EXPECT_EQ(sum_over_targets(*cluster, "silo_target_corrupt_copies_total"), corrupted) << "a read found one left";

  // Async writes while a holder is down are acknowledged with one copy; a scrub after it
  // returns gives it its copies.
  ASSERT_OK(c.create_bucket("later", R"({"copies": 2, "write": "async"})"));
  ASSERT_OK_AND_ASSIGN(const auto later, c.bucket_props("later"));
  EXPECT_EQ(later.write, "async");
  ASSERT_OK(cluster->kill("t2"));
  ASSERT_OK(cluster->wait_for_node_state("t2", "down", seconds(20)));
  // Objects that t2 keeps the second copy of (its owner is up and takes the write).
  const placement::HrwCandidates targets({"t1", "t2", "t3"});
  Objects written;
  for (int i = 0; written.size() < 40; ++i) {
    const std::string name = fmt::format("late-{:04}", i);
    const auto ranking = targets.ranking(ObjectRef{BucketId(later.id), name}, 2);
    if (targets.id(ranking[1]) != "t2") continue;
    written[name] = fmt::format("bytes of {} ", name) + std::string(i * 97 % 5000, 'z');
    ASSERT_OK(c.put("later", name, written[name]));
  }
  ASSERT_OK(cluster->restart("t2"));
  ASSERT_LT(bucket_files(*cluster, later.id), 2 * written.size()) << "t2 got copies while it was down?";
  ASSERT_OK_AND_ASSIGN(const client::JobEntry again, c.start_job(R"({"kind": "scrub", "bucket": "later"})"));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry restored, c.wait_job(again.id, seconds(120)));
  EXPECT_EQ(restored.state, "finished") << restored.detail;
  EXPECT_GT(restored.copies_restored, 0u);
  EXPECT_EQ(restored.corrupt_found, 0u);
  EXPECT_EQ(bucket_files(*cluster, later.id), 2 * written.size());
  expect_all_readable(c, written, "later");

  // A slow scrub can be stopped; bad requests name the problem.
  ASSERT_OK_AND_ASSIGN(const client::JobEntry slow, c.start_job(R"({"kind": "scrub", "rate_mb_s": 0.01})"));
  ASSERT_OK(c.abort_job(slow.id));
  ASSERT_OK_AND_ASSIGN(const client::JobEntry aborted, c.job(slow.id));
  EXPECT_EQ(aborted.state, "aborted");
  EXPECT_EQ(c.start_job(R"({"kind": "defrag"})").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(c.start_job(R"({"kind": "scrub", "bucket": "nope"})").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace silo::integration
