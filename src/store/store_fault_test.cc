// The store under injected file system faults: failed syncs, renames and writes, full
// disks, short writes, and crashes at each named point of a PUT followed by a restart
// (docs/adr/0015). Nothing a failed write did may be seen, and no work file may stay.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string_view>
#include <thread>
#include <tuple>

#include "store/detail/object_file.h"
#include "store/store.h"
#include "store/store_test_util.h"
#include "store/testing/faulty_file_system.h"

namespace silo::store {
namespace {

using testing::CrashPoint;
using testing::Fault;
using testing::FaultyFileSystem;
using testing::FileOp;
using testing::files_under;
using testing::get;
using testing::run;
using testing::Times;

PutOptions durable() {
  PutOptions options;
  options.durability = Durability::kFsync;  // every sync of the PUT path is called
  return options;
}

std::string md5_hex_of(const std::string& data) {
  detail::Md5Stream md5;
  md5.update(data);
  return md5.finish_hex();
}

// Deterministic bytes that differ per `seed`, so an old and a new version never match.
std::string bytes_of(size_t size, char seed) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>(seed + static_cast<char>(i % 251));
  return out;
}

class StoreFaultTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> open_store() {
    StoreOptions options;
    options.mountpaths = {dir_.sub("mp1")};
    options.threads_per_mountpath = 2;
    options.file_system = file_system_;
    Result<std::unique_ptr<Store>> store = Store::open(std::move(options));
    EXPECT_TRUE(store) << store.status();
    return store ? std::move(*store) : nullptr;
  }

  // The next process on the same directories: the old store goes without close(), as in
  // a crash, so the new one reconciles.
  void restart() {
    store_.reset();
    file_system_->restart();
    store_ = open_store();
    ASSERT_TRUE(store_);
  }

  std::vector<std::string> work_files() const { return files_under(dir_.sub("mp1/work")); }
  std::vector<std::string> object_files() const { return files_under(dir_.sub("mp1/obj")); }

  // A writer destroyed without a commit removes its work file on a disk thread, later.
  bool wait_for_no_work_files() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!work_files().empty()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  // Neither stat, open nor list sees `name`.
  void expect_absent(const std::string& name) {
    const ObjectRef object{bucket_, name};
    EXPECT_EQ(run(store_->stat(object)).status().code(), Code::kNotFound);
    EXPECT_EQ(get(*store_, object).status().code(), Code::kNotFound);
    Result<ListResult> listed = run(store_->list(bucket_, {}));
    ASSERT_TRUE(listed) << listed.status();
    for (const auto& entry : listed->entries) EXPECT_NE(entry.name(), name);
  }

  // stat, open and list agree that `name` holds exactly `data`.
  void expect_object(const std::string& name, const std::string& data) {
    const ObjectRef object{bucket_, name};
    Result<wire::ObjectRecord> record = run(store_->stat(object));
    ASSERT_TRUE(record) << record.status();
    EXPECT_EQ(record->size(), data.size());
    Result<std::string> bytes = get(*store_, object);
    ASSERT_TRUE(bytes) << bytes.status();
    EXPECT_TRUE(*bytes == data) << "read " << bytes->size() << " bytes, expected " << data.size();
    Result<ListResult> listed = run(store_->list(bucket_, {}));
    ASSERT_TRUE(listed) << listed.status();
    size_t seen = 0;
    for (const auto& entry : listed->entries) {
      if (entry.name() != name) continue;
      ++seen;
      EXPECT_EQ(entry.size(), data.size());
    }
    EXPECT_EQ(seen, 1u);
  }

  Result<std::unique_ptr<ObjectWriter>> create(const std::string& name,
                                               PutOptions options = durable()) {
    return run(store_->create({bucket_, name}, std::move(options)));
  }

  // Writes `data` in `pieces` write() calls; the first error, if any.
  static Status write_in_pieces(ObjectWriter& writer, const std::string& data, size_t pieces) {
    const size_t piece = (data.size() + pieces - 1) / pieces;
    for (size_t offset = 0; offset < data.size(); offset += piece) {
      const size_t n = std::min(piece, data.size() - offset);
      RETURN_IF_ERROR(run(writer.write(std::span<const char>(data.data() + offset, n))));
    }
    return Status::ok();
  }

