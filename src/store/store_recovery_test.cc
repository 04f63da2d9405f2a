#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::files_under;
using testing::get;
using testing::put;
using testing::run;

bool exists(const std::string& path) { return std::filesystem::exists(path); }

void write_file(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << content;
}

class StoreRecoveryTest : public ::testing::Test {
 protected:
  std::vector<std::string> mountpaths() const { return {dir_.sub("mp1"), dir_.sub("mp2")}; }
  testing::TempDir dir_;
  const BucketId bucket_{3};
};

TEST_F(StoreRecoveryTest, CleanCloseAndReopenKeepsEverything) {
  auto store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(put(*store, {bucket_, fmt::format("k{}", i)}, fmt::format("v{}", i)));
  }
  const std::vector<MountpathInfo> before = store->mountpaths();
  store->close();
  store.reset();
  EXPECT_TRUE(exists(dir_.sub("mp1/.clean")));
  EXPECT_TRUE(exists(dir_.sub("mp2/.clean")));

  store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  EXPECT_FALSE(exists(dir_.sub("mp1/.clean")));  // removed while serving
  const std::vector<MountpathInfo> after = store->mountpaths();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].id, after[i].id);
  for (int i = 0; i < 20; ++i) {
    Result<std::string> bytes = get(*store, {bucket_, fmt::format("k{}", i)});
    ASSERT_TRUE(bytes) << bytes.status();
    EXPECT_EQ(*bytes, fmt::format("v{}", i));
  }
}

// The path of the one object file under `mountpaths` that holds `content`, or "".
std::string file_holding(const std::vector<std::string>& mountpaths, const std::string& content) {
  for (const std::string& mp : mountpaths) {
    for (const std::string& file : files_under(mp + "/obj")) {
      std::ifstream in(mp + "/obj/" + file);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes == content) return mp + "/obj/" + file;
    }
  }
  return "";
}

uint64_t lost_objects(const Store& store) {
  uint64_t lost = 0;
  for (const MountpathInfo& m : store.mountpaths()) lost += m.lost_objects;
  return lost;
}

TEST_F(StoreRecoveryTest, ReconcileAfterCrash) {
  auto store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(put(*store, {bucket_, fmt::format("good{}", i)}, fmt::format("v{}", i)));
  }
  ASSERT_TRUE(put(*store, {bucket_, "missing"}, "soon without a file"));
  ASSERT_TRUE(put(*store, {bucket_, "torn"}, "soon cut short"));
  const std::string missing_file = file_holding(mountpaths(), "soon without a file");
  const std::string torn_file = file_holding(mountpaths(), "soon cut short");
  ASSERT_FALSE(missing_file.empty());
  ASSERT_FALSE(torn_file.empty());
  store.reset();  // no close(): like a crash, .clean is never written

  // A drive that lost synced data: one file gone, one shorter than acknowledged.
  ASSERT_TRUE(std::filesystem::remove(missing_file));
  std::filesystem::resize_file(torn_file, 4);
  const std::string orphan =
      dir_.sub("mp1/obj/3/ab/cd/abcd0000000000000000000000000000.0000000000000001");
  write_file(orphan, "from a crash between rename and commit");
  const std::string work = dir_.sub("mp2/work/0123456789abcdef");
  write_file(work, "half a PUT");

  store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  EXPECT_FALSE(exists(orphan));
  EXPECT_FALSE(exists(work));
  EXPECT_TRUE(exists(torn_file));  // what is left of the bytes stays, for whoever can use it
  for (int i = 0; i < 20; ++i) {
    Result<std::string> bytes = get(*store, {bucket_, fmt::format("good{}", i)});
    ASSERT_TRUE(bytes) << bytes.status();
    EXPECT_EQ(*bytes, fmt::format("v{}", i));
  }
  // Lost objects are not "never written": listed, stat answers, reads say DataLoss.
  for (const std::string name : {"missing", "torn"}) {
    EXPECT_TRUE(run(store->stat({bucket_, name}))) << name;
    EXPECT_EQ(get(*store, {bucket_, name}).status().code(), Code::kDataLoss) << name;
  }
  Result<ListResult> listed = run(store->list(bucket_, {}));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->entries.size(), 22u);
  EXPECT_EQ(lost_objects(*store), 2u);

  // A DELETE gets rid of a lost object; a PUT replaces it.
  ASSERT_TRUE(run(store->remove({bucket_, "missing"})).is_ok());
  EXPECT_EQ(run(store->stat({bucket_, "missing"})).status().code(), Code::kNotFound);
  ASSERT_TRUE(put(*store, {bucket_, "torn"}, "written again"));
  EXPECT_EQ(*get(*store, {bucket_, "torn"}), "written again");
  EXPECT_EQ(files_under(dir_.sub("mp1/obj")).size() + files_under(dir_.sub("mp2/obj")).size(), 21u);
}

TEST_F(StoreRecoveryTest, ARecordWithoutItsFileIsDroppedWhenAnotherMountpathHoldsTheObject) {
  // A move between mountpaths writes the new record before it removes the old one; a
  // record left behind without its file is that old one, not a lost object.
  auto store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, {bucket_, "moved"}, "still here"));
  const std::string file = file_holding(mountpaths(), "still here");
  ASSERT_FALSE(file.empty());
  store.reset();  // a crash
  const std::string other = file.starts_with(dir_.sub("mp1")) ? dir_.sub("mp2") : dir_.sub("mp1");
  wire::ObjectRecord stale;
  stale.set_name("moved");
  stale.set_size(10);
  stale.set_generation(77);
  ASSERT_TRUE(testing::write_raw_record(other, bucket_, "moved", stale.SerializeAsString()));

  store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  EXPECT_EQ(*get(*store, {bucket_, "moved"}), "still here");
  EXPECT_EQ(lost_objects(*store), 0u);
}

