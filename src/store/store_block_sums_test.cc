// Block sums (store/block_sums.h): computed as bytes stream into every writer (PUT, a
// copy, an assembled multipart upload), kept by update(), added by set_block_sums(), and
// checked by BlockVerifier only where a read touches.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/hash.h"
#include "store/block_sums.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::run;


// Bytes that differ from block to block (a block of one byte value would hide a swap).
std::string bytes_of(uint64_t size, uint32_t seed = 7) {
  std::mt19937 random(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(random());
  return out;
}

uint64_t xxh3_of(std::string_view bytes) {
  hash::Xxh3Stream stream;
  stream.update(std::span<const char>(bytes.data(), bytes.size()));
  return stream.digest();
}

// The block sums of `bytes`, one block at a time (no streaming in pieces).
std::vector<uint64_t> expected_sums(std::string_view bytes) {
  std::vector<uint64_t> sums;
  for (uint64_t at = 0; at < bytes.size(); at += kBlockSize) sums.push_back(xxh3_of(bytes.substr(at, kBlockSize)));
  return sums;
}

std::vector<uint64_t> sums_of(const wire::ObjectRecord& record) {
  return {record.block_xxh3().begin(), record.block_xxh3().end()};
}

const std::vector<uint64_t> kSizes = {0, 1, 4096, kBlockSize - 1, kBlockSize, kBlockSize + 1, 3 * kBlockSize + 12345, 4 * kBlockSize};

TEST(BlockSumsTest, ASummerGivesTheSameSumsWhateverPiecesTheBytesComeIn) {
  for (const uint64_t size : kSizes) {
    const std::string bytes = bytes_of(size);
    for (const size_t piece : {size_t{1} << 16, size_t{1000003}, size_t{3} << 20}) {
      if (piece == 1 && size > kBlockSize) continue;
      BlockSummer summer;
      for (size_t at = 0; at < bytes.size(); at += piece) {
        const size_t take = std::min(piece, bytes.size() - at);
        summer.update(std::span<const char>(bytes.data() + at, take));
      }
      EXPECT_EQ(summer.finish(), expected_sums(bytes)) << size << " bytes in pieces of " << piece;
    }
  }
}

class StoreBlockSumsTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = testing::open_store({dir_.sub("mp1")}); }

  // The one object file of the store.
  std::string object_file() const { return testing::only_object_file(dir_.sub("mp1")); }
  void flip_byte(uint64_t offset) const {
    const int fd = ::open(object_file().c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    char c = 0;
    ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(offset)), 1);
    c = static_cast<char>(c ^ 0x5a);
    ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(offset)), 1);
    ::close(fd);
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  const BucketId bucket_{3};
};

TEST_F(StoreBlockSumsTest, EveryPutKeepsTheSumsOfItsBlocks) {
  for (const uint64_t size : kSizes) {
    const std::string bytes = bytes_of(size, static_cast<uint32_t>(size));
    const ObjectRef object{bucket_, "o" + std::to_string(size)};
    Result<wire::ObjectRecord> put = testing::put(*store_, object, bytes);
    ASSERT_TRUE(put) << put.status();
    Result<wire::ObjectRecord> record = run(store_->stat(object));
    ASSERT_TRUE(record) << record.status();
    EXPECT_EQ(record->block_size(), kBlockSize) << size;
    EXPECT_EQ(sums_of(*record), expected_sums(bytes)) << size;
    EXPECT_TRUE(has_block_sums(*record)) << size;
    EXPECT_EQ(record->xxh3(), xxh3_of(bytes)) << size;
  }
}