  testing::TempDir dir_;
  const std::shared_ptr<FaultyFileSystem> file_system_ = std::make_shared<FaultyFileSystem>();
  std::unique_ptr<Store> store_ = open_store();
  const BucketId bucket_{7};
};

TEST_F(StoreFaultTest, EveryChangeToObjectAndWorkFilesGoesThroughTheFileSystem) {
  ASSERT_TRUE(store_);
  ASSERT_TRUE(testing::put(*store_, {bucket_, "a"}, "one", durable()));
  ASSERT_TRUE(testing::put(*store_, {bucket_, "a"}, "two", durable()));  // unlinks "one"
  ASSERT_TRUE(run(store_->remove({bucket_, "a"})).is_ok());
  EXPECT_EQ(file_system_->calls(FileOp::kCreate), 2u);
  EXPECT_GE(file_system_->calls(FileOp::kWrite), 2u);
  EXPECT_EQ(file_system_->calls(FileOp::kSyncData), 2u);
  EXPECT_GE(file_system_->calls(FileOp::kMakeDirectory),
            4u);  // <bucket>/<h0:2>/<h2:4>, then exists
  EXPECT_GE(file_system_->calls(FileOp::kSyncDirectory), 2u);
  EXPECT_EQ(file_system_->calls(FileOp::kRename), 2u);
  EXPECT_EQ(file_system_->calls(FileOp::kRemoveFile), 2u);  // the old generation, then DELETE
  EXPECT_TRUE(object_files().empty());
  EXPECT_TRUE(work_files().empty());
}

TEST_F(StoreFaultTest, FailedWorkFileSyncNeverCommits) {
  ASSERT_TRUE(store_);
  file_system_->inject(Fault(FileOp::kSyncData, EIO).on_paths_containing("/work/"));
  auto writer = create("synced");
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(write_in_pieces(**writer, bytes_of(10000, 'a'), 3).is_ok());
  Result<wire::ObjectRecord> committed = run((*writer)->commit());
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.status().code(), Code::kUnavailable) << committed.status();
  expect_absent("synced");
  EXPECT_TRUE(work_files().empty());  // a failed commit removes its work file before it returns
  writer->reset();
  EXPECT_TRUE(wait_for_no_work_files());
  EXPECT_TRUE(object_files().empty());

  restart();
  expect_absent("synced");
  EXPECT_TRUE(work_files().empty());
  EXPECT_TRUE(object_files().empty());
}

TEST_F(StoreFaultTest, FailedRenameNeverCommits) {
  ASSERT_TRUE(store_);
  file_system_->inject(Fault(FileOp::kRename, EIO));
  auto writer = create("renamed");
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(write_in_pieces(**writer, bytes_of(10000, 'b'), 2).is_ok());
  Result<wire::ObjectRecord> committed = run((*writer)->commit());
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.status().code(), Code::kUnavailable) << committed.status();
  expect_absent("renamed");
  EXPECT_TRUE(work_files().empty());
  writer->reset();
  EXPECT_TRUE(wait_for_no_work_files());
  EXPECT_TRUE(object_files().empty());

  restart();
  expect_absent("renamed");
  EXPECT_TRUE(work_files().empty());
  EXPECT_TRUE(object_files().empty());
}

TEST_F(StoreFaultTest, NoSpaceMidWriteIsResourceExhaustedAndLeavesNothing) {
  ASSERT_TRUE(store_);
  file_system_->inject(Fault(FileOp::kWrite, ENOSPC).on_call(3));
  auto writer = create("full");
  ASSERT_TRUE(writer) << writer.status();
  const std::string data = bytes_of(40000, 'c');
  const Status written = write_in_pieces(**writer, data, 4);
  EXPECT_EQ(written.code(), Code::kResourceExhausted) << written;
  // The writer is done for: neither more bytes nor a commit are taken.
  EXPECT_FALSE(run((*writer)->write(std::span<const char>(data.data(), 10))).is_ok());
  EXPECT_FALSE(run((*writer)->commit()));
  expect_absent("full");
  writer->reset();
  EXPECT_TRUE(wait_for_no_work_files());
  EXPECT_TRUE(object_files().empty());

  restart();
  expect_absent("full");
  EXPECT_TRUE(work_files().empty());
}

