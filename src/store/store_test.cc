#include "store/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <set>
#include <thread>

#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::files_under;
using testing::get;
using testing::put;
using testing::run;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = testing::open_store({dir_.sub("mp1")}); }
  std::string obj_dir() const { return dir_.sub("mp1/obj"); }
  std::string work_dir() const { return dir_.sub("mp1/work"); }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  const BucketId bucket_{7};
};

TEST_F(StoreTest, PutThenOpenAndStat) {
  const ObjectRef object{bucket_, "photos/cat.jpg"};
  PutOptions options;  // kFsync: the default path a PUT takes
  options.attributes.set_content_type("image/jpeg");
  (*options.attributes.mutable_user_metadata())["owner"] = "alice";
  Result<wire::ObjectRecord> put_record = put(*store_, object, "meow meow", options);
  ASSERT_TRUE(put_record) << put_record.status();
  EXPECT_EQ(put_record->size(), 9u);
  EXPECT_NE(put_record->generation(), 0u);

  Result<std::string> bytes = get(*store_, object);
  ASSERT_TRUE(bytes) << bytes.status();
  EXPECT_EQ(*bytes, "meow meow");

  Result<wire::ObjectRecord> record = run(store_->stat(object));
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(record->name(), "photos/cat.jpg");
  EXPECT_EQ(record->size(), 9u);
  EXPECT_EQ(record->content_type(), "image/jpeg");
  EXPECT_EQ(record->user_metadata().at("owner"), "alice");
  EXPECT_EQ(record->generation(), put_record->generation());
  EXPECT_GT(record->mtime_unix_nanos(), 0);
  EXPECT_EQ(files_under(obj_dir()).size(), 1u);
  EXPECT_TRUE(files_under(work_dir()).empty());
}

TEST_F(StoreTest, Md5IsTheEtagOfTheBytes) {
  Result<wire::ObjectRecord> record = put(*store_, {bucket_, "a"}, "hello");
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(record->md5_hex(), "5d41402abc4b2a76b9719d911017c592");
  Result<wire::ObjectRecord> empty = put(*store_, {bucket_, "empty"}, "");
  ASSERT_TRUE(empty) << empty.status();
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(empty->md5_hex(), "d41d8cd98f00b204e9800998ecf8427e");
}

// A fetched object skips MD5 (its ETag is the backend's) but keeps its XXH3; a Content-MD5
// to check still hashes it.
TEST_F(StoreTest, SkipsMd5WhenAskedUnlessAnMd5IsToBeChecked) {
  PutOptions skipping;
  skipping.skips_md5 = true;
  Result<wire::ObjectRecord> record = put(*store_, {bucket_, "fetched"}, "hello", skipping);
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(record->md5_hex(), "");
  EXPECT_EQ(record->size(), 5u);
  EXPECT_NE(record->xxh3(), 0u);
  PutOptions checked = skipping;
  checked.expected_md5_hex = "5d41402abc4b2a76b9719d911017c592";
  Result<wire::ObjectRecord> verified = put(*store_, {bucket_, "checked"}, "hello", checked);
  ASSERT_TRUE(verified) << verified.status();
  EXPECT_EQ(verified->md5_hex(), "5d41402abc4b2a76b9719d911017c592");
}

TEST_F(StoreTest, MissingObjectIsNotFound) {
  EXPECT_EQ(run(store_->stat({bucket_, "nope"})).status().code(), Code::kNotFound);
  EXPECT_EQ(run(store_->open({bucket_, "nope"})).status().code(), Code::kNotFound);
  EXPECT_EQ(run(store_->remove({bucket_, "nope"})).code(), Code::kNotFound);
}

TEST_F(StoreTest, OverwriteKeepsOneFileWithTheNewBytes) {
  const ObjectRef object{bucket_, "doc"};
  ASSERT_TRUE(put(*store_, object, "version one"));
  Result<wire::ObjectRecord> second = put(*store_, object, "version two, longer");
  ASSERT_TRUE(second) << second.status();
  EXPECT_EQ(*get(*store_, object), "version two, longer");
  const std::vector<std::string> files = files_under(obj_dir());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].ends_with(fmt::format(".{:016x}", second->generation()))) << files[0];
}