TEST_F(StoreBlockSumsTest, ACopyGetsSumsOfItsOwnBytesAndASliceNone) {
  const std::string bytes = bytes_of(2 * kBlockSize + 3);
  const ObjectRef object{bucket_, "copy"};
  wire::ObjectRecord original;
  original.set_name("copy");
  original.set_size(bytes.size());
  original.set_xxh3(xxh3_of(bytes));
  original.set_mtime_unix_nanos(1000);
  set_block_sums(original, kBlockSize, std::vector<uint64_t>{1, 2, 3});  // wrong: never trusted
  PutOptions options = testing::fast();
  options.original = original;
  options.attributes = original;
  Result<wire::ObjectRecord> copied = testing::put(*store_, object, bytes, options);
  ASSERT_TRUE(copied) << copied.status();
  EXPECT_EQ(sums_of(*copied), expected_sums(bytes));

  wire::ObjectRecord slice = original;
  slice.mutable_ec()->set_data(2);
  slice.mutable_ec()->set_parity(1);
  slice.mutable_ec()->set_object_size(2 * bytes.size());
  options.original = slice;
  options.attributes = slice;
  Result<wire::ObjectRecord> sliced = testing::put(*store_, {bucket_, "slice"}, bytes, options);
  ASSERT_TRUE(sliced) << sliced.status();
  EXPECT_EQ(sliced->block_size(), 0u);
  EXPECT_EQ(sliced->block_xxh3_size(), 0);
  EXPECT_FALSE(has_block_sums(*sliced)) << "a slice is checked whole";
}

TEST_F(StoreBlockSumsTest, UpdateKeepsTheSumsAndSetBlockSumsChangesOnlyThem) {
  const std::string bytes = bytes_of(kBlockSize + 1);
  const ObjectRef object{bucket_, "o"};
  ASSERT_TRUE(testing::put(*store_, object, bytes));
  Result<wire::ObjectRecord> updated = run(store_->update(
      object,
      [](wire::ObjectRecord& r) {
        set_block_sums(r, 0, {});
        r.set_content_type("text/plain");
        return Status::ok();
      },
      Durability::kPageCache));
  ASSERT_TRUE(updated) << updated.status();
  EXPECT_EQ(updated->content_type(), "text/plain");
  EXPECT_EQ(sums_of(*updated), expected_sums(bytes)) << "update() keeps what describes the bytes";

  // A record written before block sums: as an old one would read.
  wire::ObjectRecord old = *updated;
  set_block_sums(old, 0, {});
  store_.reset();
  ASSERT_TRUE(testing::write_raw_record(dir_.sub("mp1"), bucket_, "o", wire::encode(old)));
  store_ = testing::open_store({dir_.sub("mp1")});
  Result<OpenObject> opened = run(store_->open(object));
  ASSERT_TRUE(opened) << opened.status();
  EXPECT_FALSE(has_block_sums(opened->record()));
  Result<FileSums> sums = sums_of_fd(opened->fd(), opened->record().size());
  ASSERT_TRUE(sums) << sums.status();
  EXPECT_EQ(sums->xxh3, old.xxh3());
  EXPECT_EQ(sums->blocks, expected_sums(bytes));

  const uint64_t generation = old.generation();
  EXPECT_EQ(run(store_->set_block_sums(object, generation + 1, kBlockSize, sums->blocks)).code(), Code::kAborted);
  EXPECT_EQ(run(store_->set_block_sums(object, generation, kBlockSize, {1})).code(), Code::kInvalidArgument);
  EXPECT_EQ(run(store_->set_block_sums({bucket_, "none"}, generation, kBlockSize, sums->blocks)).code(),
            Code::kNotFound);
  ASSERT_TRUE(run(store_->stat(object))->block_xxh3().empty()) << "a refused call changes nothing";
  ASSERT_EQ(run(store_->set_block_sums(object, generation, kBlockSize, sums->blocks)), Status::ok());
  Result<wire::ObjectRecord> now = run(store_->stat(object));
  ASSERT_TRUE(now) << now.status();
  wire::ObjectRecord expected = old;
  set_block_sums(expected, kBlockSize, sums->blocks);
  EXPECT_EQ(wire::encode(*now), wire::encode(expected)) << "no other field changed";
}

