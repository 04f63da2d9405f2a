// A target's part of a scrub job against real stores and in-process peers
// (replication/testing/test_targets.h): the task interface, and what a scrub does with a
// good, a corrupt, a lost and a missing copy.
#include "scrub/scrub.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "replication/testing/test_targets.h"
#include "store/block_sums.h"
#include "testing/status_matchers.h"

namespace silo::scrub {
namespace {

using replication::testing::test_bucket;
using replication::testing::TestTarget;
using replication::testing::TestTargets;

constexpr uint64_t kTwo = 1;  // two copies
constexpr uint64_t kOne = 2;  // one copy
constexpr uint64_t kOther = 3;  // one copy, another bucket

// `count` targets, each with its Erasure and Scrub beside its Replication.
class ScrubTest : public ::testing::Test {
 protected:
  void start(int count) {
    targets_ = std::make_unique<TestTargets>(
        count, std::vector<wire::Bucket>{test_bucket("two", kTwo, 2), test_bucket("one", kOne, 1),
                                         test_bucket("other", kOther, 1)});
    for (size_t i = 0; i < targets_->size(); ++i) {
      TestTarget& t = (*targets_)[i];
      erasures_.push_back(
          std::make_unique<erasure::Erasure>(*t.peers, *t.store, t.client, *t.replication, t.stats));
      scrubs_.push_back(std::make_unique<Scrub>(*t.peers, *t.store, *t.replication, *erasures_.back()));
    }
  }
  void TearDown() override {
    for (auto& s : scrubs_) s->stop_all();
    scrubs_.clear();
    erasures_.clear();
    targets_.reset();
  }

  TestTargets& targets() { return *targets_; }
  TestTarget& target(size_t i) { return (*targets_)[i]; }
  Scrub& scrub(size_t i) { return *scrubs_.at(i); }

  // Runs scrub `id` on target `i` to its end; its progress then.
  wire::RebalanceProgress scrub_to_end(size_t i, const std::string& id, std::optional<uint64_t> bucket = std::nullopt) {
    std::optional<wire::Bucket> only;
    if (bucket) only = target(i).peers->bucket_by_id(*bucket);
    wire::JobRequest request;
    request.kind = "scrub";
    EXPECT_TRUE(scrub(i).start(targets_->io().get_executor(), id, request, only));
    return wait_finished(i, id);
  }
  wire::RebalanceProgress wait_finished(size_t i, const std::string& id) {
    EXPECT_TRUE(targets_->run_until([&] { return scrub(i).progress(id)->finished(); })) << id << " did not finish";
    return *scrub(i).progress(id);
  }