TEST_F(StoreRecoveryTest, ReconcileKeepsFilesOfCorruptRecords) {
  auto store = testing::open_store({dir_.sub("mp1")});
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, {bucket_, "damaged"}, "precious bytes"));
  store.reset();  // a crash
  ASSERT_TRUE(testing::write_raw_record(dir_.sub("mp1"), bucket_, "damaged", "\xff\xfe"));
  store = testing::open_store({dir_.sub("mp1")});
  ASSERT_TRUE(store);
  EXPECT_EQ(run(store->stat({bucket_, "damaged"})).status().code(), Code::kDataLoss);
  EXPECT_EQ(files_under(dir_.sub("mp1/obj")).size(), 1u);  // kept for repair
}

TEST_F(StoreRecoveryTest, CleanMarkerSkipsReconciliation) {
  auto store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  store->close();
  store.reset();
  // A file no record names survives a clean start (no directory walk), but not a crash.
  const std::string stray =
      dir_.sub("mp1/obj/3/ab/cd/abcd0000000000000000000000000000.0000000000000002");
  write_file(stray, "x");
  store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  EXPECT_TRUE(exists(stray));
  store.reset();
  store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  EXPECT_FALSE(exists(stray));
}

TEST_F(StoreRecoveryTest, RemoveBucketRemovesOnlyThatBucket) {
  auto store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(put(*store, {BucketId(1), fmt::format("a{}", i)}, "one"));
    ASSERT_TRUE(put(*store, {BucketId(2), fmt::format("a{}", i)}, "two"));
  }
  Result<std::vector<BucketId>> ids = run(store->bucket_ids());
  ASSERT_TRUE(ids) << ids.status();
  EXPECT_EQ(*ids, (std::vector<BucketId>{BucketId(1), BucketId(2)}));

  ASSERT_TRUE(run(store->remove_bucket(BucketId(1))).is_ok());
  ASSERT_TRUE(run(store->remove_bucket(BucketId(1))).is_ok());  // idempotent
  Result<ListResult> one = run(store->list(BucketId(1), {}));
  ASSERT_TRUE(one);
  EXPECT_TRUE(one->entries.empty());
  Result<ListResult> two = run(store->list(BucketId(2), {}));
  ASSERT_TRUE(two);
  EXPECT_EQ(two->entries.size(), 30u);
  EXPECT_EQ(*get(*store, {BucketId(2), "a7"}), "two");
  EXPECT_EQ(run(store->stat({BucketId(1), "a7"})).status().code(), Code::kNotFound);
  for (const std::string& mp : mountpaths()) EXPECT_FALSE(exists(mp + "/obj/1"));
  ids = run(store->bucket_ids());
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<BucketId>{BucketId(2)}));
}

TEST_F(StoreRecoveryTest, CopiedMountpathIsRefused) {
  {
    auto store = testing::open_store({dir_.sub("mp1")});
    ASSERT_TRUE(store);
    store->close();
  }
  std::filesystem::copy(dir_.sub("mp1"), dir_.sub("copy"),
                        std::filesystem::copy_options::recursive);
  StoreOptions options;
  options.mountpaths = {dir_.sub("mp1"), dir_.sub("copy")};
  Result<std::unique_ptr<Store>> store = Store::open(options);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(store.status().message().find(dir_.sub("mp1")), std::string::npos);
  EXPECT_NE(store.status().message().find(dir_.sub("copy")), std::string::npos);
}

TEST_F(StoreRecoveryTest, BadIdFileIsAnError) {
  write_file(dir_.sub("mp1/.silo-mountpath"), "something else\n");
  StoreOptions options;
  options.mountpaths = {dir_.sub("mp1")};
  Result<std::unique_ptr<Store>> store = Store::open(options);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), Code::kDataLoss);
  EXPECT_NE(store.status().message().find(dir_.sub("mp1")), std::string::npos);
}

TEST_F(StoreRecoveryTest, ObjectOnNonOwnerMountpathIsFoundAndMovesOnOverwrite) {
  // An object written while mp1 was the only mountpath may not be owned by mp1 once mp2
  // joins: it must still be found, and an overwrite leaves one copy on the owner.
  std::vector<std::string> names;
  {
    auto store = testing::open_store({dir_.sub("mp1")});
    ASSERT_TRUE(store);
    for (int i = 0; i < 20; ++i) {
      names.push_back(fmt::format("n{}", i));
      ASSERT_TRUE(put(*store, {bucket_, names.back()}, "first"));
    }
    store->close();
  }
  auto store = testing::open_store(mountpaths());
  ASSERT_TRUE(store);
  for (const std::string& name : names) EXPECT_EQ(*get(*store, {bucket_, name}), "first");
  Result<ListResult> listed = run(store->list(bucket_, {}));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->entries.size(), names.size());
  for (const std::string& name : names) ASSERT_TRUE(put(*store, {bucket_, name}, "second"));
  for (const std::string& name : names) EXPECT_EQ(*get(*store, {bucket_, name}), "second");
  EXPECT_EQ(files_under(dir_.sub("mp1/obj")).size() + files_under(dir_.sub("mp2/obj")).size(),
            names.size());
  EXPECT_GT(files_under(dir_.sub("mp2/obj")).size(), 0u);
  listed = run(store->list(bucket_, {}));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->entries.size(), names.size());
}

}  // namespace
}  // namespace silo::store
