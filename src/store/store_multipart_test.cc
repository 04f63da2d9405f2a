#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "base/clock.h"
#include "base/hash.h"
#include "store/block_sums.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::files_under;
using testing::get;
using testing::run;

constexpr uint64_t kMinPartSize = 8;

// MD5 straight from OpenSSL, independent of the store's Md5Stream.
std::string md5_raw(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_md5(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string hex(std::string_view raw) {
  std::string out;
  for (const unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

std::string md5_hex(std::string_view data) { return hex(md5_raw(data)); }

Awaitable<Result<wire::ObjectRecord>> write_part(Store& store, ObjectRef object,
                                                 std::string upload_id, int part_number,
                                                 std::string data, PutOptions options) {
  CO_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> writer,
                      co_await store.create_part(object, upload_id, part_number, std::move(options)));
  CO_RETURN_IF_ERROR(co_await writer->write(std::span<const char>(data.data(), data.size())));
  co_return co_await writer->commit();
}

class StoreMultipartTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = open(); }

  std::vector<std::string> mountpaths() const {
    return {dir_.sub("mp1"), dir_.sub("mp2"), dir_.sub("mp3")};
  }
  std::unique_ptr<Store> open() const {
    StoreOptions options;
    options.mountpaths = mountpaths();
    options.threads_per_mountpath = 2;
    options.min_part_size = kMinPartSize;
    Result<std::unique_ptr<Store>> store = Store::open(std::move(options));
    EXPECT_TRUE(store) << store.status();
    return store ? std::move(*store) : nullptr;
  }
  // Every regular file below `sub` of every mountpath.
  size_t count_files(const std::string& sub) const {
    size_t count = 0;
    for (const std::string& mp : mountpaths()) count += files_under(mp + "/" + sub).size();
    return count;
  }

  UploadInfo create(const std::string& name, wire::ObjectRecord attributes = {}) {
    Result<UploadInfo> upload = run(store_->create_upload({bucket_, name}, std::move(attributes), {}));
    EXPECT_TRUE(upload) << upload.status();
    return upload ? *upload : UploadInfo{};
  }
  Result<wire::ObjectRecord> part(const std::string& name, const std::string& upload_id,
                                  int number, const std::string& data,
                                  PutOptions options = testing::fast()) {
    return run(write_part(*store_, {bucket_, name}, upload_id, number, data, std::move(options)));
  }
  Result<wire::ObjectRecord> complete(const std::string& name, const std::string& upload_id,
                                      std::vector<CompletePart> parts,
                                      PutOptions options = testing::fast()) {
    return run(store_->complete_upload({bucket_, name}, upload_id, std::move(parts),
                                       std::move(options)));
  }
  static UploadListOptions page(std::string prefix, std::string key_marker = "",
                                std::string upload_id_marker = "", size_t limit = 1000) {
    UploadListOptions options;
    options.prefix = std::move(prefix);
    options.key_marker = std::move(key_marker);
    options.upload_id_marker = std::move(upload_id_marker);
    options.limit = limit;
    return options;
  }
  std::vector<std::string> listed_ids(const UploadListOptions& options, bool* is_truncated = nullptr) {
    Result<UploadList> list = run(store_->list_uploads(bucket_, options));
    EXPECT_TRUE(list) << list.status();
    std::vector<std::string> ids;
    if (!list) return ids;
    for (const UploadInfo& upload : list->uploads) ids.push_back(upload.name + "|" + upload.upload_id);
    if (is_truncated != nullptr) *is_truncated = list->is_truncated;
    return ids;
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  const BucketId bucket_{11};
};

TEST_F(StoreMultipartTest, ThreePartsMakeOneObjectWithTheMultipartEtag) {
  wire::ObjectRecord attributes;
  attributes.set_content_type("video/mp4");
  (*attributes.mutable_user_metadata())["camera"] = "front";
  (*attributes.mutable_tags())["kind"] = "raw";
  const UploadInfo upload = create("movies/a.mp4", attributes);
  ASSERT_EQ(upload.upload_id.size(), 32u);
  EXPECT_EQ(upload.name, "movies/a.mp4");
  EXPECT_GT(upload.initiated_unix_nanos, 0);

  const std::vector<std::string> data = {std::string(4096, 'a') + "1", std::string(10, 'b'),
                                         "tail"};
  std::vector<CompletePart> parts;
  for (int i = 0; i < 3; ++i) {
    Result<wire::ObjectRecord> record = part("movies/a.mp4", upload.upload_id, i + 1, data[i]);
    ASSERT_TRUE(record) << record.status();
    EXPECT_EQ(record->size(), data[i].size());
    EXPECT_EQ(record->md5_hex(), md5_hex(data[i]));
    parts.push_back({i + 1, i == 1 ? "\"" + record->md5_hex() + "\"" : record->md5_hex()});
  }
  Result<UploadInfo> got = run(store_->get_upload({bucket_, "movies/a.mp4"}, upload.upload_id));
  ASSERT_TRUE(got) << got.status();
  EXPECT_EQ(got->attributes.content_type(), "video/mp4");

  PutOptions options;  // kFsync: the path a real completion takes
  Result<wire::ObjectRecord> record = complete("movies/a.mp4", upload.upload_id, parts, options);
  ASSERT_TRUE(record) << record.status();

  const std::string expected_etag =
      hex(md5_raw(md5_raw(data[0]) + md5_raw(data[1]) + md5_raw(data[2]))) + "-3";
  EXPECT_EQ(record->etag(), expected_etag);
  EXPECT_TRUE(record->md5_hex().empty());
  EXPECT_EQ(record->size(), data[0].size() + data[1].size() + data[2].size());
  ASSERT_EQ(record->parts_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(record->parts(i).size(), data[i].size());
    EXPECT_EQ(record->parts(i).etag_hex(), md5_hex(data[i]));
  }
  Result<wire::ObjectRecord> stat = run(store_->stat({bucket_, "movies/a.mp4"}));
  ASSERT_TRUE(stat) << stat.status();
  EXPECT_EQ(stat->etag(), expected_etag);
  EXPECT_EQ(stat->content_type(), "video/mp4");
  EXPECT_EQ(stat->user_metadata().at("camera"), "front");
  EXPECT_EQ(stat->tags().at("kind"), "raw");
  EXPECT_EQ(*get(*store_, {bucket_, "movies/a.mp4"}), data[0] + data[1] + data[2]);

  // The listing shows the multipart ETag.
  Result<ListResult> list = run(store_->list(bucket_, {}));
  ASSERT_TRUE(list) << list.status();
  ASSERT_EQ(list->entries.size(), 1u);
  EXPECT_EQ(list->entries[0].md5_hex(), expected_etag);

  // The upload is gone with all its files.
  EXPECT_EQ(run(store_->get_upload({bucket_, "movies/a.mp4"}, upload.upload_id)).status().reason(),
            "NoSuchUpload");
  EXPECT_EQ(count_files("parts"), 0u);
  EXPECT_EQ(count_files("work"), 0u);
  EXPECT_EQ(count_files("obj"), 1u);
  EXPECT_TRUE(listed_ids({}).empty());
}

TEST_F(StoreMultipartTest, AnUploadKeepsItsChecksumAlgorithmAndType) {
  Result<UploadInfo> created = run(store_->create_upload({bucket_, "summed"}, {}, UploadChecksum{"CRC32C", "FULL_OBJECT"}));
  ASSERT_TRUE(created) << created.status();
  EXPECT_EQ(created->checksum, (UploadChecksum{"CRC32C", "FULL_OBJECT"}));
  Result<UploadInfo> got = run(store_->get_upload({bucket_, "summed"}, created->upload_id));
  ASSERT_TRUE(got) << got.status();
  EXPECT_EQ(got->checksum, (UploadChecksum{"CRC32C", "FULL_OBJECT"}));
  EXPECT_EQ(create("plain").checksum, UploadChecksum{});
}

TEST_F(StoreMultipartTest, AnAssembledObjectHasTheBlockSumsOfItsWholeBytes) {
  // Parts whose edges fall inside blocks: the sums are of the object's blocks, not the parts'.
  const UploadInfo upload = create("big");
  const std::vector<std::string> data = {std::string(700 * 1024, 'a'), std::string(900 * 1024 + 3, 'b'),
                                         std::string(1024 * 1024, 'c'), "tail"};
  std::vector<CompletePart> parts;
  std::string whole;
  for (int i = 0; i < 4; ++i) {
    Result<wire::ObjectRecord> record = part("big", upload.upload_id, i + 1, data[i]);
    ASSERT_TRUE(record) << record.status();
    parts.push_back({i + 1, record->md5_hex()});
    whole += data[i];
  }
  Result<wire::ObjectRecord> record = complete("big", upload.upload_id, parts);
  ASSERT_TRUE(record) << record.status();
  std::vector<uint64_t> expected;
  for (size_t at = 0; at < whole.size(); at += kBlockSize) {
    hash::Xxh3Stream block;
    const std::string_view bytes = std::string_view(whole).substr(at, kBlockSize);
    block.update(std::span<const char>(bytes.data(), bytes.size()));
    expected.push_back(block.digest());
  }
  ASSERT_GT(expected.size(), 2u);
  Result<wire::ObjectRecord> stat = run(store_->stat({bucket_, "big"}));
  ASSERT_TRUE(stat) << stat.status();
  EXPECT_EQ(stat->block_size(), kBlockSize);
  EXPECT_EQ(std::vector<uint64_t>(stat->block_xxh3().begin(), stat->block_xxh3().end()), expected);
  EXPECT_TRUE(has_block_sums(*stat));
}

TEST_F(StoreMultipartTest, CompletionReplacesAnExistingObject) {
  const ObjectRef object{bucket_, "doc"};
  ASSERT_TRUE(testing::put(*store_, object, "old single-part bytes"));
  const UploadInfo upload = create("doc");
  Result<wire::ObjectRecord> p1 = part("doc", upload.upload_id, 1, "new bytes");
  ASSERT_TRUE(p1) << p1.status();
  ASSERT_TRUE(complete("doc", upload.upload_id, {{1, p1->md5_hex()}}));
  EXPECT_EQ(*get(*store_, object), "new bytes");
  EXPECT_EQ(count_files("obj"), 1u);
}

TEST_F(StoreMultipartTest, ReuploadedPartReplacesTheOldOne) {
  const UploadInfo upload = create("r");
  Result<wire::ObjectRecord> first = part("r", upload.upload_id, 1, "first version");
  ASSERT_TRUE(first) << first.status();
  Result<wire::ObjectRecord> second = part("r", upload.upload_id, 1, "second version!");
  ASSERT_TRUE(second) << second.status();
  EXPECT_EQ(count_files("parts"), 1u);

  Result<std::vector<PartInfo>> parts = run(store_->list_parts({bucket_, "r"}, upload.upload_id));
  ASSERT_TRUE(parts) << parts.status();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].etag_hex, md5_hex("second version!"));
  EXPECT_EQ((*parts)[0].size, 15u);

  EXPECT_EQ(complete("r", upload.upload_id, {{1, first->md5_hex()}}).status().reason(),
            "InvalidPart");
  ASSERT_TRUE(complete("r", upload.upload_id, {{1, second->md5_hex()}}));
  EXPECT_EQ(*get(*store_, {bucket_, "r"}), "second version!");
}