TEST_F(StoreTest, OpenFdKeepsOldBytesAcrossOverwriteAndRemove) {
  const ObjectRef object{bucket_, "doc"};
  ASSERT_TRUE(put(*store_, object, "old bytes"));
  Result<OpenObject> before_overwrite = run(store_->open(object));
  ASSERT_TRUE(before_overwrite) << before_overwrite.status();
  ASSERT_TRUE(put(*store_, object, "new bytes!"));
  Result<OpenObject> before_remove = run(store_->open(object));
  ASSERT_TRUE(before_remove) << before_remove.status();
  ASSERT_TRUE(run(store_->remove(object)).is_ok());

  EXPECT_EQ(testing::read_all(before_overwrite->fd()), "old bytes");
  EXPECT_EQ(before_overwrite->record().size(), 9u);
  EXPECT_EQ(testing::read_all(before_remove->fd()), "new bytes!");
  EXPECT_EQ(run(store_->open(object)).status().code(), Code::kNotFound);
}

TEST_F(StoreTest, RemoveDeletesRecordAndFile) {
  const ObjectRef object{bucket_, "x"};
  ASSERT_TRUE(put(*store_, object, "bytes"));
  ASSERT_TRUE(run(store_->remove(object)).is_ok());
  EXPECT_EQ(run(store_->stat(object)).status().code(), Code::kNotFound);
  EXPECT_TRUE(files_under(obj_dir()).empty());
  EXPECT_EQ(run(store_->remove(object)).code(), Code::kNotFound);
}

TEST_F(StoreTest, ExpectedMd5OrSizeMismatchLeavesNothing) {
  const ObjectRef object{bucket_, "checked"};
  PutOptions bad_md5 = testing::fast();
  bad_md5.expected_md5_hex = "00000000000000000000000000000000";
  Status status = put(*store_, object, "hello", bad_md5).status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_EQ(status.reason(), "BadDigest");
  PutOptions bad_size = testing::fast();
  bad_size.expected_size = 4;
  status = put(*store_, object, "hello", bad_size).status();
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_EQ(status.reason(), "IncompleteBody");
  EXPECT_EQ(run(store_->stat(object)).status().code(), Code::kNotFound);
  EXPECT_TRUE(files_under(obj_dir()).empty());
  EXPECT_TRUE(files_under(work_dir()).empty());

  PutOptions good = testing::fast();
  good.expected_md5_hex = "5D41402ABC4B2A76B9719D911017C592";  // case does not matter
  good.expected_size = 5;
  EXPECT_TRUE(put(*store_, object, "hello", good));
}

TEST_F(StoreTest, DiscardRemovesTheWorkFileBeforeItReturns) {
  Result<std::unique_ptr<ObjectWriter>> writer = run(store_->create({bucket_, "discarded"}, testing::fast()));
  ASSERT_TRUE(writer) << writer.status();
  const std::string data = "partial";
  ASSERT_TRUE(run((*writer)->write(data)).is_ok());
  EXPECT_EQ(files_under(work_dir()).size(), 1u);
  run((*writer)->discard());
  EXPECT_TRUE(files_under(work_dir()).empty()) << "no waiting: discard() returned after the unlink";
  EXPECT_FALSE(run((*writer)->write(data)).is_ok());
  EXPECT_FALSE(run((*writer)->commit()));
  EXPECT_EQ(run(store_->stat({bucket_, "discarded"})).status().code(), Code::kNotFound);
}