TEST_F(StoreBlockSumsTest, AVerifierHashesOnlyTheBlocksARangeTouches) {
  const std::string bytes = bytes_of(4 * kBlockSize + 100);
  const ObjectRef object{bucket_, "o"};
  ASSERT_TRUE(testing::put(*store_, object, bytes));
  flip_byte(2 * kBlockSize + 7);  // block 2
  Result<OpenObject> opened = run(store_->open(object));
  ASSERT_TRUE(opened) << opened.status();

  BlockVerifier verifier(*opened, ReadCheck::kVerify);
  EXPECT_EQ(verifier.verified_bytes(10, 100), 0u) << "nothing is verified before verify()";
  // A range inside blocks 0 and 1: both verify, block 2 is never read.
  ASSERT_EQ(verifier.verify(10), Status::ok());
  EXPECT_EQ(verifier.verified_bytes(10, 2 * kBlockSize), kBlockSize - 10);
  ASSERT_EQ(verifier.verify(kBlockSize), Status::ok());
  EXPECT_EQ(verifier.verified_bytes(10, 2 * kBlockSize - 10), 2 * kBlockSize - 10) << "a run of blocks in order";
  EXPECT_EQ(verifier.blocks_hashed(), 2u);
  EXPECT_EQ(verifier.bytes_hashed(), 2 * kBlockSize);
  // The last, short block is good too.
  ASSERT_EQ(verifier.verify(4 * kBlockSize + 99), Status::ok());
  EXPECT_EQ(verifier.verified_bytes(4 * kBlockSize, 1000), 100u);
  // The corrupt block is found, named, and never counted as verified.
  const Status bad = verifier.verify(2 * kBlockSize + 1000);
  EXPECT_EQ(bad.code(), Code::kDataLoss) << bad;
  EXPECT_NE(bad.message().find(fmt::format("do not match their checksum (block 2 at {}", 2 * kBlockSize)),
            std::string::npos)
      << bad;
  EXPECT_EQ(verifier.verified_bytes(2 * kBlockSize, 10), 0u);

  BlockVerifier unchecked(*opened, ReadCheck::kNone);
  EXPECT_EQ(unchecked.verified_bytes(2 * kBlockSize, 10), 10u);
  EXPECT_EQ(unchecked.verify(2 * kBlockSize), Status::ok());
  EXPECT_EQ(unchecked.bytes_hashed(), 0u);
}

TEST_F(StoreBlockSumsTest, AVerifierChecksACachedBlockOnTheCallersThreadAndLeavesTheRestToTheDisk) {
  const std::string bytes = bytes_of(3 * kBlockSize + 10);
  const ObjectRef object{bucket_, "o"};
  ASSERT_TRUE(testing::put(*store_, object, bytes));
  flip_byte(2 * kBlockSize + 3);  // block 2; the file's pages stay in the page cache
  Result<OpenObject> opened = run(store_->open(object));
  ASSERT_TRUE(opened) << opened.status();

  BlockVerifier verifier(*opened, ReadCheck::kVerify);
  const std::optional<Status> first = verifier.verify_cached(5);
  ASSERT_TRUE(first.has_value()) << "a block just written is in the page cache";
  EXPECT_EQ(*first, Status::ok());
  EXPECT_EQ(verifier.verified_bytes(5, 100), 100u);
  const std::optional<Status> bad = verifier.verify_cached(2 * kBlockSize);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->code(), Code::kDataLoss) << *bad;
  EXPECT_NE(bad->message().find("block 2"), std::string::npos) << *bad;
  EXPECT_EQ(verifier.verified_bytes(2 * kBlockSize, 1), 0u) << "a corrupt block is never verified";

  // Out of the page cache, the block is left to verify() on a disk executor.
  ASSERT_EQ(::fdatasync(opened->fd()), 0);
  ASSERT_EQ(::posix_fadvise(opened->fd(), 0, 0, POSIX_FADV_DONTNEED), 0);
  EXPECT_FALSE(verifier.verify_cached(3 * kBlockSize).has_value());
  EXPECT_EQ(verifier.verify(3 * kBlockSize), Status::ok());
  EXPECT_EQ(verifier.verified_bytes(3 * kBlockSize, 10), 10u);

  // So is a record without block sums (the whole file would be hashed).
  wire::ObjectRecord old = opened->record();
  set_block_sums(old, 0, {});
  const OpenObject legacy(::dup(opened->fd()), old);
  BlockVerifier whole(legacy, ReadCheck::kVerify);
  EXPECT_FALSE(whole.verify_cached(0).has_value());
  BlockVerifier unchecked(legacy, ReadCheck::kNone);
  const std::optional<Status> none = unchecked.verify_cached(0);
  ASSERT_TRUE(none.has_value()) << "nothing to check, nothing to wait for";
  EXPECT_EQ(*none, Status::ok());
}

