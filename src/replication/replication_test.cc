// Replication against real stores and in-process peers (testing/test_targets.h): the copy
// wire's two ends, the newer-wins rule as receivers apply it, reads checked against their
// XXH3, and copies pulled back from the target with the newest one.
#include "replication/replication.h"

#include <fmt/format.h>

#include "store/block_sums.h"
#include <gtest/gtest.h>

#include "replication/testing/test_targets.h"
#include "testing/status_matchers.h"

namespace silo::replication {
namespace {

using testing::test_bucket;
using testing::TestTargets;

constexpr uint64_t kTwo = 1;   // two copies
constexpr uint64_t kOne = 2;   // one copy
constexpr uint64_t kThree = 3; // three copies

std::vector<wire::Bucket> buckets() {
  return {test_bucket("two", kTwo, 2), test_bucket("one", kOne, 1), test_bucket("three", kThree, 3)};
}

std::string url(const ObjectRef& object, std::string_view query = "") {
  return internal_object_target(object) + std::string(query);
}

TEST(ReplicationTest, AHolderServesItsCopyWithItsRecordWholeOrInPart) {
  TestTargets targets(1, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kOne), "dir/a b"};
  ASSERT_OK(targets.put(t1, object, "hello world"));
  const auto record = targets.record_at(t1, object);
  ASSERT_TRUE(record.has_value());

  auto whole = targets.call(t1, http::Method::kGet, url(object));
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(whole.body, copy_prefix(*record) + "hello world");

  auto meta = targets.call(t1, http::Method::kGet, url(object, "?meta=1"));
  ASSERT_EQ(meta.status, 200);
  auto decoded = wire::decode<wire::ObjectRecord>(meta.body, wire::Source::kNetwork);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->name(), "dir/a b");
  EXPECT_EQ(decoded->size(), 11u);
  EXPECT_EQ(decoded->xxh3(), TestTargets::xxh3_of("hello world"));

  auto part = targets.call(t1, http::Method::kGet, url(object, "?offset=6&length=5"));
  EXPECT_EQ(part.status, 200);
  EXPECT_EQ(part.body, copy_prefix(*record) + "world") << "the record, then only those bytes";
  auto past_end = targets.call(t1, http::Method::kGet, url(object, "?offset=8&length=100"));
  EXPECT_EQ(past_end.body, copy_prefix(*record) + "rld") << "clamped to the file";

  EXPECT_EQ(targets.call(t1, http::Method::kGet, url({BucketId(kOne), "nope"})).status, 404);
  EXPECT_EQ(targets.call(t1, http::Method::kGet, "/v1/internal/objects/x/name").status, 400);
}

TEST(ReplicationTest, AReceiverKeepsTheNewerVersionWhateverOrderCopiesArriveIn) {
  TestTargets targets(2, buckets());
  auto& t1 = targets[0];
  auto& t2 = targets[1];
  const ObjectRef object{BucketId(kTwo), "o"};
  ASSERT_OK(targets.put(t2, object, "old", /*mtime=*/1000));
  ASSERT_OK(targets.put(t1, object, "newer", /*mtime=*/2000));
  {
    auto newer = targets.run(t1.store->open(object));
    ASSERT_OK(newer);
    auto placed = targets.run(t1.replication->push_copy(t2.endpoint(), object, *newer));
    ASSERT_OK(placed);
    EXPECT_TRUE(placed->is_kept);
    EXPECT_FALSE(placed->replaced_same_version);
    EXPECT_EQ(targets.bytes_at(t2, object), "newer");
    EXPECT_EQ(targets.record_at(t2, object)->mtime_unix_nanos(), 2000) << "a copy keeps its version's time";
    // The same version again: kept as it is.
    placed = targets.run(t1.replication->push_copy(t2.endpoint(), object, *newer));
    ASSERT_OK(placed);
    EXPECT_FALSE(placed->is_kept);
  }
  ASSERT_OK(targets.put(t1, object, "oldest", /*mtime=*/500));
  auto oldest = targets.run(t1.store->open(object));
  ASSERT_OK(oldest);
  auto placed = targets.run(t1.replication->push_copy(t2.endpoint(), object, *oldest));
  ASSERT_OK(placed);
  EXPECT_FALSE(placed->is_kept) << "kept: existing";
  EXPECT_EQ(targets.bytes_at(t2, object), "newer");
}