// seal() (docs/adr/0014): the record a commit would make, the precondition checked once,
// the bytes still readable, and nothing installed.
TEST_F(StoreTest, SealChecksWithoutInstallingAndKeepsTheBytesReadable) {
  const ObjectRef object{bucket_, "sealed"};
  ASSERT_TRUE(put(*store_, object, "old", testing::fast()));
  PutOptions options = testing::fast();
  options.attributes.set_content_type("text/plain");
  options.expected_size = 5;
  int calls = 0;
  const wire::ObjectRecord* seen = nullptr;
  options.precondition = [&calls, &seen](const wire::ObjectRecord* current) {
    ++calls;
    seen = current;
    return Status::ok();
  };
  Result<std::unique_ptr<ObjectWriter>> writer = run(store_->create(object, std::move(options)));
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(run((*writer)->write(std::string_view("hello"))).is_ok());
  Result<wire::ObjectRecord> sealed = run((*writer)->seal());
  ASSERT_TRUE(sealed) << sealed.status();
  EXPECT_EQ(calls, 1);
  EXPECT_NE(seen, nullptr) << "the precondition saw the object there";
  EXPECT_EQ(sealed->size(), 5u);
  EXPECT_EQ(sealed->generation(), 0u);
  EXPECT_EQ(sealed->md5_hex(), "5d41402abc4b2a76b9719d911017c592");
  EXPECT_EQ(sealed->content_type(), "text/plain");
  EXPECT_GT(sealed->mtime_unix_nanos(), 0);
  Result<int> fd = (*writer)->open_reader();
  ASSERT_TRUE(fd) << fd.status();
  char bytes[5] = {};
  EXPECT_EQ(::pread(*fd, bytes, sizeof bytes, 0), 5);
  ::close(*fd);
  EXPECT_EQ(std::string_view(bytes, 5), "hello");
  EXPECT_EQ(*get(*store_, object), "old") << "nothing installed";
  EXPECT_FALSE(run((*writer)->commit()));
  EXPECT_EQ(calls, 1);
  run((*writer)->discard());
  EXPECT_TRUE(files_under(work_dir()).empty());
  EXPECT_EQ(*get(*store_, object), "old");

  // A short body or a refusing precondition fails the seal as it would the commit.
  PutOptions refused = testing::fast();
  refused.precondition = [](const wire::ObjectRecord*) {
    return Status::failed_precondition("no").with_reason("PreconditionFailed");
  };
  writer = run(store_->create(object, std::move(refused)));
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(run((*writer)->write(std::string_view("x"))).is_ok());
  EXPECT_EQ(run((*writer)->seal()).status().reason(), "PreconditionFailed");
  PutOptions short_body = testing::fast();
  short_body.expected_size = 9;
  writer = run(store_->create(object, std::move(short_body)));
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(run((*writer)->write(std::string_view("x"))).is_ok());
  EXPECT_EQ(run((*writer)->seal()).status().reason(), "IncompleteBody");
}

TEST_F(StoreTest, WriterDestroyedWithoutCommitLeavesNoWorkFile) {
  {
    Result<std::unique_ptr<ObjectWriter>> writer =
        run(store_->create({bucket_, "abandoned"}, testing::fast()));
    ASSERT_TRUE(writer) << writer.status();
    const std::string data = "partial";
    ASSERT_TRUE(run((*writer)->write(data)).is_ok());
    EXPECT_EQ(files_under(work_dir()).size(), 1u);
  }
  // The unlink was handed to the disk executor: wait for it with a deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!files_under(work_dir()).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(files_under(work_dir()).empty());
  EXPECT_EQ(run(store_->stat({bucket_, "abandoned"})).status().code(), Code::kNotFound);
}

TEST_F(StoreTest, AwkwardNamesAreDistinctObjects) {
  const std::vector<std::string> names = {
      "a",          "a/b",          "a/b/",
      "with space", "percent%2F",   "../../etc/passwd",
      "..",         "ünïcødé/日本", std::string(1024, 'n'),
      "/leading",   "trailing/",    std::string("nul\0inside", 10)};
  for (const std::string& name : names) {
    Result<wire::ObjectRecord> record = put(*store_, {bucket_, name}, "data:" + name);
    ASSERT_TRUE(record) << name << ": " << record.status();
  }
  for (const std::string& name : names) {
    Result<std::string> bytes = get(*store_, {bucket_, name});
    ASSERT_TRUE(bytes) << name << ": " << bytes.status();
    EXPECT_EQ(*bytes, "data:" + name);
  }
  EXPECT_EQ(files_under(obj_dir()).size(), names.size());
  for (const std::string& file : files_under(dir_.path())) {
    EXPECT_EQ(file.find("passwd"), std::string::npos) << file;
  }
  Result<ListResult> listed = run(store_->list(bucket_, {}));
  ASSERT_TRUE(listed) << listed.status();
  EXPECT_EQ(listed->entries.size(), names.size());
}

