// Archive indexes in the store (docs/shards.md): built when a .tar (.tgz, .tar.gz,
// .tar.lz4, .zip) is installed, tied to its version, gone with it, kept by a record update,
// carried by a resilver; index_of_fd in the format an object's first bytes say.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "archive/tar_writer.h"
#include "base/hash.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::put;
using testing::run;

std::string tar_of(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out;
  for (const auto& [name, bytes] : members) {
    out += archive::tar_header(name, bytes.size(), 0) + bytes + archive::tar_padding(bytes.size());
  }
  return out + archive::tar_end();
}

// `command` run in `dir` (the system's gzip, lz4, zip), then the bytes of dir/`out`.
std::string made_by(const std::string& dir, const std::string& command, const std::string& out) {
  const std::string full = "cd '" + dir + "' && (" + command + ") >/dev/null 2>&1";
  EXPECT_EQ(std::system(full.c_str()), 0) << full;
  std::ifstream in(dir + "/" + out, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

Result<wire::ArchiveIndex> index_of(Store& store, const ObjectRef& object) {
  ASSIGN_OR_RETURN(const std::string bytes, run(store.get_index(object)));
  return wire::decode<wire::ArchiveIndex>(bytes, wire::Source::kDisk);
}

class StoreIndexTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = testing::open_store({dir_.sub("mp1"), dir_.sub("mp2")}); }
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  const BucketId bucket_{7};
};

TEST_F(StoreIndexTest, ATarGetsItsIndexWithItsVersionAndLosesItWithIt) {
  const ObjectRef shard{bucket_, "train-0001.tar"};
  auto v1 = put(*store_, shard, tar_of({{"a.jpg", "AAAA"}, {"a.cls", "1"}}));
  ASSERT_TRUE(v1) << v1.status();
  auto index = index_of(*store_, shard);
  ASSERT_TRUE(index) << index.status();
  EXPECT_EQ(index->generation(), v1->generation());
  ASSERT_EQ(index->members_size(), 2);
  EXPECT_EQ(index->members(0).name(), "a.jpg");
  EXPECT_EQ(index->members(0).offset(), 512u);
  EXPECT_EQ(index->members(1).size(), 1u);

  // A tag update keeps it; a new version brings its own; a version that is no tar drops it.
  ASSERT_TRUE(run(store_->update(shard, [](wire::ObjectRecord& r) {
    (*r.mutable_tags())["split"] = "train";
    return Status::ok();
  }, Durability::kPageCache)));
  EXPECT_TRUE(index_of(*store_, shard));
  auto v2 = put(*store_, shard, tar_of({{"b.jpg", "BB"}}));
  ASSERT_TRUE(v2);
  index = index_of(*store_, shard);
  ASSERT_TRUE(index);
  EXPECT_EQ(index->generation(), v2->generation());
  EXPECT_EQ(index->members(0).name(), "b.jpg");
  ASSERT_TRUE(put(*store_, shard, "not a tar at all, though named like one"));
  EXPECT_EQ(run(store_->get_index(shard)).status().code(), Code::kNotFound);

  // Built on demand for a version, refused for another; removed with the object.
  const ObjectRef other{bucket_, "samples.bin"};
  auto plain = put(*store_, other, tar_of({{"x", "y"}}));
  ASSERT_TRUE(plain);
  EXPECT_EQ(run(store_->get_index(other)).status().code(), Code::kNotFound) << "not named like an archive";
  EXPECT_EQ(run(store_->put_index(other, plain->generation() + 1, "stale")).code(), Code::kAborted);
  ASSERT_TRUE(run(store_->put_index(other, plain->generation(), "on demand")).is_ok());
  EXPECT_EQ(*run(store_->get_index(other)), "on demand");
  ASSERT_TRUE(run(store_->remove(other)).is_ok());
  ASSERT_TRUE(put(*store_, other, "again"));
  EXPECT_EQ(run(store_->get_index(other)).status().code(), Code::kNotFound) << "removed with its object";
}