TEST_F(StoreFaultTest, NoSpaceAfterAShortWriteIsResourceExhausted) {
  ASSERT_TRUE(store_);
  // A disk filling up: write(2) takes part of the bytes, then refuses the rest.
  file_system_->set_max_write_bytes(1000);
  file_system_->inject(Fault(FileOp::kWrite, ENOSPC).on_call(5));
  auto writer = create("half");
  ASSERT_TRUE(writer) << writer.status();
  const Status written = write_in_pieces(**writer, bytes_of(8000, 'd'), 1);
  EXPECT_EQ(written.code(), Code::kResourceExhausted) << written;
  EXPECT_FALSE(run((*writer)->commit()));
  run((*writer)->discard());
  EXPECT_TRUE(work_files().empty());  // discard() removes it before it returns
  expect_absent("half");
  EXPECT_TRUE(object_files().empty());
}

TEST_F(StoreFaultTest, ShortWritesAreCompletedNotTruncated) {
  ASSERT_TRUE(store_);
  file_system_->set_max_write_bytes(7);
  const std::string data = bytes_of(100003, 'e');
  Result<wire::ObjectRecord> record = testing::put(*store_, {bucket_, "short"}, data, durable());
  ASSERT_TRUE(record) << record.status();
  EXPECT_GE(file_system_->calls(FileOp::kWrite), data.size() / 7);
  EXPECT_EQ(record->size(), data.size());
  EXPECT_EQ(record->md5_hex(), md5_hex_of(data));
  expect_object("short", data);
  restart();
  expect_object("short", data);
}

TEST_F(StoreFaultTest, WriteWithoutProgressFailsInsteadOfSpinning) {
  ASSERT_TRUE(store_);
  file_system_->set_max_write_bytes(0);
  auto writer = create("stuck");
  ASSERT_TRUE(writer) << writer.status();
  EXPECT_EQ(write_in_pieces(**writer, "some bytes", 1).code(), Code::kUnavailable);
  EXPECT_FALSE(run((*writer)->commit()));
  writer->reset();
  EXPECT_TRUE(wait_for_no_work_files());
  expect_absent("stuck");
}

TEST_F(StoreFaultTest, FailedPartRenameLeavesNoPart) {
  ASSERT_TRUE(store_);
  const ObjectRef object{bucket_, "multi"};
  Result<UploadInfo> upload = run(store_->create_upload(object, {}, {}));
  ASSERT_TRUE(upload) << upload.status();
  file_system_->inject(Fault(FileOp::kRename, EIO));
  auto writer = run(store_->create_part(object, upload->upload_id, 1, durable()));
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(write_in_pieces(**writer, bytes_of(5000, 'f'), 2).is_ok());
  EXPECT_FALSE(run((*writer)->commit()));
  writer->reset();
  EXPECT_TRUE(wait_for_no_work_files());
  Result<std::vector<PartInfo>> parts = run(store_->list_parts(object, upload->upload_id));
  ASSERT_TRUE(parts) << parts.status();
  EXPECT_TRUE(parts->empty());
  EXPECT_TRUE(files_under(dir_.sub("mp1/parts")).empty());
}

TEST_F(StoreFaultTest, NoSpaceWhileCompletingKeepsTheUpload) {
  ASSERT_TRUE(store_);
  const ObjectRef object{bucket_, "assembled"};
  Result<UploadInfo> upload = run(store_->create_upload(object, {}, {}));
  ASSERT_TRUE(upload) << upload.status();
  auto writer = run(store_->create_part(object, upload->upload_id, 1, durable()));
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(write_in_pieces(**writer, bytes_of(5000, 'g'), 1).is_ok());
  Result<wire::ObjectRecord> part = run((*writer)->commit());
  ASSERT_TRUE(part) << part.status();
  writer->reset();

  file_system_->inject(Fault(FileOp::kAppend, ENOSPC));
  Result<wire::ObjectRecord> completed = run(store_->complete_upload(
      object, upload->upload_id, {CompletePart{1, part->md5_hex()}}, durable()));
  ASSERT_FALSE(completed);
  EXPECT_EQ(completed.status().code(), Code::kResourceExhausted) << completed.status();
  expect_absent("assembled");
  EXPECT_TRUE(work_files().empty());
  Result<std::vector<PartInfo>> parts = run(store_->list_parts(object, upload->upload_id));
  ASSERT_TRUE(parts) << parts.status();
  EXPECT_EQ(parts->size(), 1u);
  // Once the disk has room again, the same completion succeeds.
  completed = run(store_->complete_upload(object, upload->upload_id,
                                          {CompletePart{1, part->md5_hex()}}, durable()));
  ASSERT_TRUE(completed) << completed.status();
  expect_object("assembled", bytes_of(5000, 'g'));
}