TEST_F(StoreTest, CorruptRecordIsDataLoss) {
  const ObjectRef object{bucket_, "victim"};
  ASSERT_TRUE(put(*store_, object, "bytes"));
  ASSERT_TRUE(put(*store_, {bucket_, "neighbor"}, "fine"));
  store_->close();
  store_.reset();
  ASSERT_TRUE(testing::write_raw_record(dir_.sub("mp1"), bucket_, "victim", "\xff\xfegarbage"));
  store_ = testing::open_store({dir_.sub("mp1")});
  ASSERT_TRUE(store_);
  EXPECT_EQ(run(store_->stat(object)).status().code(), Code::kDataLoss);
  EXPECT_EQ(run(store_->open(object)).status().code(), Code::kDataLoss);
  // Listing skips it; the neighbor is still served; DELETE gets rid of it.
  Result<ListResult> listed = run(store_->list(bucket_, {}));
  ASSERT_TRUE(listed) << listed.status();
  ASSERT_EQ(listed->entries.size(), 1u);
  EXPECT_EQ(listed->entries[0].name(), "neighbor");
  EXPECT_TRUE(run(store_->remove(object)).is_ok());
  EXPECT_EQ(run(store_->stat(object)).status().code(), Code::kNotFound);
}

TEST_F(StoreTest, RecordWithoutFileIsDataLossOnOpen) {
  const ObjectRef object{bucket_, "lost"};
  ASSERT_TRUE(put(*store_, object, "bytes"));
  for (const std::string& file : files_under(obj_dir())) {
    std::filesystem::remove(obj_dir() + "/" + file);
  }
  Result<OpenObject> open = run(store_->open(object));
  EXPECT_EQ(open.status().code(), Code::kDataLoss);
  EXPECT_NE(open.status().message().find("missing"), std::string::npos) << open.status();
}

TEST_F(StoreTest, ConcurrentOverwritesEndWithOneConsistentObject) {
  const ObjectRef object{bucket_, "hot"};
  boost::asio::io_context io;
  constexpr int kWriters = 24;
  int done = 0;
  for (int i = 0; i < kWriters; ++i) {
    boost::asio::co_spawn(
        io,
        [&, i]() -> Awaitable<void> {
          // Different sizes, so a mix of bytes and metadata would show.
          const std::string data(static_cast<size_t>(100 + i * 37), static_cast<char>('a' + i));
          Result<wire::ObjectRecord> record =
              co_await testing::put_object(*store_, object, data, testing::fast());
          EXPECT_TRUE(record) << record.status();
          ++done;
        },
        boost::asio::detached);
  }
  std::thread second([&io] { io.run(); });
  io.run();
  second.join();
  EXPECT_EQ(done, kWriters);

  Result<OpenObject> open = run(store_->open(object));
  ASSERT_TRUE(open) << open.status();
  const std::string bytes = testing::read_all(open->fd());
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(bytes.size(), open->record().size());
  EXPECT_EQ(bytes, std::string(bytes.size(), bytes[0]));
  EXPECT_EQ(bytes.size(), static_cast<size_t>(100 + (bytes[0] - 'a') * 37));
  EXPECT_EQ(files_under(obj_dir()).size(), 1u);
  EXPECT_TRUE(files_under(work_dir()).empty());
}

