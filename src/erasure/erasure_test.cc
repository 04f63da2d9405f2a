// Erasure coding against real stores and in-process peers
// (replication/testing/test_targets.h): a coded object spread as one slice per holder,
// read whole or in part from any holder, read degraded and rebuilt when a slice is gone.
#include "erasure/erasure.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "http/testing/fake_exchange.h"
#include "replication/testing/test_targets.h"
#include "testing/status_matchers.h"

namespace silo::erasure {
namespace {

using replication::testing::test_bucket;
using replication::testing::TestTarget;
using replication::testing::TestTargets;

constexpr uint64_t kCoded = 1;            // 2 data + 1 parity slices from 1 KiB on
constexpr uint64_t kMinSize = 1024;
constexpr uint64_t kObjectSize = (2u << 20) + 12345;  // two stripes of 1 MiB cells, the last one short

std::string random_bytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

TEST(ObjectViewTest, ASlicesRecordShowsTheWholeObject) {
  wire::ObjectRecord slice;
  slice.set_name("o");
  slice.set_size(1000);
  slice.set_xxh3(7);
  slice.set_mtime_unix_nanos(5);
  slice.mutable_ec()->set_index(1);
  slice.mutable_ec()->set_object_size(2000);
  slice.mutable_ec()->set_object_xxh3(9);
  const wire::ObjectRecord view = Erasure::object_view(slice);
  EXPECT_EQ(view.size(), 2000u);
  EXPECT_EQ(view.xxh3(), 9u);
  EXPECT_FALSE(view.has_ec());
  EXPECT_EQ(view.mtime_unix_nanos(), 5);
  wire::ObjectRecord whole = view;
  EXPECT_EQ(Erasure::object_view(whole).SerializeAsString(), whole.SerializeAsString()) << "a full copy as it is";
}

// Three targets, each with its Erasure; one coded object, spread.
class ErasureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    targets_ = std::make_unique<TestTargets>(
        3, std::vector<wire::Bucket>{test_bucket("coded", kCoded, 0, /*ec_data=*/2, /*ec_parity=*/1, kMinSize)});
    for (size_t i = 0; i < targets_->size(); ++i) {
      TestTarget& t = (*targets_)[i];
      erasures_.push_back(std::make_unique<Erasure>(*t.peers, *t.store, t.client, *t.replication, t.stats));
    }
    bucket_ = *(*targets_)[0].peers->bucket_by_id(kCoded);
  }
  void TearDown() override {
    erasures_.clear();
    targets_.reset();
  }

  TestTargets& targets() { return *targets_; }
  // Holder i of `object`, and its Erasure.
  TestTarget& holder(const ObjectRef& object, size_t i) { return targets_->by_id(targets_->holder_ids(object).at(i)); }
  Erasure& erasure_of(const TestTarget& t) {
    for (size_t i = 0; i < targets_->size(); ++i) {
      if ((*targets_)[i].id() == t.id()) return *erasures_[i];
    }
    return *erasures_.front();
  }

  // Puts `bytes` at the owner and codes it as the owner does after a PUT.
  void put_coded(const ObjectRef& object, const std::string& bytes) {
    TestTarget& owner = holder(object, 0);
    ASSERT_OK(targets_->put(owner, object, bytes));
    EXPECT_OK(targets_->run(erasure_of(owner).encode_and_spread(object, owner.peers->holders_of(object))));
  }
  // The object's bytes [offset, offset + length) as `t` answers a GET from its slice.
  Result<std::string> read_at(TestTarget& t, const ObjectRef& object, uint64_t offset, uint64_t length) {
    auto mine = targets_->run(t.store->open(object));
    if (!mine) return mine.status();
    http::testing::FakeExchange exchange(targets_->io().get_executor(), http::Method::kGet, "/o");
    const Status sent = targets_->run(erasure_of(t).send_ec(exchange, object, *mine, http::ResponseHead{},
                                                           offset, length));
    if (!sent.is_ok()) return sent;
    return exchange.sent();
  }

  std::unique_ptr<TestTargets> targets_;
  std::vector<std::unique_ptr<Erasure>> erasures_;
  wire::Bucket bucket_;
};