TEST_F(StoreMultipartTest, InvalidListsLeaveTheUploadUsable) {
  const UploadInfo upload = create("v");
  Result<wire::ObjectRecord> p1 = part("v", upload.upload_id, 1, "tiny");  // under 8 bytes
  Result<wire::ObjectRecord> p2 = part("v", upload.upload_id, 2, "0123456789");
  Result<wire::ObjectRecord> p3 = part("v", upload.upload_id, 3, "x");
  ASSERT_TRUE(p1 && p2 && p3);
  const std::string e1 = p1->md5_hex(), e2 = p2->md5_hex(), e3 = p3->md5_hex();

  auto reason = [&](std::vector<CompletePart> parts) {
    Result<wire::ObjectRecord> r = complete("v", upload.upload_id, std::move(parts));
    EXPECT_FALSE(r);
    if (r) return std::string("ok");
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status();
    return r.status().reason();
  };
  EXPECT_EQ(reason({{1, e1}, {2, "00000000000000000000000000000000"}}), "InvalidPart");
  EXPECT_EQ(reason({{2, e2}, {4, e3}}), "InvalidPart");  // never uploaded
  EXPECT_EQ(reason({{2, e2}, {1, e1}}), "InvalidPartOrder");
  EXPECT_EQ(reason({{2, e2}, {2, e2}}), "InvalidPartOrder");
  EXPECT_EQ(reason({{1, e1}, {2, e2}}), "EntityTooSmall");
  EXPECT_EQ(reason({}), "MalformedXML");
  EXPECT_EQ(count_files("work"), 0u);

  // Part 2 alone, or 2 then a small last part, is fine; part 1 is dropped with the upload.
  Result<wire::ObjectRecord> record = complete("v", upload.upload_id, {{2, e2}, {3, e3}});
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(*get(*store_, {bucket_, "v"}), "0123456789x");
  EXPECT_EQ(count_files("parts"), 0u);
}