TEST_F(StoreTest, AttributesRoundTripAndOnlyDescriptiveFieldsAreTaken) {
  const ObjectRef object{bucket_, "described"};
  PutOptions options = testing::fast();
  wire::ObjectRecord& a = options.attributes;
  a.set_content_type("text/plain");
  a.set_content_encoding("gzip");
  a.set_content_disposition("attachment; filename=\"a.txt\"");
  a.set_content_language("en");
  a.set_cache_control("max-age=60");
  a.set_expires("Wed, 21 Oct 2015 07:28:00 GMT");
  (*a.mutable_user_metadata())["owner"] = "alice";
  (*a.mutable_tags())["team"] = "storage";
  (*a.mutable_checksums())["CRC32"] = "AAAAAA==";
  // Fields the store owns must be ignored.
  a.set_size(12345);
  a.set_generation(7);
  a.set_md5_hex("bogus");
  a.set_etag("bogus-2");
  a.add_parts()->set_size(1);
  a.set_name("other");
  Result<wire::ObjectRecord> put_record = put(*store_, object, "hello", options);
  ASSERT_TRUE(put_record) << put_record.status();

  Result<wire::ObjectRecord> record = run(store_->stat(object));
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(record->name(), "described");
  EXPECT_EQ(record->size(), 5u);
  EXPECT_NE(record->generation(), 7u);
  EXPECT_EQ(record->md5_hex(), "5d41402abc4b2a76b9719d911017c592");
  EXPECT_TRUE(record->etag().empty());
  EXPECT_TRUE(record->parts().empty());
  EXPECT_EQ(record->content_type(), "text/plain");
  EXPECT_EQ(record->content_encoding(), "gzip");
  EXPECT_EQ(record->content_disposition(), "attachment; filename=\"a.txt\"");
  EXPECT_EQ(record->content_language(), "en");
  EXPECT_EQ(record->cache_control(), "max-age=60");
  EXPECT_EQ(record->expires(), "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_EQ(record->user_metadata().at("owner"), "alice");
  EXPECT_EQ(record->tags().at("team"), "storage");
  EXPECT_EQ(record->checksums().at("CRC32"), "AAAAAA==");
}

TEST_F(StoreTest, OldRecordWithoutNewFieldsStillDecodes) {
  // A format-1 record as written before fields 12-19 existed: only the old fields.
  wire::ObjectRecord old;
  old.set_format_version(1);
  old.set_name("old");
  old.set_size(3);
  old.set_md5_hex("abc");
  Result<wire::ObjectRecord> decoded =
      wire::decode<wire::ObjectRecord>(old.SerializeAsString(), wire::Source::kDisk);
  ASSERT_TRUE(decoded) << decoded.status();
  EXPECT_TRUE(decoded->etag().empty());
  EXPECT_TRUE(decoded->tags().empty());
  EXPECT_TRUE(decoded->parts().empty());
  old.set_format_version(2);
  EXPECT_EQ(wire::decode<wire::ObjectRecord>(old.SerializeAsString(), wire::Source::kDisk)
                .status()
                .code(),
            Code::kDataLoss);
}

TEST_F(StoreTest, SetChecksumOverridesAttributes) {
  const ObjectRef object{bucket_, "trailer"};
  PutOptions options = testing::fast();
  (*options.attributes.mutable_checksums())["CRC32"] = "from-header";
  Result<std::unique_ptr<ObjectWriter>> writer = run(store_->create(object, options));
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(run((*writer)->write(std::string_view("abc"))).is_ok());
  (*writer)->set_checksum("CRC32", "from-trailer");
  (*writer)->set_checksum("SHA256", "sha");
  Result<wire::ObjectRecord> record = run((*writer)->commit());
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(record->checksums().at("CRC32"), "from-trailer");
  EXPECT_EQ(run(store_->stat(object))->checksums().at("SHA256"), "sha");
}

TEST_F(StoreTest, PreconditionSeesCurrentRecordAndFailureLeavesNothing) {
  const ObjectRef object{bucket_, "guarded"};
  // If-None-Match: * on a new object passes and sees nullptr.
  PutOptions create_only = testing::fast();
  int calls = 0;
  create_only.precondition = [&calls](const wire::ObjectRecord* current) {
    ++calls;
    if (current != nullptr) {
      return Status::failed_precondition("exists").with_reason("PreconditionFailed");
    }
    return Status::ok();
  };
  Result<wire::ObjectRecord> first = put(*store_, object, "first", create_only);
  ASSERT_TRUE(first) << first.status();
  EXPECT_EQ(calls, 1);

  // The second one fails: its error comes back as is and nothing changes.
  Result<wire::ObjectRecord> second = put(*store_, object, "second", create_only);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(second.status().reason(), "PreconditionFailed");
  EXPECT_EQ(*get(*store_, object), "first");
  EXPECT_EQ(files_under(obj_dir()).size(), 1u);
  EXPECT_TRUE(files_under(work_dir()).empty());

  // If-Match on the current ETag passes.
  PutOptions if_match = testing::fast();
  if_match.precondition = [md5 = first->md5_hex()](const wire::ObjectRecord* current) {
    if (current == nullptr || current->md5_hex() != md5) {
      return Status::failed_precondition("etag differs").with_reason("PreconditionFailed");
    }
    return Status::ok();
  };
  ASSERT_TRUE(put(*store_, object, "third", if_match));
  EXPECT_EQ(*get(*store_, object), "third");
  EXPECT_FALSE(put(*store_, object, "fourth", if_match));  // the ETag changed meanwhile
  EXPECT_EQ(*get(*store_, object), "third");
}

TEST_F(StoreTest, UpdateRewritesMetadataOnly) {
  const ObjectRef object{bucket_, "tagged"};
  PutOptions options = testing::fast();
  options.attributes.set_content_type("text/plain");
  Result<wire::ObjectRecord> put_record = put(*store_, object, "bytes", options);
  ASSERT_TRUE(put_record) << put_record.status();

  Result<wire::ObjectRecord> updated = run(store_->update(
      object,
      [](wire::ObjectRecord& record) {
        (*record.mutable_tags())["k"] = "v";
        record.set_content_type("application/json");
        record.set_size(999);  // ignored: describes the bytes
        record.set_generation(1);
        return Status::ok();
      },
      Durability::kFsync));
  ASSERT_TRUE(updated) << updated.status();
  Result<wire::ObjectRecord> record = run(store_->stat(object));
  ASSERT_TRUE(record) << record.status();
  EXPECT_EQ(record->tags().at("k"), "v");
  EXPECT_EQ(record->content_type(), "application/json");
  EXPECT_EQ(record->size(), 5u);
  EXPECT_EQ(record->generation(), put_record->generation());
  EXPECT_EQ(record->md5_hex(), put_record->md5_hex());
  EXPECT_EQ(*get(*store_, object), "bytes");

  // A failing mutation changes nothing.
  Result<wire::ObjectRecord> failed = run(store_->update(
      object,
      [](wire::ObjectRecord& r) {
        r.mutable_tags()->clear();
        return Status::invalid_argument("bad tags").with_reason("InvalidTag");
      },
      Durability::kFsync));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.status().reason(), "InvalidTag");
  EXPECT_EQ(run(store_->stat(object))->tags().at("k"), "v");

  Result<wire::ObjectRecord> missing = run(store_->update(
      {bucket_, "missing"}, [](wire::ObjectRecord&) { return Status::ok(); }, Durability::kFsync));
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().reason(), "NoSuchKey");
}