TEST(ReplicationTest, ACopyLandsOnlyOnAHolderOfAKnownBucket) {
  TestTargets targets(2, buckets());
  auto& t1 = targets[0];
  auto& t2 = targets[1];
  // One copy, on t1: t2 does not hold it under its map.
  const ObjectRef object{BucketId(kOne), targets.name_held_by(BucketId(kOne), {"t1"})};
  ASSERT_OK(targets.put(t1, object, "bytes"));
  const std::string copy = copy_prefix(*targets.record_at(t1, object)) + "bytes";
  auto refused = targets.call(t2, http::Method::kPut, url(object), copy);
  EXPECT_EQ(refused.status, 412) << refused.body;
  EXPECT_FALSE(targets.bytes_at(t2, object).has_value());

  const ObjectRef unknown{BucketId(99), object.name};
  auto no_bucket = targets.call(t2, http::Method::kPut, url(unknown), copy);
  EXPECT_EQ(no_bucket.status, 404) << no_bucket.body;

  const ObjectRef renamed{BucketId(kTwo), "other"};
  auto mismatch = targets.call(t2, http::Method::kPut, url(renamed), copy);
  EXPECT_EQ(mismatch.status, 400) << "the record names another object";
  EXPECT_FALSE(targets.bytes_at(t2, renamed).has_value());

  auto short_body = targets.call(t2, http::Method::kPut, url({BucketId(kTwo), "o"}), std::string(2, '\0'));
  EXPECT_EQ(short_body.status, 400);
}

TEST(ReplicationTest, ADeleteOfOneVersionLeavesAnyOtherVersion) {
  TestTargets targets(1, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kOne), "o"};
  ASSERT_OK(targets.put(t1, object, "v", /*mtime=*/1000));
  const uint64_t xxh3 = TestTargets::xxh3_of("v");
  auto other = targets.call(t1, http::Method::kDelete, url(object, fmt::format("?mtime=999&xxh3={}", xxh3)));
  EXPECT_EQ(other.status, 412) << "another version here (docs/wire-format.md)";
  EXPECT_EQ(targets.bytes_at(t1, object), "v");
  auto other_bytes = targets.call(t1, http::Method::kDelete, url(object, "?mtime=1000&xxh3=1"));
  EXPECT_EQ(other_bytes.status, 412);
  EXPECT_EQ(targets.bytes_at(t1, object), "v");

  auto same = targets.call(t1, http::Method::kDelete, url(object, fmt::format("?mtime=1000&xxh3={}", xxh3)));
  EXPECT_EQ(same.status, 204);
  EXPECT_FALSE(targets.record_at(t1, object).has_value());
  EXPECT_EQ(targets.call(t1, http::Method::kDelete, url(object)).status, 404);
}

TEST(ReplicationTest, TakingBackACopyIsDoneWhenThatVersionIsNoLongerThere) {
  // A rebalance walk takes back a copy it sent of an object deleted meanwhile; a newer
  // write on the receiver since then must stay, and the undo is then done (else the walk
  // would retry it forever and never finish).
  TestTargets targets(2, buckets());
  auto& t1 = targets[0];
  auto& t2 = targets[1];
  const ObjectRef object{BucketId(kTwo), "o"};
  ASSERT_OK(targets.put(t2, object, "sent", /*mtime=*/1000));
  const uint64_t sent_xxh3 = TestTargets::xxh3_of("sent");
  ASSERT_OK(targets.put(t2, object, "written since", /*mtime=*/2000));
  EXPECT_OK(targets.run(t1.replication->send_undo(t2.endpoint(), object, 1000, sent_xxh3)));
  EXPECT_EQ(targets.bytes_at(t2, object), "written since");

  ASSERT_OK(targets.put(t2, object, "sent", /*mtime=*/1000));
  EXPECT_OK(targets.run(t1.replication->send_undo(t2.endpoint(), object, 1000, sent_xxh3)));
  EXPECT_FALSE(targets.record_at(t2, object).has_value()) << "that very version: taken back";
  EXPECT_OK(targets.run(t1.replication->send_undo(t2.endpoint(), object, 1000, sent_xxh3)));  // gone already
}

