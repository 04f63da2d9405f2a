// Open files of hot objects (store/detail/open_files.h, docs/adr/0025): a kept file never
// outlives a change of its record, and a file replaced or cut under its record is never
// served from the cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/detail/open_files.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::get;
using testing::put;
using testing::run;

std::string bytes_or_error(const Result<std::string>& got) { return got ? *got : got.status().to_string(); }

std::shared_ptr<const OpenFile> file_named(const std::string& name, uint64_t size = 0) {
  wire::ObjectRecord record;
  record.set_name(name);
  record.set_size(size);
  return std::make_shared<const OpenFile>(-1, std::move(record));
}

TEST(OpenFilesTest, KeepsFilesUntilInvalidatedAndDropsAFillThatRacedAnInvalidation) {
  detail::OpenFiles files(64, 1 << 20);
  EXPECT_EQ(files.find("a"), nullptr);
  files.insert("a", files.epoch("a"), file_named("a"));
  ASSERT_NE(files.find("a"), nullptr);
  EXPECT_EQ(files.find("a")->record.name(), "a");

  files.invalidate("a");
  EXPECT_EQ(files.find("a"), nullptr);

  // A reader read the record before a write changed it: its fill must not be kept.
  const uint64_t before = files.epoch("b");
  files.invalidate("b");
  files.insert("b", before, file_named("b"));
  EXPECT_EQ(files.find("b"), nullptr);
  files.insert("b", files.epoch("b"), file_named("b"));
  EXPECT_NE(files.find("b"), nullptr);

  // A fill replaces an older one of the same key.
  files.insert("b", files.epoch("b"), file_named("b", 7));
  EXPECT_EQ(files.find("b")->record.size(), 7u);
  EXPECT_EQ(files.size(), 1u);
}

TEST(OpenFilesTest, InvalidatingAPrefixDropsOnlyThatBucketsFiles) {
  detail::OpenFiles files(64, 1 << 20);
  for (const std::string key : {"b1/x", "b1/y", "b2/x"}) files.insert(key, files.epoch(key), file_named(key));
  files.invalidate_prefix("b1/");
  EXPECT_EQ(files.find("b1/x"), nullptr);
  EXPECT_EQ(files.find("b1/y"), nullptr);
  EXPECT_NE(files.find("b2/x"), nullptr);
}

TEST(OpenFilesTest, StaysWithinItsCountAndBytesDroppingTheLeastRecentlyUsed) {
  detail::OpenFiles files(32, 1 << 20);  // two per shard
  for (int i = 0; i < 1000; ++i) {
    const std::string key = "k" + std::to_string(i);
    files.insert(key, files.epoch(key), file_named(key));
  }
  EXPECT_LE(files.size(), 32u);
  EXPECT_GT(files.size(), 0u);

  detail::OpenFiles none(0, 1 << 20);
  none.insert("a", none.epoch("a"), file_named("a"));
  EXPECT_EQ(none.find("a"), nullptr);

  // A record larger than a shard's bytes is never kept.
  detail::OpenFiles small(64, 16 * 64);
  small.insert("big", small.epoch("big"), file_named(std::string(4096, 'n')));
  EXPECT_EQ(small.find("big"), nullptr);
}

class StoreOpenFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = testing::open_store({dir_.sub("mp1")}); }
  std::string object_file() const { return testing::only_object_file(dir_.sub("mp1")); }
  // Opens `object` twice: the second open is the kept file's.
  Result<std::string> get_twice(const ObjectRef& object) {
    Result<std::string> first = get(*store_, object);
    if (!first) return first;
    return get(*store_, object);
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  const BucketId bucket_{7};
};

TEST_F(StoreOpenFilesTest, AWarmObjectIsOpenedFromItsKeptFileUntilItsRecordChanges) {
  const ObjectRef object{bucket_, "hot"};
  ASSERT_TRUE(put(*store_, object, "first"));
  ASSERT_EQ(bytes_or_error(get_twice(object)), "first");
  Result<OpenObject> a = run(store_->open(object));
  Result<OpenObject> b = run(store_->open(object));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->file(), b->file()) << "a warm object is opened again";

  // Overwritten: the new bytes and record at once.
  ASSERT_TRUE(put(*store_, object, "second!"));
  Result<OpenObject> after = run(store_->open(object));
  ASSERT_TRUE(after) << after.status();
  EXPECT_EQ(after->record().size(), 7u);
  EXPECT_EQ(testing::read_all(after->fd()), "second!");
  EXPECT_EQ(testing::read_all(a->fd()), "first") << "a read in flight keeps its version";

  // Metadata changed without the bytes: the new record.
  ASSERT_TRUE(get_twice(object));
  Result<wire::ObjectRecord> updated = run(store_->update(
      object,
      [](wire::ObjectRecord& record) {
        record.set_content_type("text/plain");
        return Status::ok();
      },
      Durability::kPageCache));
  ASSERT_TRUE(updated) << updated.status();
  Result<OpenObject> tagged = run(store_->open(object));
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->record().content_type(), "text/plain");

  // Removed: gone.
  ASSERT_TRUE(get_twice(object));
  ASSERT_TRUE(run(store_->remove(object)).is_ok());
  Result<OpenObject> removed = run(store_->open(object));
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error().code(), Code::kNotFound);

  // The bucket removed: gone.
  ASSERT_TRUE(put(*store_, object, "third"));
  ASSERT_TRUE(get_twice(object));
  ASSERT_TRUE(run(store_->remove_bucket(bucket_)).is_ok());
  EXPECT_FALSE(run(store_->open(object)));
}

TEST_F(StoreOpenFilesTest, AFileReplacedOrCutUnderItsRecordIsNeverServedFromTheCache) {
  const ObjectRef object{bucket_, "hot"};
  ASSERT_TRUE(put(*store_, object, "original"));
  ASSERT_EQ(bytes_or_error(get_twice(object)), "original");

  // Replaced by another file (a rename over it): the kept one is unlinked, the new one read.
  const std::string path = object_file();
  {
    const std::string other = path + ".new";
    const int fd = ::open(other.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "ORIGINAL", 8), 8);
    ::close(fd);
    ASSERT_EQ(::rename(other.c_str(), path.c_str()), 0);
  }
  EXPECT_EQ(bytes_or_error(get(*store_, object)), "ORIGINAL");

  // Cut short: DataLoss, as for a file opened afresh.
  ASSERT_EQ(::truncate(path.c_str(), 3), 0);
  Result<std::string> cut = get(*store_, object);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code(), Code::kDataLoss);

  // Removed under its record: DataLoss (the file is missing), not the kept bytes.
  ASSERT_EQ(::truncate(path.c_str(), 8), 0);
  ASSERT_EQ(bytes_or_error(get_twice(object)), std::string("ORI\0\0\0\0\0", 8));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  Result<std::string> missing = get(*store_, object);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Code::kDataLoss);
}

}  // namespace
}  // namespace silo::store
