#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "dsort/records.h"
#include "dsort/worker.h"
#include "testing/temp_dir.h"

namespace silo::dsort {
namespace {

Record record(std::string sort_key, std::string key, std::string source, uint64_t bytes) {
  return Record{std::move(sort_key), std::move(key), std::move(source), bytes};
}

TEST(RecordsTest, RecordsRoundTripThroughTheirCodec) {
  std::string bytes;
  const std::vector<Record> records = {record("", "k", "s.tar", 0), record(std::string("\0\xff", 2), "a/b", "x", 1536),
                                       record(std::string(300, 'z'), std::string(200, 'k'), "y", 1ull << 40)};
  for (const Record& r : records) append_record(bytes, r);
  std::string_view in = bytes;
  for (const Record& r : records) {
    auto got = take_record(in);
    ASSERT_TRUE(got.has_value()) << got.status();
    EXPECT_EQ(*got, r);
  }
  EXPECT_TRUE(in.empty());
  std::string_view torn = std::string_view(bytes).substr(0, bytes.size() - 1);
  for (size_t i = 0; i + 1 < records.size(); ++i) ASSERT_TRUE(take_record(torn).has_value());
  EXPECT_EQ(take_record(torn).status().code(), Code::kDataLoss);
}

TEST(RecordsTest, NaturalOrderComparesDigitRunsByValue) {
  std::vector<std::string> keys = {"img10", "img2", "img1", "a", "img02", "img", "img1b", "b1", "a-1", "img100", "0", "9"};
  std::sort(keys.begin(), keys.end(),
            [](const std::string& a, const std::string& b) { return sort_key_natural(a) < sort_key_natural(b); });
  // "img2" and "img02" are equal by value; Record's order breaks the tie by key.
  const std::vector<std::string> expected = {"0", "9", "a", "a-1", "b1", "img", "img1", "img1b", "img2", "img02", "img10", "img100"};
  ASSERT_EQ(keys.size(), expected.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == "img02" || keys[i] == "img2") continue;
    EXPECT_EQ(keys[i], expected[i]) << i;
  }
  EXPECT_EQ(sort_key_natural("img2"), sort_key_natural("img02"));
}

TEST(RecordsTest, ContentKeysOrderAsTheirType) {
  const auto key = [](std::string_view text, wire::DsortContentType type) {
    auto k = sort_key_content(text, type);
    EXPECT_TRUE(k.has_value()) << text << ": " << k.status();
    return k ? *k : std::string();
  };
  using T = wire::DsortContentType;
  EXPECT_LT(key("-5", T::kInt), key("-1", T::kInt));
  EXPECT_LT(key("-1", T::kInt), key("0", T::kInt));
  EXPECT_LT(key("2\n", T::kInt), key(" 10", T::kInt));
  EXPECT_LT(key("-2.5", T::kFloat), key("-0.1", T::kFloat));
  EXPECT_EQ(key("-0", T::kFloat), key("0", T::kFloat));
  EXPECT_LT(key("0", T::kFloat), key("1e-9", T::kFloat));
  EXPECT_LT(key("3.5", T::kFloat), key("1e3", T::kFloat));
  EXPECT_LT(key("10", T::kString), key("9", T::kString));
  for (const char* bad : {"", "x", "1.5", "12abc"}) {
    EXPECT_EQ(sort_key_content(bad, T::kInt).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(sort_key_content("nan", T::kFloat).status().code(), Code::kInvalidArgument);
  EXPECT_LT(sort_key_list(0, 7), sort_key_list(1, 0));
  EXPECT_LT(sort_key_list(1, 0), sort_key_list(1, 1));
  EXPECT_NE(sort_key_random("a", 1), sort_key_random("a", 2));
  EXPECT_EQ(sort_key_random("a", 1), sort_key_random("a", 1));
}

// Every record comes out once, in order, whether it stayed in memory or spilled.
void sort_and_check(uint64_t memory_limit, size_t count, bool expect_spill) {
  const auto dir = testing::TempDir::create();
  ASSERT_TRUE(dir.has_value());
  const std::string spill = dir->path() + "/runs";
  std::vector<Record> all;
  std::mt19937_64 random(7);
  for (size_t i = 0; i < count; ++i) {
    all.push_back(record(sort_key_random("k" + std::to_string(i), 3), "k" + std::to_string(i), "s" + std::to_string(i % 13),
                         random() % 10000));
  }
  all.push_back(all[5]);  // a duplicate: kept, next to its twin
  {
    RecordSorter sorter(spill, memory_limit);
    for (const Record& r : all) ASSERT_TRUE(sorter.add(r).is_ok());
    ASSERT_TRUE(sorter.finish().is_ok());
    EXPECT_EQ(sorter.records(), all.size());
    EXPECT_EQ(sorter.spilled_runs() > 0, expect_spill);
    EXPECT_LE(sorter.spilled_runs(), 4 * RecordSorter::kMaxRunsPerLevel);
    EXPECT_EQ(std::filesystem::exists(spill), expect_spill);
    std::vector<Record> out;
    bool more = true;
    while (more) {
      std::string page;
      auto next = sorter.next_page(page, 4096);
      ASSERT_TRUE(next.has_value()) << next.status();
      more = *next;
      std::string_view in = page;
      while (!in.empty()) out.push_back(take_record(in).value());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(out, all);
  }
  EXPECT_FALSE(std::filesystem::exists(spill)) << "the runs go with the sorter";
}

TEST(RecordSorterTest, SortsInMemoryWithinItsLimit) { sort_and_check(64 << 20, 5000, false); }

TEST(RecordSorterTest, SpillsSortedRunsAndMergesThemToTheSameOrder) { sort_and_check(64 << 10, 3000, true); }

TEST(RecordSorterTest, RunsPastATierMergeIntoTheNextSoFewStayOpen) {
  // ~40,000 records of ~140 bytes against a 4 KiB limit: ~1,400 runs spilled, merged in
  // tiers of 16.
  sort_and_check(4 << 10, 40000, true);
}

TEST(ShardPlanTest, PlansRoundTripAndTornOnesAreRefused) {
  ShardPlan plan{"train-0001.tar", 1 << 20, {record("a", "k1", "in-0.tar", 3072), record("b", "k2", "in-1.tar", 1024)}};
  const std::string bytes = encode_plan(plan);
  auto back = decode_plan(bytes);
  ASSERT_TRUE(back.has_value()) << back.status();
  EXPECT_EQ(back->name, plan.name);
  EXPECT_EQ(back->size, plan.size);
  EXPECT_EQ(back->records, plan.records);
  EXPECT_FALSE(decode_plan(std::string_view(bytes).substr(0, bytes.size() - 2)).has_value());
  EXPECT_FALSE(decode_plan(bytes + "x").has_value());
  EXPECT_FALSE(decode_plan("").has_value());
}

}  // namespace
}  // namespace silo::dsort