TEST(ReplicationTest, ACorruptCopyFailsItsReadIsCountedAndNeverLeaves) {
  TestTargets targets(1, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kOne), "o"};
  ASSERT_OK(targets.put(t1, object, std::string(10000, 'x')));
  {
    auto good = targets.run(t1.store->open(object));
    ASSERT_OK(good);
    EXPECT_OK(targets.run(t1.replication->verify_read(*good)));
    EXPECT_FALSE(targets.run(t1.replication->broken_copy(object)).has_value());
  }
  targets.corrupt(t1, object);
  auto opened = targets.run(t1.store->open(object));
  ASSERT_OK(opened);
  const Status read = targets.run(t1.replication->verify_read(*opened));
  EXPECT_EQ(read.code(), Code::kDataLoss) << read;
  EXPECT_EQ(t1.counter("silo_target_corrupt_copies_total"), 1u);
  const auto broken = targets.run(t1.replication->broken_copy(object));
  ASSERT_TRUE(broken.has_value());
  EXPECT_TRUE(broken->is_corrupt);
  EXPECT_EQ(broken->generation, opened->record().generation());

  auto served = targets.call(t1, http::Method::kGet, url(object));
  EXPECT_EQ(served.status, 500);
  EXPECT_EQ(served.body.find("xxxx"), std::string::npos) << "no byte of it is sent";
  EXPECT_EQ(t1.counter("silo_target_corrupt_copies_total"), 2u);

}

// A bucket made when verify_reads could be turned off (skip_read_verify in its props) is
// verified all the same: no setting sends bytes that fail their checksum (issue #23).
TEST(ReplicationTest, ABucketThatOnceSkippedVerificationIsVerifiedAllTheSame) {
  std::vector<wire::Bucket> legacy = buckets();
  for (auto& b : legacy) b.mutable_props()->set_skip_read_verify(true);
  TestTargets targets(1, legacy);
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kOne), "o"};
  ASSERT_OK(targets.put(t1, object, std::string(10000, 'x')));
  targets.corrupt(t1, object);
  auto served = targets.call(t1, http::Method::kGet, url(object));
  EXPECT_EQ(served.status, 500);
  EXPECT_EQ(served.body.find("xxxx"), std::string::npos) << "no byte of it is sent";
}