TEST_F(StoreTest, ClosedStoreRefusesWrites) {
  store_->close();
  EXPECT_EQ(run(store_->create({bucket_, "late"}, testing::fast())).status().code(),
            Code::kFailedPrecondition);
}

TEST_F(StoreTest, MountpathInfoHasIdAndCapacity) {
  const std::vector<MountpathInfo> infos = store_->mountpaths();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].path, dir_.sub("mp1"));
  EXPECT_EQ(infos[0].id.size(), 16u);
  EXPECT_GT(infos[0].capacity_bytes, 0u);
  EXPECT_LE(infos[0].available_bytes, infos[0].capacity_bytes);
}

TEST_F(StoreTest, ACommitIntoAClosedBucketFailsWithNoSuchBucketAndLeavesNothing) {
  ASSERT_TRUE(put(*store_, {bucket_, "before"}, "kept").has_value());
  store_->close_bucket(bucket_);
  auto refused = put(*store_, {bucket_, "after"}, "refused");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Code::kNotFound);
  EXPECT_EQ(refused.error().reason(), "NoSuchBucket");
  EXPECT_FALSE(get(*store_, {bucket_, "after"}).has_value()) << "a refused commit leaves no object";
  const auto kept = get(*store_, {bucket_, "before"});
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(*kept, "kept");
  EXPECT_TRUE(files_under(work_dir()).empty()) << "nor a work file";
  // Other buckets are untouched; reopened, the bucket takes commits again.
  EXPECT_TRUE(put(*store_, {BucketId(8), "other"}, "x").has_value());
  store_->open_bucket(bucket_);
  EXPECT_TRUE(put(*store_, {bucket_, "after"}, "now").has_value());
}

TEST_F(StoreTest, DrainBucketWaitsForACommitThatPassedTheCheck) {
  // The precondition runs after the fence's check, under the object lock: the commit is
  // in flight there. Closing the bucket then refuses later commits, and a drain does not
  // end until this one is installed.
  std::optional<Status> drained_while_in_flight;
  PutOptions options = testing::fast();
  options.precondition = [&](const wire::ObjectRecord*) {
    store_->close_bucket(bucket_);
    drained_while_in_flight = run(store_->drain_bucket(bucket_, std::chrono::milliseconds(50)));
    return Status::ok();
  };
  ASSERT_TRUE(put(*store_, {bucket_, "in-flight"}, "bytes", std::move(options)).has_value());
  ASSERT_TRUE(drained_while_in_flight.has_value());
  EXPECT_EQ(drained_while_in_flight->code(), Code::kUnavailable) << "a drain ended with a commit in flight";
  EXPECT_TRUE(run(store_->drain_bucket(bucket_, std::chrono::seconds(10))).is_ok());
  EXPECT_TRUE(get(*store_, {bucket_, "in-flight"}).has_value()) << "the commit that passed the check stands";
  EXPECT_FALSE(put(*store_, {bucket_, "late"}, "refused").has_value());
}

}  // namespace
}  // namespace silo::store
