#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::files_under;
using testing::put;
using testing::run;

class StoreListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mountpaths_ = {dir_.sub("mp1"), dir_.sub("mp2"), dir_.sub("mp3")};
    store_ = testing::open_store(mountpaths_);
    ASSERT_TRUE(store_);
  }

  std::vector<std::string> list_all(const std::string& prefix, size_t page) {
    std::vector<std::string> names;
    ListOptions options;
    options.prefix = prefix;
    options.limit = page;
    for (int pages = 0; pages < 10000; ++pages) {
      Result<ListResult> result = run(store_->list(bucket_, options));
      EXPECT_TRUE(result) << result.status();
      if (!result) break;
      EXPECT_LE(result->entries.size(), page);
      for (const wire::ListEntry& entry : result->entries) names.push_back(entry.name());
      if (!result->is_truncated) break;
      EXPECT_FALSE(result->entries.empty());
      options.start_after = result->entries.back().name();
    }
    return names;
  }

  testing::TempDir dir_;
  std::vector<std::string> mountpaths_;
  std::unique_ptr<Store> store_;
  const BucketId bucket_{42};
};

TEST_F(StoreListTest, ObjectsSpreadOverMountpaths) {
  std::vector<std::pair<std::string, std::string>> objects;
  for (int i = 0; i < 300; ++i) objects.emplace_back(fmt::format("obj-{:04}", i), "x");
  ASSERT_TRUE(testing::put_many(*store_, bucket_, objects).is_ok());
  size_t total = 0;
  for (const std::string& mountpath : mountpaths_) {
    const size_t count = files_under(mountpath + "/obj").size();
    EXPECT_GT(count, 30u) << mountpath;  // HRW over 3 ids: about 100 each
    total += count;
  }
  EXPECT_EQ(total, 300u);
  std::set<std::string> ids;
  for (const MountpathInfo& info : store_->mountpaths()) ids.insert(info.id);
  EXPECT_EQ(ids.size(), 3u);
}

TEST_F(StoreListTest, PagesReturnEveryNameOnceInOrder) {
  std::vector<std::string> expected;
  std::vector<std::pair<std::string, std::string>> objects;
  for (int i = 0; i < 300; ++i) {
    expected.push_back(fmt::format("{}/file-{:03}", i % 3 == 0 ? "dir" : "other", i));
    objects.emplace_back(expected.back(), std::string(static_cast<size_t>(i), 'z'));
  }
  ASSERT_TRUE(testing::put_many(*store_, bucket_, objects).is_ok());
  // Another bucket's objects never show up.
  ASSERT_TRUE(put(*store_, {BucketId(41), "dir/zzz"}, "x"));
  ASSERT_TRUE(put(*store_, {BucketId(43), "dir/aaa"}, "x"));
  std::sort(expected.begin(), expected.end());

  for (size_t page : {1u, 7u, 100u, 1000u}) {
    EXPECT_EQ(list_all("", page), expected) << "page " << page;
  }
  std::vector<std::string> dir_only;
  std::copy_if(expected.begin(), expected.end(), std::back_inserter(dir_only),
               [](const std::string& name) { return name.starts_with("dir/"); });
  EXPECT_EQ(list_all("dir/", 13), dir_only);
  EXPECT_TRUE(list_all("nothing-here/", 10).empty());
}

TEST_F(StoreListTest, EntriesCarrySizeMtimeAndMd5) {
  ASSERT_TRUE(put(*store_, {bucket_, "hello"}, "hello"));
  Result<ListResult> result = run(store_->list(bucket_, {}));
  ASSERT_TRUE(result) << result.status();
  ASSERT_EQ(result->entries.size(), 1u);
  EXPECT_FALSE(result->is_truncated);
  const wire::ListEntry& entry = result->entries[0];
  EXPECT_EQ(entry.name(), "hello");
  EXPECT_EQ(entry.size(), 5u);
  EXPECT_GT(entry.mtime_unix_nanos(), 0);
  EXPECT_EQ(entry.md5_hex(), "5d41402abc4b2a76b9719d911017c592");
}

TEST_F(StoreListTest, StartAfterAndLimit) {
  for (const char* name : {"a", "a/b", "a/c", "b", "b/a", "c"}) {
    ASSERT_TRUE(put(*store_, {bucket_, name}, "x"));
  }
  ListOptions options;
  options.start_after = "a/b";
  options.limit = 2;
  Result<ListResult> result = run(store_->list(bucket_, options));
  ASSERT_TRUE(result) << result.status();
  ASSERT_EQ(result->entries.size(), 2u);
  EXPECT_EQ(result->entries[0].name(), "a/c");
  EXPECT_EQ(result->entries[1].name(), "b");
  EXPECT_TRUE(result->is_truncated);

  options.limit = 10;
  options.start_after = "c";
  result = run(store_->list(bucket_, options));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->entries.empty());
  EXPECT_FALSE(result->is_truncated);

  options.prefix = "b";
  options.start_after = "a";  // before the prefix range: the whole range
  result = run(store_->list(bucket_, options));
  ASSERT_TRUE(result);
  ASSERT_EQ(result->entries.size(), 2u);
  EXPECT_EQ(result->entries[0].name(), "b");
  EXPECT_EQ(result->entries[1].name(), "b/a");

  options.start_after = "zzz";  // past the prefix range
  result = run(store_->list(bucket_, options));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->entries.empty());
}

TEST_F(StoreListTest, HighCodePointsAndLastBucket) {
  const BucketId last(~uint64_t{0});
  const std::string max_char = "\xf4\x8f\xbf\xbf";  // U+10FFFF, the largest UTF-8 sequence
  for (const std::string& name : {max_char, max_char + max_char, std::string("a")}) {
    ASSERT_TRUE(put(*store_, {last, name}, "x"));
  }
  ListOptions options;
  options.prefix = max_char;
  Result<ListResult> result = run(store_->list(last, options));
  ASSERT_TRUE(result) << result.status();
  ASSERT_EQ(result->entries.size(), 2u);
  EXPECT_EQ(result->entries[1].name(), max_char + max_char);
  Result<std::vector<BucketId>> ids = run(store_->bucket_ids());
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->size(), 1u);
  EXPECT_EQ((*ids)[0], last);
  EXPECT_TRUE(run(store_->remove_bucket(last)).is_ok());
  result = run(store_->list(last, {}));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->entries.empty());
}

TEST_F(StoreListTest, NameMustBeUtf8) {
  // ObjectRecord.name is a proto3 string, which must hold UTF-8 (S3 keys are UTF-8 too).
  for (const std::string& name : {std::string("\xff"), std::string("a\xc3"), std::string()}) {
    EXPECT_EQ(put(*store_, {bucket_, name}, "x").status().code(), Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace silo::store