TEST_F(StoreIndexTest, ATarsMembersGetTheirOwnSumsOnlyFromBytesThatMatchTheObject) {
  // Members across the 1 MiB chunks of the pass, an empty one, one of a single byte.
  const std::string big(3 * 1024 * 1024 + 17, 'x');
  std::string middle(700 * 1024, 'm');
  middle[12345] = 'M';
  const std::vector<std::pair<std::string, std::string>> members = {
      {"a.bin", big}, {"empty", ""}, {"b.bin", middle}, {"c.cls", "7"}};
  const ObjectRef shard{bucket_, "sums.tar"};
  auto put_shard = put(*store_, shard, tar_of(members));
  ASSERT_TRUE(put_shard) << put_shard.status();
  auto index = index_of(*store_, shard);
  ASSERT_TRUE(index) << index.status();
  ASSERT_EQ(index->members_size(), 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(index->members(i).has_xxh3()) << i;
    hash::Xxh3Stream sum;
    sum.update(members[static_cast<size_t>(i)].second);
    EXPECT_EQ(index->members(i).xxh3(), sum.digest()) << members[static_cast<size_t>(i)].first;
  }

  // From a file whose bytes differ from the record's XXH3: an index, but no sums.
  const std::string path = dir_.sub("copy.tar");
  {
    std::ofstream(path, std::ios::binary) << tar_of(members);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto rebuilt = index_of_fd(fd, put_shard->size());
  ASSERT_TRUE(rebuilt) << rebuilt.status();
  wire::ObjectRecord record = *put_shard;
  add_member_sums(fd, record, *rebuilt);
  EXPECT_TRUE(rebuilt->members(2).has_xxh3()) << "the same bytes: sums";
  rebuilt = index_of_fd(fd, put_shard->size());
  record.set_xxh3(record.xxh3() ^ 1);
  add_member_sums(fd, record, *rebuilt);
  ::close(fd);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(rebuilt->members(i).has_xxh3()) << i;
}

TEST_F(StoreIndexTest, CompressedArchivesGetTheirIndexAtInstallAndOnDemand) {
  const std::string work = dir_.sub("work");
  ASSERT_EQ(::mkdir(work.c_str(), 0755), 0);
  std::ofstream(work + "/shard.tar", std::ios::binary) << tar_of({{"a.jpg", "AAAA"}, {"a.cls", "1"}});
  std::ofstream(work + "/a.jpg", std::ios::binary) << "AAAA";
  std::ofstream(work + "/a.cls", std::ios::binary) << "1";
  const std::string tgz = made_by(work, "gzip -n -c shard.tar > shard.tgz", "shard.tgz");
  const std::string lz4 = made_by(work, "lz4 -q shard.tar shard.tar.lz4", "shard.tar.lz4");
  const std::string zip = made_by(work, "zip -q -X shard.zip a.jpg a.cls", "shard.zip");
  const std::vector<std::tuple<std::string, std::string, wire::ArchiveFormat>> cases = {
      {"train-0001.tgz", tgz, wire::ARCHIVE_FORMAT_TGZ},
      {"train-0002.tar.gz", tgz, wire::ARCHIVE_FORMAT_TGZ},
      {"train-0003.tar.lz4", lz4, wire::ARCHIVE_FORMAT_TAR_LZ4},
      {"train-0004.zip", zip, wire::ARCHIVE_FORMAT_ZIP}};
  for (const auto& [name, bytes, format] : cases) {
    const ObjectRef shard{bucket_, name};
    auto v1 = put(*store_, shard, bytes);
    ASSERT_TRUE(v1) << v1.status();
    auto index = index_of(*store_, shard);
    ASSERT_TRUE(index) << name << ": " << index.status();
    EXPECT_EQ(index->format(), format) << name;
    EXPECT_EQ(index->generation(), v1->generation());
    ASSERT_EQ(index->members_size(), 2) << name;
    EXPECT_EQ(index->members(0).name(), "a.jpg");
    EXPECT_EQ(index->members(0).size(), 4u);
    EXPECT_EQ(index->members(1).name(), "a.cls");
    if (format == wire::ARCHIVE_FORMAT_ZIP) {
      EXPECT_EQ(index->members(0).offset(), 0u) << "its local header";
    } else {
      EXPECT_EQ(index->members(0).offset(), 512u) << "in the decompressed stream";
      EXPECT_EQ(index->members(1).offset(), 1536u);
    }
    // Named like an archive of another format: stored, with no index.
    const ObjectRef misnamed{bucket_, name + ".tar"};
    ASSERT_TRUE(put(*store_, misnamed, bytes));
    EXPECT_EQ(run(store_->get_index(misnamed)).status().code(), Code::kNotFound) << name;
  }

  // On demand (any name): the first bytes say the format.
  for (const auto& [file, format] : {std::pair{"shard.tgz", wire::ARCHIVE_FORMAT_TGZ},
                                     {"shard.tar.lz4", wire::ARCHIVE_FORMAT_TAR_LZ4},
                                     {"shard.zip", wire::ARCHIVE_FORMAT_ZIP},
                                     {"shard.tar", wire::ARCHIVE_FORMAT_TAR}}) {
    const int fd = ::open((work + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const off_t size = ::lseek(fd, 0, SEEK_END);
    auto index = index_of_fd(fd, static_cast<uint64_t>(size));
    auto as_zip = index_of_fd(fd, static_cast<uint64_t>(size), wire::ARCHIVE_FORMAT_ZIP);
    ::close(fd);
    ASSERT_TRUE(index) << file << ": " << index.status();
    EXPECT_EQ(index->format(), format) << file;
    EXPECT_EQ(index->members_size(), 2) << file;
    if (format != wire::ARCHIVE_FORMAT_ZIP) {
      EXPECT_EQ(as_zip.status().reason(), "NotAnArchive") << file;
    }
  }
}

TEST_F(StoreIndexTest, AResilverCarriesTheIndexWithTheObject) {
  std::vector<ObjectRef> shards;
  for (int i = 0; i < 8; ++i) {
    shards.push_back({bucket_, "shard-" + std::to_string(i) + ".tar"});
    ASSERT_TRUE(put(*store_, shards.back(), tar_of({{"k.txt", std::to_string(i)}})));
  }
  // Every mountpath's objects move to the other when it is disabled.
  const auto mountpaths = store_->mountpaths();
  ASSERT_TRUE(store_->set_mountpath_enabled(mountpaths[0].id, false));
  ASSERT_TRUE(run(store_->resilver([] { return false; })));
  for (const auto& shard : shards) {
    auto index = index_of(*store_, shard);
    ASSERT_TRUE(index) << shard.name << ": " << index.status();
    EXPECT_EQ(index->members(0).name(), "k.txt");
  }
}

}  // namespace
}  // namespace silo::store