TEST(ReplicationTest, ARangeIsCheckedOnlyInTheBlocksItTouchesAndACorruptBlockNeverLeaves) {
  TestTargets targets(1, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kOne), "big"};
  constexpr uint64_t kBlock = store::kBlockSize;
  std::string bytes(4 * kBlock + 10, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + (i * 7 + i / kBlock) % 26);
  ASSERT_OK(targets.put(t1, object, bytes));
  const auto record = targets.record_at(t1, object);
  ASSERT_TRUE(record.has_value());
  ASSERT_EQ(record->block_xxh3_size(), 5);
  targets.corrupt(t1, object, 2 * kBlock + 100);  // block 2
  const std::string prefix = copy_prefix(*record);

  // Ranges away from block 2 are served, their blocks checked.
  auto head = targets.call(t1, http::Method::kGet, url(object, fmt::format("?offset=10&length={}", 2 * kBlock - 10)));
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, prefix + bytes.substr(10, 2 * kBlock - 10));
  auto tail = targets.call(t1, http::Method::kGet, url(object, fmt::format("?offset={}", 3 * kBlock + 1)));
  EXPECT_EQ(tail.status, 200);
  EXPECT_EQ(tail.body, prefix + bytes.substr(3 * kBlock + 1));
  EXPECT_EQ(t1.counter("silo_target_corrupt_copies_total"), 0u);

  // A range that starts in it: refused before anything is sent.
  auto bad = targets.call(t1, http::Method::kGet, url(object, fmt::format("?offset={}&length=10", 2 * kBlock + 50)));
  EXPECT_EQ(bad.status, 500);
  EXPECT_NE(bad.body.find("block 2"), std::string::npos) << bad.body;
  EXPECT_EQ(t1.counter("silo_target_corrupt_copies_total"), 1u);

  // The whole copy: blocks 0 and 1 go, then the response ends short (no reader takes it
  // for complete) and block 2 never leaves.
  http::ClientRequest whole;
  whole.target = url(object);
  auto cut = targets.run(t1.client->call(t1.endpoint(), std::move(whole), "", 64 * kBlock));
  EXPECT_FALSE(cut.has_value() && cut->status == 200 && cut->body.size() == prefix.size() + bytes.size())
      << "a copy with a corrupt block was sent whole";
  if (cut) {
    EXPECT_LE(cut->body.size(), prefix.size() + 2 * kBlock) << "bytes past block 1 were sent";
  }
  EXPECT_EQ(t1.counter("silo_target_corrupt_copies_total"), 2u);
}

TEST(ReplicationTest, AFileThatIsGoneIsABrokenCopyButNotACorruptOne) {
  TestTargets targets(1, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kOne), "o"};
  ASSERT_OK(targets.put(t1, object, "bytes"));
  const uint64_t generation = targets.record_at(t1, object)->generation();
  targets.lose_file(t1, object);
  const auto broken = targets.run(t1.replication->broken_copy(object));
  ASSERT_TRUE(broken.has_value());
  EXPECT_FALSE(broken->is_corrupt);
  EXPECT_EQ(broken->generation, generation);
  EXPECT_FALSE(targets.run(t1.replication->broken_copy({BucketId(kOne), "never"})).has_value());
}

TEST(ReplicationTest, EnsureCopySendsOnlyWhatTheHolderLacks) {
  TestTargets targets(2, buckets());
  auto& t1 = targets[0];
  auto& t2 = targets[1];
  const ObjectRef object{BucketId(kTwo), "o"};
  ASSERT_OK(targets.put(t1, object, "v2", /*mtime=*/2000));
  auto opened = targets.run(t1.store->open(object));
  ASSERT_OK(opened);
  auto sent = targets.run(t1.replication->ensure_copy(t2.info, object, *opened));
  ASSERT_OK(sent);
  EXPECT_TRUE(*sent);
  EXPECT_EQ(targets.bytes_at(t2, object), "v2");
  sent = targets.run(t1.replication->ensure_copy(t2.info, object, *opened));
  ASSERT_OK(sent);
  EXPECT_FALSE(*sent) << "it has this version";

  ASSERT_OK(targets.put(t2, object, "v3", /*mtime=*/3000));
  sent = targets.run(t1.replication->ensure_copy(t2.info, object, *opened));
  ASSERT_OK(sent);
  EXPECT_FALSE(*sent) << "it has a newer one";
  EXPECT_EQ(targets.bytes_at(t2, object), "v3");

  targets.set_state("t2", wire::NODE_STATE_DOWN);
  const Result<bool> down = targets.run(t1.replication->ensure_copy(*t1.maps->find_node("t2"), object, *opened));
  EXPECT_CODE(down, Code::kUnavailable);
}