TEST_F(StoreFaultTest, FailedMoveToANewMountpathLeavesNoCopyThere) {
  ASSERT_TRUE(store_);
  std::vector<std::string> names;
  // Mountpath ids are random, so which names move is too: with 16, none does once in 65536.
  for (int i = 0; i < 16; ++i) {
    names.push_back(fmt::format("n{}", i));
    ASSERT_TRUE(testing::put(*store_, {bucket_, names.back()}, "v-" + names.back()));
  }
  Result<MountpathInfo> attached = run(store_->attach_mountpath(dir_.sub("mp2")));
  ASSERT_TRUE(attached) << attached.status();
  // The sync of the directory a moved copy was just renamed into (not those of its parents
  // while they are made) fails, so each move fails after its rename.
  for (const std::string& name : names) {
    const std::string stem = detail::object_file_relative_stem(bucket_, name);
    file_system_->inject(Fault(FileOp::kSyncDirectory, EIO)
                             .on_paths_containing("mp2/obj/" + stem.substr(0, stem.rfind('/'))));
  }
  const auto never = [] { return false; };
  Result<ResilverStats> moved = run(store_->resilver(never));
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.status().code(), Code::kUnavailable) << moved.status();
  EXPECT_TRUE(files_under(dir_.sub("mp2/obj")).empty());
  EXPECT_TRUE(files_under(dir_.sub("mp2/work")).empty());
  for (const std::string& name : names) expect_object(name, "v-" + name);

  file_system_->restart();  // the disk works again
  moved = run(store_->resilver(never));
  ASSERT_TRUE(moved) << moved.status();
  EXPECT_GT(moved->objects_moved, 0u);
  for (const std::string& name : names) expect_object(name, "v-" + name);
  EXPECT_EQ(object_files().size() + files_under(dir_.sub("mp2/obj")).size(), names.size());
}

// A failed write of a new version leaves the previous one readable and intact.
class StoreOverwriteFaultTest : public StoreFaultTest,
                                public ::testing::WithParamInterface<Fault> {};

TEST_P(StoreOverwriteFaultTest, FailedOverwriteKeepsThePreviousVersion) {
  ASSERT_TRUE(store_);
  const std::string old_data = bytes_of(20000, 'h');
  Result<wire::ObjectRecord> old_record =
      testing::put(*store_, {bucket_, "kept"}, old_data, durable());
  ASSERT_TRUE(old_record) << old_record.status();

  file_system_->inject(GetParam());
  auto writer = create("kept");
  ASSERT_TRUE(writer) << writer.status();
  const Status written = write_in_pieces(**writer, bytes_of(30000, 'i'), 3);
  Result<wire::ObjectRecord> committed =
      written.is_ok() ? run((*writer)->commit()) : Result<wire::ObjectRecord>(written);
  ASSERT_FALSE(committed);
  writer->reset();
  EXPECT_TRUE(wait_for_no_work_files());

  expect_object("kept", old_data);
  EXPECT_EQ(run(store_->stat({bucket_, "kept"}))->generation(), old_record->generation());
  EXPECT_EQ(object_files().size(), 1u);
  restart();
  expect_object("kept", old_data);
  EXPECT_EQ(object_files().size(), 1u);
  EXPECT_TRUE(work_files().empty());
}