TEST_F(StoreBlockSumsTest, ARecordWithoutSumsIsVerifiedWholeOnce) {
  const std::string bytes = bytes_of(2 * kBlockSize + 5);
  ASSERT_TRUE(testing::put(*store_, {bucket_, "o"}, bytes));
  Result<OpenObject> opened = run(store_->open({bucket_, "o"}));
  ASSERT_TRUE(opened) << opened.status();
  wire::ObjectRecord old = opened->record();
  set_block_sums(old, 0, {});
  const int fd = ::dup(opened->fd());
  const OpenObject legacy(fd, old);
  BlockVerifier verifier(legacy, ReadCheck::kVerify);
  ASSERT_EQ(verifier.verify(kBlockSize + 3), Status::ok());
  EXPECT_EQ(verifier.verified_bytes(0, bytes.size()), bytes.size()) << "all of it, from one check";
  EXPECT_EQ(verifier.bytes_hashed(), bytes.size());

  flip_byte(2 * kBlockSize + 1);
  BlockVerifier after(legacy, ReadCheck::kVerify);
  const Status bad = after.verify(0);  // block 0 is good, but only the whole file is known
  EXPECT_EQ(bad.code(), Code::kDataLoss) << bad;
  EXPECT_NE(bad.message().find("XXH3"), std::string::npos) << bad;
}

TEST_F(StoreBlockSumsTest, AShortFileIsDataLossAtOpenOrNamingTheBlock) {
  const std::string bytes = bytes_of(3 * kBlockSize);
  ASSERT_TRUE(testing::put(*store_, {bucket_, "o"}, bytes));
  // Cut before the open: the open compares the file's size with the record's.
  ASSERT_EQ(::truncate(object_file().c_str(), static_cast<off_t>(2 * kBlockSize + 10)), 0);
  const Result<OpenObject> refused = run(store_->open({bucket_, "o"}));
  EXPECT_EQ(refused.status().code(), Code::kDataLoss) << refused.status();
  EXPECT_NE(refused.status().message().find("its record says"), std::string::npos) << refused.status();

  // Cut after the open (the descriptor was handed out whole): the block that runs short
  // is named.
  ASSERT_TRUE(testing::put(*store_, {bucket_, "o"}, bytes));
  Result<OpenObject> opened = run(store_->open({bucket_, "o"}));
  ASSERT_TRUE(opened) << opened.status();
  ASSERT_EQ(::truncate(object_file().c_str(), static_cast<off_t>(2 * kBlockSize + 10)), 0);
  BlockVerifier verifier(*opened, ReadCheck::kVerify);
  EXPECT_EQ(verifier.verify(0), Status::ok());
  const Status bad = verifier.verify(2 * kBlockSize);
  EXPECT_EQ(bad.code(), Code::kDataLoss) << bad;
  EXPECT_NE(bad.message().find("block 2"), std::string::npos) << bad;
  EXPECT_EQ(sums_of_fd(opened->fd(), bytes.size()).status().code(), Code::kDataLoss);
}

}  // namespace
}  // namespace silo::store