  std::unique_ptr<TestTargets> targets_;
  std::vector<std::unique_ptr<erasure::Erasure>> erasures_;
  std::vector<std::unique_ptr<Scrub>> scrubs_;
};

TEST_F(ScrubTest, ATaskStartsOnceReportsItsProgressAndStopsWhenAsked) {
  start(1);
  EXPECT_FALSE(scrub(0).progress("scrub-1").has_value());
  EXPECT_FALSE(scrub(0).stop("scrub-1"));
  for (const char* name : {"a", "b", "c"}) ASSERT_OK(targets().put(target(0), {BucketId(kOne), name}, std::string(1000, 'x')));

  // One byte a second: after its first object the task waits for ~1000 s, until stopped.
  wire::JobRequest slow;
  slow.kind = "scrub";
  slow.rate_bytes = 1;
  ASSERT_TRUE(scrub(0).start(targets().io().get_executor(), "scrub-1", slow, std::nullopt));
  EXPECT_FALSE(scrub(0).start(targets().io().get_executor(), "scrub-1", slow, std::nullopt)) << "a retried start";
  ASSERT_TRUE(targets().run_until([&] { return scrub(0).progress("scrub-1")->objects_scanned() >= 1; }));
  EXPECT_FALSE(scrub(0).progress("scrub-1")->finished()) << "held back by the rate bound";
  EXPECT_TRUE(scrub(0).stop("scrub-1"));
  const wire::RebalanceProgress stopped = wait_finished(0, "scrub-1");
  EXPECT_EQ(stopped.objects_scanned(), 1u);
  EXPECT_EQ(stopped.bytes_moved(), 1000u) << "bytes checked";
  EXPECT_GE(stopped.finished_unix_nanos(), stopped.started_unix_nanos());
  EXPECT_FALSE(scrub(0).start(targets().io().get_executor(), "scrub-1", slow, std::nullopt))
      << "a finished task keeps its id";
}

TEST_F(ScrubTest, AGoodCopyOnEveryHolderIsScannedAndLeftAlone) {
  start(2);
  std::vector<ObjectRef> objects;
  for (int i = 0; i < 5; ++i) {
    objects.push_back({BucketId(kTwo), "o" + std::to_string(i)});
    ASSERT_OK(targets().put(target(0), objects.back(), "bytes " + std::to_string(i), /*mtime=*/1000));
    ASSERT_OK(targets().put(target(1), objects.back(), "bytes " + std::to_string(i), /*mtime=*/1000));
  }
  const auto p = scrub_to_end(0, "scrub-1");
  EXPECT_EQ(p.objects_scanned(), 5u);
  EXPECT_EQ(p.corrupt_found(), 0u);
  EXPECT_EQ(p.copies_restored(), 0u);
  EXPECT_EQ(p.errors(), 0u) << p.last_error();
  for (const auto& object : objects) {
    EXPECT_EQ(targets().record_at(target(1), object)->mtime_unix_nanos(), 1000) << "not sent again";
  }
}

TEST_F(ScrubTest, AGoodCopyWhoseRecordHasWrongOrNoBlockSumsGetsTheRightOnes) {
  start(1);
  const ObjectRef object{BucketId(kOne), "o"};
  const std::string bytes(3 * store::kBlockSize + 17, 'z');
  ASSERT_OK(targets().put(target(0), object, bytes));
  const wire::ObjectRecord right = *targets().record_at(target(0), object);
  ASSERT_TRUE(store::has_block_sums(right));
  // Sums that do not describe the bytes (as a record written before them has none): a read
  // trusts them and fails; the scrub finds the whole file good and puts the right ones.
  ASSERT_OK(targets().run(target(0).store->set_block_sums(object, right.generation(), store::kBlockSize,
                                                          std::vector<uint64_t>{1, 2, 3, 4})));
  const std::string url = replication::internal_object_target(object);
  EXPECT_EQ(targets().call(target(0), http::Method::kGet, url).status, 500);
  const auto p = scrub_to_end(0, "scrub-1");
  EXPECT_EQ(p.corrupt_found(), 0u) << "the bytes are good";
  EXPECT_EQ(p.errors(), 0u) << p.last_error();
  const wire::ObjectRecord fixed = *targets().record_at(target(0), object);
  EXPECT_EQ(wire::encode(fixed), wire::encode(right)) << "the right sums, nothing else changed";
  EXPECT_EQ(targets().call(target(0), http::Method::kGet, url).status, 200);
}

TEST_F(ScrubTest, TheOnlyCopyCorruptIsReportedAndKept) {
  start(1);
  const ObjectRef bad{BucketId(kOne), "bad"};
  ASSERT_OK(targets().put(target(0), bad, std::string(5000, 'b')));
  ASSERT_OK(targets().put(target(0), {BucketId(kOne), "good"}, "good"));
  targets().corrupt(target(0), bad);
  const auto p = scrub_to_end(0, "scrub-1");
  EXPECT_EQ(p.objects_scanned(), 2u);
  EXPECT_EQ(p.corrupt_found(), 1u);
  EXPECT_EQ(p.corrupt_repaired(), 0u);
  EXPECT_EQ(p.errors(), 1u);
  EXPECT_NE(p.last_error().find("only copy"), std::string::npos) << p.last_error();
  EXPECT_TRUE(targets().record_at(target(0), bad).has_value()) << "never deleted";
  EXPECT_EQ(target(0).counter("silo_target_corrupt_copies_total"), 1u);
}

TEST_F(ScrubTest, ACorruptCopyIsReplacedByTheGoodOneOfAnotherHolder) {
  start(2);
  const ObjectRef object{BucketId(kTwo), "o"};
  const std::string bytes(5000, 'g');
  ASSERT_OK(targets().put(target(0), object, bytes, /*mtime=*/1000));
  ASSERT_OK(targets().put(target(1), object, bytes, /*mtime=*/1000));
  targets().corrupt(target(0), object);
  const auto p = scrub_to_end(0, "scrub-1");
  EXPECT_EQ(p.corrupt_found(), 1u);
  EXPECT_EQ(p.corrupt_repaired(), 1u);
  EXPECT_EQ(p.errors(), 0u) << p.last_error();
  EXPECT_EQ(targets().bytes_at(target(0), object), bytes);
  EXPECT_FALSE(targets().run(target(0).replication->broken_copy(object)).has_value());
  EXPECT_EQ(target(0).counter("silo_target_corrupt_copies_repaired_total"), 1u);
}

TEST_F(ScrubTest, ALostFileIsRestoredFromAnotherHolder) {
  start(2);
  const ObjectRef object{BucketId(kTwo), "o"};
  ASSERT_OK(targets().put(target(0), object, "bytes", /*mtime=*/1000));
  ASSERT_OK(targets().put(target(1), object, "bytes", /*mtime=*/1000));
  targets().lose_file(target(0), object);
  const auto p = scrub_to_end(0, "scrub-1");
  EXPECT_EQ(p.copies_restored(), 1u);
  EXPECT_EQ(p.errors(), 0u) << p.last_error();
  EXPECT_EQ(targets().bytes_at(target(0), object), "bytes");
}

TEST_F(ScrubTest, TheFirstHolderGivesAHolderThatLacksItItsCopy) {
  start(2);
  const ObjectRef first_t1{BucketId(kTwo), targets().name_held_by(BucketId(kTwo), {"t1", "t2"})};
  const ObjectRef first_t2{BucketId(kTwo), targets().name_held_by(BucketId(kTwo), {"t2", "t1"})};
  ASSERT_OK(targets().put(target(0), first_t1, "one"));
  ASSERT_OK(targets().put(target(0), first_t2, "two"));
  const auto p = scrub_to_end(0, "scrub-1");
  EXPECT_EQ(p.objects_scanned(), 2u);
  EXPECT_EQ(p.copies_restored(), 1u);
  EXPECT_EQ(targets().bytes_at(target(1), first_t1), "one");
  EXPECT_FALSE(targets().bytes_at(target(1), first_t2).has_value()) << "t2 comes first: its own scrub sees to it";
}

TEST_F(ScrubTest, AScrubOfOneBucketChecksOnlyIt) {
  start(1);
  ASSERT_OK(targets().put(target(0), {BucketId(kOne), "a"}, "a"));
  ASSERT_OK(targets().put(target(0), {BucketId(kOne), "b"}, "b"));
  const ObjectRef elsewhere{BucketId(kOther), "c"};
  ASSERT_OK(targets().put(target(0), elsewhere, "c"));
  targets().corrupt(target(0), elsewhere);
  const auto p = scrub_to_end(0, "scrub-1", kOne);
  EXPECT_EQ(p.objects_scanned(), 2u);
  EXPECT_EQ(p.corrupt_found(), 0u);
  EXPECT_EQ(p.errors(), 0u) << p.last_error();
  const auto all = scrub_to_end(0, "scrub-2");
  EXPECT_EQ(all.objects_scanned(), 3u);
  EXPECT_EQ(all.corrupt_found(), 1u);
}

}  // namespace
}  // namespace silo::scrub