std::string fault_test_name(const ::testing::TestParamInfo<Fault>& info) {
  static constexpr std::string_view kOps[] = {"Create",   "Write",         "Append",
                                              "SyncData", "SyncDirectory", "MakeDirectory",
                                              "Rename",   "RemoveFile",    "RemoveTree"};
  return fmt::format("{}{}{}{}", kOps[static_cast<size_t>(info.param.op)],
                     info.param.error == ENOSPC ? "NoSpace" : "Eio", info.param.nth,
                     info.param.times == Times::kFromThenOn ? "AndAfter" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Faults, StoreOverwriteFaultTest,
    ::testing::Values(Fault(FileOp::kWrite, ENOSPC).on_call(2),
                      Fault(FileOp::kWrite, ENOSPC).on_call(2).from_then_on(),
                      Fault(FileOp::kWrite, EIO).on_call(1), Fault(FileOp::kSyncData, EIO),
                      Fault(FileOp::kMakeDirectory, EIO), Fault(FileOp::kRename, EIO),
                      Fault(FileOp::kSyncDirectory, EIO).on_paths_containing("/obj/")),
    fault_test_name);

// A crash at each named point of a PUT, then a restart: the object is the old version or
// the new one, whole, and recovery leaves neither a work file nor an orphan object file.
enum class Before { kNothing, kOldVersion };

class StoreCrashTest : public StoreFaultTest,
                       public ::testing::WithParamInterface<std::tuple<CrashPoint, Before>> {};

TEST_P(StoreCrashTest, RestartShowsTheOldOrTheNewVersionWhole) {
  ASSERT_TRUE(store_);
  const auto [point, before] = GetParam();
  const std::string old_data = bytes_of(20000, 'j');
  const std::string new_data = bytes_of(30000, 'k');
  if (before == Before::kOldVersion) {
    ASSERT_TRUE(testing::put(*store_, {bucket_, "torn?"}, old_data, durable()));
  }
  file_system_->crash_at(point);
  auto writer = create("torn?");
  ASSERT_TRUE(writer) << writer.status();
  ASSERT_TRUE(write_in_pieces(**writer, new_data, 3).is_ok());
  const bool is_committed = run((*writer)->commit()).has_value();
  writer->reset();
  // Only the old version has a file to unlink after the commit.
  const bool reaches_point =
      point.name != testing::kAfterCommit.name || before == Before::kOldVersion;
  EXPECT_EQ(file_system_->has_crashed(), reaches_point);
  // What the crash left for recovery: the work file until the rename, the renamed file
  // (or the old generation's) after it.
  const bool is_renamed =
      point.op != FileOp::kSyncData && point.name != testing::kBeforeRename.name;
  if (reaches_point) {
    EXPECT_EQ(work_files().size(), is_renamed ? 0u : 1u);
    EXPECT_EQ(object_files().size(),
              (is_renamed ? 1u : 0u) + (before == Before::kOldVersion ? 1u : 0u));
  }

  restart();
  // The commit returns ok only once the record is durable: then the new version is there.
  // A crash before the metadata commit leaves the old one.
  const bool has_new = point.name == testing::kAfterCommit.name;
  EXPECT_EQ(is_committed, has_new);
  if (has_new) {
    expect_object("torn?", new_data);
  } else if (before == Before::kOldVersion) {
    expect_object("torn?", old_data);
  } else {
    expect_absent("torn?");
  }
  EXPECT_TRUE(work_files().empty());
  EXPECT_EQ(object_files().size(), has_new || before == Before::kOldVersion ? 1u : 0u);
  // And the store works on: the next write of the object succeeds.
  ASSERT_TRUE(testing::put(*store_, {bucket_, "torn?"}, "after", durable()));
  expect_object("torn?", "after");
}

std::string crash_test_name(const ::testing::TestParamInfo<std::tuple<CrashPoint, Before>>& info) {
  return fmt::format("{}{}", std::get<0>(info.param).name,
                     std::get<1>(info.param) == Before::kNothing ? "New" : "Overwrite");
}

INSTANTIATE_TEST_SUITE_P(Points, StoreCrashTest,
                         ::testing::Combine(::testing::ValuesIn(testing::kCrashPoints),
                                            ::testing::Values(Before::kNothing,
                                                              Before::kOldVersion)),
                         crash_test_name);

}  // namespace
}  // namespace silo::store