TEST_F(StoreMultipartTest, BadPartNumbersAndUploadIds) {
  const UploadInfo upload = create("n");
  Result<std::unique_ptr<ObjectWriter>> writer =
      run(store_->create_part({bucket_, "n"}, upload.upload_id, 0, testing::fast()));
  EXPECT_EQ(writer.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(writer.status().reason(), "InvalidArgument");
  writer = run(store_->create_part({bucket_, "n"}, upload.upload_id, 10001, testing::fast()));
  EXPECT_EQ(writer.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(part("n", upload.upload_id, 10000, "last number"));

  for (const std::string& id : {std::string("../../../etc"), std::string(32, 'A'),
                               std::string(32, '0'), std::string()}) {
    writer = run(store_->create_part({bucket_, "n"}, id, 1, testing::fast()));
    EXPECT_EQ(writer.status().reason(), "NoSuchUpload") << id;
    EXPECT_EQ(run(store_->abort_upload({bucket_, "n"}, id)).reason(), "NoSuchUpload") << id;
  }
  // The id belongs to one object.
  EXPECT_EQ(run(store_->get_upload({bucket_, "other"}, upload.upload_id)).status().reason(),
            "NoSuchUpload");
}

// An assembled upload (what an erasure-coded completion codes): claimed while it lives;
// discarded, the upload is as it was; sealed then finished, the upload is gone and no
// object was installed here (its bytes went elsewhere, as slices).
TEST_F(StoreMultipartTest, AnAssembledUploadIsClaimedUntilItEndsAndFinishedSealedItIsForgotten) {
  const ObjectRef object{bucket_, "assembled"};
  const UploadInfo upload = create(object.name);
  const std::string bytes = std::string(kMinPartSize, 'a') + "tail";
  Result<wire::ObjectRecord> p1 = part(object.name, upload.upload_id, 1, bytes.substr(0, kMinPartSize));
  Result<wire::ObjectRecord> p2 = part(object.name, upload.upload_id, 2, "tail");
  ASSERT_TRUE(p1 && p2);
  const std::vector<CompletePart> parts = {{1, p1->md5_hex()}, {2, p2->md5_hex()}};

  Result<std::unique_ptr<ObjectWriter>> assembled =
      run(store_->assemble_upload(object, upload.upload_id, parts, testing::fast()));
  ASSERT_TRUE(assembled) << assembled.status();
  EXPECT_EQ(complete(object.name, upload.upload_id, parts).status().reason(), "NoSuchUpload") << "claimed";
  EXPECT_EQ(run(store_->abort_upload(object, upload.upload_id)).reason(), "NoSuchUpload") << "claimed";
  EXPECT_FALSE(run((*assembled)->write(std::string_view("more"))).is_ok());
  const Result<int> fd = (*assembled)->open_reader();
  ASSERT_TRUE(fd) << fd.status();
  std::string read(bytes.size() + 1, '\0');
  EXPECT_EQ(::pread(*fd, read.data(), read.size(), 0), static_cast<ssize_t>(bytes.size()));
  ::close(*fd);
  EXPECT_EQ(read.substr(0, bytes.size()), bytes);
  run((*assembled)->discard());
  assembled->reset();
  EXPECT_TRUE(run(store_->list_parts(object, upload.upload_id))) << "discarded: the upload is as it was";

  assembled = run(store_->assemble_upload(object, upload.upload_id, parts, testing::fast()));
  ASSERT_TRUE(assembled) << assembled.status();
  const Result<wire::ObjectRecord> sealed = run((*assembled)->seal());
  ASSERT_TRUE(sealed) << sealed.status();
  EXPECT_EQ(sealed->size(), bytes.size());
  EXPECT_EQ(sealed->parts_size(), 2);
  EXPECT_TRUE(sealed->etag().ends_with("-2")) << sealed->etag();
  EXPECT_EQ(sealed->generation(), 0u);
  run((*assembled)->finish_sealed());
  assembled->reset();
  EXPECT_EQ(run(store_->list_parts(object, upload.upload_id)).status().reason(), "NoSuchUpload");
  EXPECT_EQ(run(store_->stat(object)).status().code(), Code::kNotFound) << "installed elsewhere, not here";
  EXPECT_EQ(count_files("parts"), 0u);
  EXPECT_EQ(count_files("work"), 0u);
}

TEST_F(StoreMultipartTest, NoSuchUploadAfterAbortAndAfterComplete) {
  const UploadInfo aborted = create("x");
  ASSERT_TRUE(part("x", aborted.upload_id, 1, "some bytes"));
  // A part whose upload is aborted while it is written does not commit.
  Result<std::unique_ptr<ObjectWriter>> late =
      run(store_->create_part({bucket_, "x"}, aborted.upload_id, 2, testing::fast()));
  ASSERT_TRUE(late) << late.status();
  ASSERT_TRUE(run((*late)->write(std::string_view("late bytes"))).is_ok());
  ASSERT_TRUE(run(store_->abort_upload({bucket_, "x"}, aborted.upload_id)).is_ok());
  EXPECT_EQ(run((*late)->commit()).status().reason(), "NoSuchUpload");
  late->reset();

  const UploadInfo completed = create("x");
  Result<wire::ObjectRecord> p1 = part("x", completed.upload_id, 1, "some bytes");
  ASSERT_TRUE(p1);
  ASSERT_TRUE(complete("x", completed.upload_id, {{1, p1->md5_hex()}}));

  for (const UploadInfo& upload : {aborted, completed}) {
    const ObjectRef object{bucket_, "x"};
    EXPECT_EQ(run(store_->get_upload(object, upload.upload_id)).status().reason(), "NoSuchUpload");
    EXPECT_EQ(run(store_->list_parts(object, upload.upload_id)).status().reason(), "NoSuchUpload");
    EXPECT_EQ(run(store_->create_part(object, upload.upload_id, 1, testing::fast())).status().reason(),
              "NoSuchUpload");
    EXPECT_EQ(complete("x", upload.upload_id, {{1, p1->md5_hex()}}).status().reason(),
              "NoSuchUpload");
    const Status status = run(store_->abort_upload(object, upload.upload_id));
    EXPECT_EQ(status.code(), Code::kNotFound);
    EXPECT_EQ(status.reason(), "NoSuchUpload");
  }
  EXPECT_EQ(*get(*store_, {bucket_, "x"}), "some bytes");
  EXPECT_EQ(count_files("parts"), 0u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (count_files("work") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(count_files("work"), 0u);
}

TEST_F(StoreMultipartTest, PreconditionOfCompletionKeepsTheUpload) {
  ASSERT_TRUE(testing::put(*store_, {bucket_, "p"}, "exists"));
  const UploadInfo upload = create("p");
  Result<wire::ObjectRecord> p1 = part("p", upload.upload_id, 1, "bytes");
  ASSERT_TRUE(p1);
  PutOptions options = testing::fast();
  options.precondition = [](const wire::ObjectRecord* current) {
    if (current != nullptr) return Status::failed_precondition("exists").with_reason("PreconditionFailed");
    return Status::ok();
  };
  EXPECT_EQ(complete("p", upload.upload_id, {{1, p1->md5_hex()}}, options).status().reason(),
            "PreconditionFailed");
  EXPECT_EQ(*get(*store_, {bucket_, "p"}), "exists");
  EXPECT_EQ(count_files("work"), 0u);
  ASSERT_TRUE(run(store_->get_upload({bucket_, "p"}, upload.upload_id)));
  ASSERT_TRUE(complete("p", upload.upload_id, {{1, p1->md5_hex()}}));
  EXPECT_EQ(*get(*store_, {bucket_, "p"}), "bytes");
}

TEST_F(StoreMultipartTest, ConcurrentCompleteAndAbortHaveOneWinner) {
  for (int round = 0; round < 8; ++round) {
    const std::string name = fmt::format("race{}", round);
    const UploadInfo upload = create(name);
    std::vector<CompletePart> parts;
    for (int i = 1; i <= 3; ++i) {
      Result<wire::ObjectRecord> p = part(name, upload.upload_id, i, std::string(64 * 1024, 'a' + i));
      ASSERT_TRUE(p) << p.status();
      parts.push_back({i, p->md5_hex()});
    }
    boost::asio::io_context io;
    std::optional<Result<wire::ObjectRecord>> completed;
    std::optional<Result<wire::ObjectRecord>> completed_again;
    std::optional<Status> aborted;
    const ObjectRef object{bucket_, name};
    // Alternate who starts first.
    auto spawn_complete = [&](std::optional<Result<wire::ObjectRecord>>& out) {
      boost::asio::co_spawn(
          io,
          [&]() -> Awaitable<void> {
            out.emplace(co_await store_->complete_upload(object, upload.upload_id, parts,
                                                         testing::fast()));
          },
          boost::asio::detached);
    };
    auto spawn_abort = [&] {
      boost::asio::co_spawn(
          io,
          [&]() -> Awaitable<void> {
            aborted.emplace(co_await store_->abort_upload(object, upload.upload_id));
          },
          boost::asio::detached);
    };
    if (round % 2 == 0) {
      spawn_complete(completed);
      spawn_abort();
      spawn_complete(completed_again);
    } else {
      spawn_abort();
      spawn_complete(completed);
      spawn_complete(completed_again);
    }
    io.run();
    ASSERT_TRUE(completed && completed_again && aborted);
    const int winners = (*completed ? 1 : 0) + (*completed_again ? 1 : 0) + (aborted->is_ok() ? 1 : 0);
    EXPECT_EQ(winners, 1) << "round " << round;
    for (const Status& status :
         {completed->status(), completed_again->status(), *aborted}) {
      if (!status.is_ok()) {
        EXPECT_EQ(status.reason(), "NoSuchUpload") << status;
      }
    }
    const bool is_completed = *completed || *completed_again;
    EXPECT_EQ(run(store_->stat(object)).has_value(), is_completed);
    if (is_completed) {
      EXPECT_EQ(*get(*store_, object), std::string(64 * 1024, 'b') + std::string(64 * 1024, 'c') +
                                            std::string(64 * 1024, 'd'));
    }
  }
  EXPECT_EQ(count_files("parts"), 0u);
  EXPECT_EQ(count_files("work"), 0u);
  EXPECT_TRUE(listed_ids({}).empty());
}

TEST_F(StoreMultipartTest, ConcurrentPartsOfOneUpload) {
  const UploadInfo upload = create("many");
  boost::asio::io_context io;
  constexpr int kParts = 24;
  int done = 0;
  for (int i = 1; i <= kParts; ++i) {
    boost::asio::co_spawn(
        io,
        [&, i]() -> Awaitable<void> {
          // Part numbers 1..12 are written twice, concurrently.
          // Arguments built outside the co_await expression: GCC 12 destroys a braced
          // temporary passed to a coroutine there twice.
          const int number = (i - 1) % 12 + 1;
          const ObjectRef object{bucket_, "many"};
          const std::string data(16, static_cast<char>('a' + number));
          Result<wire::ObjectRecord> r = co_await write_part(*store_, object, upload.upload_id,
                                                             number, data, testing::fast());
          EXPECT_TRUE(r) << r.status();
          ++done;
        },
        boost::asio::detached);
  }
  io.run();
  EXPECT_EQ(done, kParts);
  Result<std::vector<PartInfo>> parts = run(store_->list_parts({bucket_, "many"}, upload.upload_id));
  ASSERT_TRUE(parts) << parts.status();
  ASSERT_EQ(parts->size(), 12u);
  EXPECT_EQ(count_files("parts"), 12u);
  std::vector<CompletePart> list;
  std::string expected;
  for (const PartInfo& p : *parts) {
    list.push_back({p.part_number, p.etag_hex});
    expected += std::string(16, static_cast<char>('a' + p.part_number));
  }
  ASSERT_TRUE(complete("many", upload.upload_id, list));
  EXPECT_EQ(*get(*store_, {bucket_, "many"}), expected);
}

TEST_F(StoreMultipartTest, ListPartsIsAscendingWithChecksums) {
  const UploadInfo upload = create("lp");
  for (const int number : {3, 1, 2}) {
    Result<std::unique_ptr<ObjectWriter>> writer =
        run(store_->create_part({bucket_, "lp"}, upload.upload_id, number, testing::fast()));
    ASSERT_TRUE(writer) << writer.status();
    const std::string data(number * 10, 'z');
    ASSERT_TRUE(run((*writer)->write(data)).is_ok());
    (*writer)->set_checksum("CRC32", fmt::format("crc{}", number));
    Result<wire::ObjectRecord> record = run((*writer)->commit());
    ASSERT_TRUE(record) << record.status();
    EXPECT_EQ(record->checksums().at("CRC32"), fmt::format("crc{}", number));
  }
  Result<std::vector<PartInfo>> parts = run(store_->list_parts({bucket_, "lp"}, upload.upload_id));
  ASSERT_TRUE(parts) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const PartInfo& p = (*parts)[i];
    EXPECT_EQ(p.part_number, i + 1);
    EXPECT_EQ(p.size, static_cast<uint64_t>((i + 1) * 10));
    EXPECT_EQ(p.etag_hex, md5_hex(std::string((i + 1) * 10, 'z')));
    EXPECT_GT(p.mtime_unix_nanos, 0);
    EXPECT_EQ(p.checksums.at("CRC32"), fmt::format("crc{}", i + 1));
  }
}

TEST_F(StoreMultipartTest, PartChecksBadDigestAndIncompleteBody) {
  const UploadInfo upload = create("d");
  PutOptions options = testing::fast();
  options.expected_md5_hex = md5_hex("other");
  EXPECT_EQ(part("d", upload.upload_id, 1, "bytes", options).status().reason(), "BadDigest");
  options = testing::fast();
  options.expected_size = 100;
  EXPECT_EQ(part("d", upload.upload_id, 1, "bytes", options).status().reason(), "IncompleteBody");
  EXPECT_EQ(count_files("parts"), 0u);
  EXPECT_EQ(count_files("work"), 0u);
}

TEST_F(StoreMultipartTest, ListUploadsMergesMountpathsInKeyOrder) {
  // Names where one is a prefix of another, and a 0 byte, to test the key escaping.
  const std::vector<std::string> names = {"a",   "a/b", "a0",  "ab",  "b",
                                          "b/c", "k",   "k",   "k",   std::string("a\0z", 3),
                                          "z",   "\xc3\xa9t\xc3\xa9"};
  std::vector<std::string> expected;
  std::set<std::string> mountpath_ids;
  for (const std::string& name : names) {
    const UploadInfo upload = create(name);
    ASSERT_FALSE(upload.upload_id.empty());
    expected.push_back(name + "|" + upload.upload_id);
    ASSERT_TRUE(part(name, upload.upload_id, 1, "part bytes"));  // parts are not listed
  }
  std::sort(expected.begin(), expected.end(), [](const std::string& x, const std::string& y) {
    const size_t xs = x.rfind('|'), ys = y.rfind('|');
    return std::make_pair(x.substr(0, xs), x.substr(xs)) < std::make_pair(y.substr(0, ys), y.substr(ys));
  });
  // The uploads really are spread over more than one mountpath.
  size_t used = 0;
  for (const std::string& mp : mountpaths()) used += files_under(mp + "/parts").empty() ? 0 : 1;
  EXPECT_GT(used, 1u);

  bool is_truncated = true;
  EXPECT_EQ(listed_ids({}, &is_truncated), expected);
  EXPECT_FALSE(is_truncated);

  // Prefix.
  std::vector<std::string> with_a;
  for (const std::string& e : expected) {
    if (e.starts_with("a")) with_a.push_back(e);
  }
  EXPECT_EQ(listed_ids(page("a")), with_a);
  const std::vector<std::string> a_slash = listed_ids(page("a/"));
  ASSERT_EQ(a_slash.size(), 1u);
  EXPECT_TRUE(a_slash[0].starts_with("a/b|"));
  EXPECT_EQ(listed_ids(page(std::string("a\0", 2))).size(), 1u);
  EXPECT_TRUE(listed_ids(page("nothing")).empty());

  // key_marker alone: names after it; with upload_id_marker: later uploads of it too.
  auto after = [&](size_t index) {
    return std::vector<std::string>(expected.begin() + static_cast<long>(index), expected.end());
  };
  auto position = [&](const std::string& name) {
    return static_cast<size_t>(std::find_if(expected.begin(), expected.end(),
                                            [&](const std::string& e) {
                                              return e.substr(0, e.rfind('|')) == name;
                                            }) -
                               expected.begin());
  };
  EXPECT_EQ(listed_ids(page("", "a")), after(position("a") + 1));
  EXPECT_EQ(listed_ids(page("", "k")), after(position("k") + 3));
  const size_t first_k = position("k");
  const std::string first_k_id = expected[first_k].substr(expected[first_k].rfind('|') + 1);
  EXPECT_EQ(listed_ids(page("", "k", first_k_id)), after(first_k + 1));
  EXPECT_EQ(listed_ids(page("", "", first_k_id)), expected);  // ignored without a key

  // Pages of 5 with markers from the last entry cover everything once.
  std::vector<std::string> paged;
  UploadListOptions next = page("", "", "", 5);
  for (int i = 0; i < 10; ++i) {
    const std::vector<std::string> ids = listed_ids(next, &is_truncated);
    EXPECT_LE(ids.size(), 5u);
    paged.insert(paged.end(), ids.begin(), ids.end());
    if (!is_truncated) break;
    next.key_marker = ids.back().substr(0, ids.back().rfind('|'));
    next.upload_id_marker = ids.back().substr(ids.back().rfind('|') + 1);
  }
  EXPECT_FALSE(is_truncated);
  EXPECT_EQ(paged, expected);
}

TEST_F(StoreMultipartTest, SweepRemovesOnlyOldUploads) {
  const UploadInfo old1 = create("old1");
  const UploadInfo old2 = create("old2");
  ASSERT_TRUE(part("old1", old1.upload_id, 1, "bytes"));
  const int64_t cutoff = Clock::real().unix_nanos();
  const UploadInfo young = create("young");
  ASSERT_TRUE(part("young", young.upload_id, 1, "bytes"));

  Result<size_t> removed = run(store_->remove_uploads_initiated_before(cutoff));
  ASSERT_TRUE(removed) << removed.status();
  EXPECT_EQ(*removed, 2u);
  std::vector<std::string> left = listed_ids({});
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], "young|" + young.upload_id);
  EXPECT_EQ(count_files("parts"), 1u);
  EXPECT_EQ(*run(store_->remove_uploads_initiated_before(cutoff)), 0u);
}

TEST_F(StoreMultipartTest, RemoveBucketRemovesUploads) {
  const UploadInfo upload = create("in-bucket");
  ASSERT_TRUE(part("in-bucket", upload.upload_id, 1, "bytes"));
  const BucketId other{12};
  Result<UploadInfo> kept = run(store_->create_upload({other, "keep"}, {}, {}));
  ASSERT_TRUE(kept);
  ASSERT_TRUE(run(write_part(*store_, {other, "keep"}, kept->upload_id, 1, "kept", testing::fast())));

  ASSERT_TRUE(run(store_->remove_bucket(bucket_)).is_ok());
  EXPECT_TRUE(listed_ids({}).empty());
  EXPECT_EQ(run(store_->get_upload({bucket_, "in-bucket"}, upload.upload_id)).status().reason(),
            "NoSuchUpload");
  EXPECT_EQ(count_files("parts"), 1u);
  Result<UploadList> others = run(store_->list_uploads(other, {}));
  ASSERT_TRUE(others);
  EXPECT_EQ(others->uploads.size(), 1u);
}

TEST_F(StoreMultipartTest, ReopenAfterCrashMidUploadLeavesNoGarbage) {
  const UploadInfo a = create("a");
  Result<wire::ObjectRecord> a1 = part("a", a.upload_id, 1, "part one bytes");
  ASSERT_TRUE(a1);
  const UploadInfo c = create("c");
  ASSERT_TRUE(part("c", c.upload_id, 1, "lost part"));
  const std::vector<std::string> mps = mountpaths();
  // Find the mountpath holding each upload's parts.
  auto upload_dir = [&](const std::string& upload_id) -> std::string {
    for (const std::string& mp : mps) {
      const std::string dir = fmt::format("{}/parts/{}/{}", mp, bucket_.value(), upload_id);
      if (std::filesystem::exists(dir)) return dir;
    }
    return "";
  };
  const std::string a_dir = upload_dir(a.upload_id);
  const std::string c_dir = upload_dir(c.upload_id);
  ASSERT_FALSE(a_dir.empty());
  ASSERT_FALSE(c_dir.empty());
  store_.reset();  // no close(): the next open sees an unclean shutdown

  // What a crash can leave: a part work file, a part renamed but never recorded, the files
  // of an upload whose record is gone (completion or abort crashed before removing them),
  // and a recorded part whose file vanished.
  std::ofstream(mps[0] + "/work/00000000deadbeef") << "half a part";
  std::ofstream(a_dir + "/00002.00000000000000aa") << "renamed, not recorded";
  const std::string gone_dir = fmt::format("{}/parts/{}/{:032x}", mps[1], bucket_.value(), 7);
  std::filesystem::create_directories(gone_dir);
  std::ofstream(gone_dir + "/00001.0000000000000001") << "completed upload leftovers";
  std::ofstream(mps[2] + "/parts/stray") << "not ours";
  for (const std::string& file : files_under(c_dir)) std::filesystem::remove(c_dir + "/" + file);

  store_ = open();
  ASSERT_TRUE(store_);
  EXPECT_EQ(count_files("work"), 0u);
  EXPECT_FALSE(std::filesystem::exists(gone_dir));
  EXPECT_FALSE(std::filesystem::exists(mps[2] + "/parts/stray"));
  EXPECT_EQ(files_under(a_dir).size(), 1u);
  Result<std::vector<PartInfo>> c_parts = run(store_->list_parts({bucket_, "c"}, c.upload_id));
  ASSERT_TRUE(c_parts) << c_parts.status();
  EXPECT_TRUE(c_parts->empty());

  // Upload a survives whole and completes.
  Result<std::vector<PartInfo>> a_parts = run(store_->list_parts({bucket_, "a"}, a.upload_id));
  ASSERT_TRUE(a_parts) << a_parts.status();
  ASSERT_EQ(a_parts->size(), 1u);
  Result<wire::ObjectRecord> a2 = part("a", a.upload_id, 2, "!");
  ASSERT_TRUE(a2);
  ASSERT_TRUE(complete("a", a.upload_id, {{1, a1->md5_hex()}, {2, a2->md5_hex()}}));
  EXPECT_EQ(*get(*store_, {bucket_, "a"}), "part one bytes!");
  ASSERT_TRUE(run(store_->abort_upload({bucket_, "c"}, c.upload_id)).is_ok());
  EXPECT_EQ(count_files("parts"), 0u);

  // A clean close and reopen keeps the remaining state.
  const UploadInfo d = create("d");
  ASSERT_TRUE(part("d", d.upload_id, 1, "kept across restart"));
  store_->close();
  store_.reset();
  store_ = open();
  ASSERT_TRUE(store_);
  EXPECT_EQ(listed_ids({}), std::vector<std::string>{"d|" + d.upload_id});
  EXPECT_EQ(count_files("parts"), 1u);
}

}  // namespace
}  // namespace silo::store