TEST_F(ErasureTest, ACodedObjectIsOneSliceOnEachHolderAndReadsWholeOrInPartFromAny) {
  const ObjectRef object{BucketId(kCoded), "big"};
  const std::string bytes = random_bytes(kObjectSize, 1);
  put_coded(object, bytes);
  for (size_t i = 0; i < 3; ++i) {
    const auto record = targets().record_at(holder(object, i), object);
    ASSERT_TRUE(record.has_value()) << "holder " << i;
    ASSERT_TRUE(record->has_ec()) << "holder " << i << " keeps a slice, not the whole object";
    EXPECT_EQ(record->ec().index(), i);
    EXPECT_EQ(record->ec().object_size(), kObjectSize);
    EXPECT_EQ(record->ec().object_xxh3(), TestTargets::xxh3_of(bytes));
    EXPECT_LT(record->size(), kObjectSize);
    EXPECT_EQ(record->size(), targets().record_at(holder(object, 0), object)->size()) << "slices are alike";
  }
  EXPECT_EQ(holder(object, 0).counter("silo_target_ec_slices_made_total"), 3u);
  // Through a data slice's holder and through the parity's (which reads both data slices).
  for (const size_t i : {0, 2}) {
    auto whole = read_at(holder(object, i), object, 0, kObjectSize);
    ASSERT_OK(whole);
    EXPECT_TRUE(*whole == bytes) << "read through holder " << i;
  }
  const uint64_t offset = (1u << 20) - 100, length = (1u << 20) + 5000;  // across a cell and a stripe
  auto part = read_at(holder(object, 1), object, offset, length);
  ASSERT_OK(part);
  EXPECT_TRUE(*part == bytes.substr(offset, length));
  EXPECT_EQ(holder(object, 2).counter("silo_target_ec_degraded_reads_total"), 0u);
}

TEST_F(ErasureTest, AReadWithADataSliceGoneReconstructsItAndTheSliceIsRebuilt) {
  const ObjectRef object{BucketId(kCoded), "big"};
  const std::string bytes = random_bytes(kObjectSize, 2);
  put_coded(object, bytes);
  TestTarget& first = holder(object, 0);
  TestTarget& reader = holder(object, 1);
  ASSERT_OK(targets().run(first.store->remove(object)));  // data slice 0 is gone

  auto whole = read_at(reader, object, 0, kObjectSize);
  ASSERT_OK(whole);
  EXPECT_TRUE(*whole == bytes);
  EXPECT_EQ(reader.counter("silo_target_ec_degraded_reads_total"), 1u);
  // The read rebuilds slice 0 on its holder in the background.
  ASSERT_TRUE(targets().run_until([&] { return reader.counter("silo_target_ec_slices_made_total") >= 1; }));
  const auto rebuilt = targets().record_at(first, object);
  ASSERT_TRUE(rebuilt.has_value());
  ASSERT_TRUE(rebuilt->has_ec());
  EXPECT_EQ(rebuilt->ec().index(), 0u);
  EXPECT_FALSE(targets().run(first.replication->broken_copy(object)).has_value()) << "its bytes match their XXH3";
  auto again = read_at(reader, object, 0, kObjectSize);
  ASSERT_OK(again);
  EXPECT_TRUE(*again == bytes);
  EXPECT_EQ(reader.counter("silo_target_ec_degraded_reads_total"), 1u) << "whole again: not degraded";
}

TEST_F(ErasureTest, ALostOrCorruptSliceIsRebuiltFromTheOthers) {
  const ObjectRef object{BucketId(kCoded), "big"};
  const std::string bytes = random_bytes(kObjectSize, 3);
  put_coded(object, bytes);
  TestTarget& parity = holder(object, 2);
  targets().lose_file(parity, object);
  auto rebuilt = targets().run(erasure_of(holder(object, 0)).rebuild_slices(object, {}));
  ASSERT_OK(rebuilt);
  EXPECT_EQ(*rebuilt, 1u);
  EXPECT_FALSE(targets().run(parity.replication->broken_copy(object)).has_value());

  TestTarget& data = holder(object, 1);
  targets().corrupt(data, object);
  rebuilt = targets().run(erasure_of(data).rebuild_slices(object, {}));
  ASSERT_OK(rebuilt);
  EXPECT_EQ(*rebuilt, 1u);
  EXPECT_FALSE(targets().run(data.replication->broken_copy(object)).has_value());
  EXPECT_EQ(data.counter("silo_target_corrupt_copies_repaired_total"), 1u);
  auto whole = read_at(holder(object, 0), object, 0, kObjectSize);
  ASSERT_OK(whole);
  EXPECT_TRUE(*whole == bytes);
  rebuilt = targets().run(erasure_of(holder(object, 0)).rebuild_slices(object, {}));
  ASSERT_OK(rebuilt);
  EXPECT_EQ(*rebuilt, 0u) << "nothing missing";
}

TEST_F(ErasureTest, AnObjectUnderMinSizeIsKeptAsParityPlusOneFullCopies) {
  const ObjectRef object{BucketId(kCoded), "small"};
  put_coded(object, "small bytes");
  EXPECT_EQ(targets().bytes_at(holder(object, 0), object), "small bytes");
  EXPECT_EQ(targets().bytes_at(holder(object, 1), object), "small bytes");
  EXPECT_FALSE(targets().record_at(holder(object, 2), object).has_value());
  EXPECT_FALSE(targets().record_at(holder(object, 0), object)->has_ec());
}

}  // namespace
}  // namespace silo::erasure