TEST(ReplicationTest, TheOwnersCopiesReachEveryOtherHolderOnceAndASyncWriteNeedsThemUp) {
  TestTargets targets(3, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kThree), "o"};
  ASSERT_OK(targets.put(t1, object, "bytes"));
  const std::vector<wire::NodeInfo> others = {targets[1].info, targets[2].info};
  EXPECT_OK(targets.run(t1.replication->push_copies(object, others)));
  EXPECT_EQ(targets.bytes_at(targets[1], object), "bytes");
  EXPECT_EQ(targets.bytes_at(targets[2], object), "bytes");
  EXPECT_EQ(t1.counter("silo_target_copies_made_total"), 2u);
  EXPECT_OK(targets.run(t1.replication->push_copies(object, others)));
  EXPECT_EQ(t1.counter("silo_target_copies_made_total"), 2u) << "they have it: nothing new made";
  EXPECT_OK(targets.run(t1.replication->push_copies({BucketId(kThree), "deleted since"}, others)));

  wire::Bucket sync = test_bucket("three", kThree, 3);
  std::vector<wire::NodeInfo> holders = {t1.info, targets[1].info, targets[2].info};
  EXPECT_OK(Replication::check_holders_up(sync, holders, "o"));
  holders[2].set_state(wire::NODE_STATE_DOWN);
  EXPECT_CODE(Replication::check_holders_up(sync, holders, "o"), Code::kUnavailable);
  wire::Bucket async = sync;
  async.mutable_props()->set_write_mode(wire::WRITE_MODE_ASYNC);
  EXPECT_OK(Replication::check_holders_up(async, holders, "o"));
}

TEST(ReplicationTest, ANewRecordOfTheSameVersionReachesTheHoldersThatHaveIt) {
  TestTargets targets(2, buckets());
  auto& t1 = targets[0];
  auto& t2 = targets[1];
  const ObjectRef object{BucketId(kTwo), "o"};
  ASSERT_OK(targets.put(t1, object, "bytes", /*mtime=*/1000));
  ASSERT_OK(targets.put(t2, object, "bytes", /*mtime=*/1000));
  wire::ObjectRecord tagged = *targets.record_at(t1, object);
  (*tagged.mutable_tags())["colour"] = "blue";
  EXPECT_OK(targets.run(t1.replication->replicate_record(object, {t1.info, t2.info}, tagged)));
  EXPECT_EQ(targets.record_at(t2, object)->tags().at("colour"), "blue");
  EXPECT_EQ(targets.bytes_at(t2, object), "bytes");
}

TEST(ReplicationTest, TheNewestHolderIsTheNewestOfEveryTargetAndAPullBringsIt) {
  TestTargets targets(3, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kThree), "o"};
  ASSERT_OK(targets.put(targets[1], object, "v1", /*mtime=*/1000));
  ASSERT_OK(targets.put(targets[2], object, "v2", /*mtime=*/2000));
  auto newest = targets.run(t1.replication->newest_holder(object));
  ASSERT_OK(newest);
  ASSERT_TRUE(newest->has_value());
  EXPECT_EQ((*newest)->node.id(), "t3");
  EXPECT_EQ((*newest)->record.mtime_unix_nanos(), 2000);

  EXPECT_OK(targets.run(t1.replication->pull_copy(object, std::nullopt)));
  EXPECT_EQ(targets.bytes_at(t1, object), "v2");
  EXPECT_EQ(t1.counter("silo_target_copies_made_total"), 1u);
}

TEST(ReplicationTest, NoNewestHolderIsSureWhileATargetThatMayHaveItIsDown) {
  TestTargets targets(3, buckets());
  auto& t1 = targets[0];
  const ObjectRef object{BucketId(kThree), "o"};
  auto none = targets.run(t1.replication->newest_holder(object));
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  EXPECT_OK(targets.run(t1.replication->pull_copy(object, std::nullopt)));  // nowhere: nothing to pull
  EXPECT_FALSE(targets.bytes_at(t1, object).has_value());

  targets.set_state("t3", wire::NODE_STATE_DOWN);
  EXPECT_CODE(targets.run(t1.replication->newest_holder(object)), Code::kUnavailable);
  ASSERT_OK(targets.put(targets[1], object, "v1", /*mtime=*/1000));
  auto found = targets.run(t1.replication->newest_holder(object));
  ASSERT_OK(found);
  ASSERT_TRUE(found->has_value()) << "one that has it answered";
  EXPECT_EQ((*found)->node.id(), "t2");
}

}  // namespace
}  // namespace silo::replication
