// Mountpaths attached and detached while the store runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <atomic>
#include <filesystem>
#include <map>
#include <thread>
#include <optional>

#include "base/mutex.h"
#include "store/detail/op_gate.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace silo::store {
namespace {

using testing::files_under;
using testing::get;
using testing::put;
using testing::run;

bool never() { return false; }

TEST(OpGateTest, AGracePeriodWaitsOnlyForOlderTickets) {
  detail::OpGate gate;
  std::optional<detail::OpGate::Ticket> older = gate.enter();
  const uint64_t first = gate.begin_grace_period();
  detail::OpGate::Ticket newer = gate.enter();  // taken after: not waited for
  EXPECT_FALSE(gate.is_drained(first));
  older.reset();
  EXPECT_TRUE(gate.is_drained(first));
  // The next grace period waits for `newer`, and tickets moved stay counted once.
  const uint64_t second = gate.begin_grace_period();
  detail::OpGate::Ticket moved = std::move(newer);
  EXPECT_FALSE(gate.is_drained(second));
  { detail::OpGate::Ticket gone = std::move(moved); }
  EXPECT_TRUE(gate.is_drained(second));
  detail::OpGate::Ticket later = gate.enter();
  EXPECT_TRUE(gate.is_drained(second)) << "a ticket taken after the grace period began does not hold it";
}

class StoreMountpathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::open_store({dir_.sub("mp1")});
    ASSERT_TRUE(store_);
    for (int i = 0; i < 200; ++i) {
      names_.push_back(fmt::format("shard-{:04}.tar", i));
      ASSERT_TRUE(put(*store_, {bucket_, names_.back()}, "v-" + names_.back()));
    }
  }
  std::string id_of(const std::string& path) const {
    for (const MountpathInfo& m : store_->mountpaths()) {
      if (m.path == path) return m.id;
    }
    return "";
  }
  void expect_all_readable() {
    for (const std::string& name : names_) {
      Result<std::string> data = get(*store_, {bucket_, name});
      ASSERT_TRUE(data) << name << ": " << data.status();
      EXPECT_EQ(*data, "v-" + name);
    }
    Result<ListResult> listed = run(store_->list(bucket_, {}));
    ASSERT_TRUE(listed);
    EXPECT_EQ(listed->entries.size(), names_.size());
  }

  testing::TempDir dir_;
  const BucketId bucket_{7};
  std::unique_ptr<Store> store_;
  std::vector<std::string> names_;
};

TEST_F(StoreMountpathTest, AttachTakesItsShareAndDetachMovesEverythingOff) {
  Result<MountpathInfo> attached = run(store_->attach_mountpath(dir_.sub("mp2") + "/"));
  ASSERT_TRUE(attached) << attached.status();
  EXPECT_EQ(attached->path, dir_.sub("mp2"));
  EXPECT_EQ(attached->state, MountpathState::kInService);
  ASSERT_EQ(store_->mountpaths().size(), 2u);
  expect_all_readable();  // before resilver: found on the old mountpath

  Result<ResilverStats> moved = run(store_->resilver(never));
  ASSERT_TRUE(moved) << moved.status();
  EXPECT_GT(moved->objects_moved, 0u);
  EXPECT_LT(moved->objects_moved, names_.size());
  expect_all_readable();
  EXPECT_EQ(files_under(dir_.sub("mp1/obj")).size() + files_under(dir_.sub("mp2/obj")).size(), names_.size());

  Result<ResilverStats> detached = run(store_->detach_mountpath(id_of(dir_.sub("mp1")), never));
  ASSERT_TRUE(detached) << detached.status();
  EXPECT_EQ(detached->objects_moved, names_.size() - moved->objects_moved);
  ASSERT_EQ(store_->mountpaths().size(), 1u);
  EXPECT_EQ(store_->mountpaths()[0].path, dir_.sub("mp2"));
  EXPECT_TRUE(files_under(dir_.sub("mp1/obj")).empty());
  EXPECT_EQ(files_under(dir_.sub("mp2/obj")).size(), names_.size());
  EXPECT_TRUE(std::filesystem::exists(dir_.sub("mp1/.clean")));  // closed cleanly
  expect_all_readable();
  names_.push_back("after-detach");
  ASSERT_TRUE(put(*store_, {bucket_, names_.back()}, "v-after-detach"));

  // Attached again, the old drive is an ordinary empty mountpath in service.
  attached = run(store_->attach_mountpath(dir_.sub("mp1")));
  ASSERT_TRUE(attached) << attached.status();
  EXPECT_EQ(attached->state, MountpathState::kInService);
  ASSERT_TRUE(run(store_->resilver(never)));
  EXPECT_GT(files_under(dir_.sub("mp1/obj")).size(), 0u);
  expect_all_readable();
  store_->close();
  store_.reset();
  store_ = testing::open_store({dir_.sub("mp1"), dir_.sub("mp2")});
  ASSERT_TRUE(store_);
  expect_all_readable();
}

TEST_F(StoreMountpathTest, AttachRefusesWhatIsAttachedOrACopy) {
  Result<MountpathInfo> again = run(store_->attach_mountpath(dir_.sub("mp1")));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  std::filesystem::create_directories(dir_.sub("copy"));
  std::filesystem::copy_file(dir_.sub("mp1/.silo-mountpath"), dir_.sub("copy/.silo-mountpath"));
  Result<MountpathInfo> copy = run(store_->attach_mountpath(dir_.sub("copy")));
  ASSERT_FALSE(copy);
  EXPECT_EQ(copy.status().code(), Code::kAlreadyExists);
  EXPECT_NE(copy.status().message().find("copy"), std::string::npos) << copy.status();
  Result<MountpathInfo> relative = run(store_->attach_mountpath("relative/dir"));
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->mountpaths().size(), 1u);
  expect_all_readable();
}

TEST_F(StoreMountpathTest, DetachRefusesTheLastOneAnUnknownIdAndUploadsInProgress) {
  Result<ResilverStats> last = run(store_->detach_mountpath(id_of(dir_.sub("mp1")), never));
  ASSERT_FALSE(last);
  EXPECT_EQ(last.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(store_->mountpaths()[0].state, MountpathState::kInService);
  Result<ResilverStats> unknown = run(store_->detach_mountpath("0123456789abcdef", never));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);

  ASSERT_TRUE(run(store_->attach_mountpath(dir_.sub("mp2"))));
  // An upload whose parts live on mp1 (created while mp1 was the only one).
  for (int i = 0; i < 50; ++i) {
    const ObjectRef object{bucket_, fmt::format("big-{}.tar", i)};
    Result<UploadInfo> upload = run(store_->create_upload(object, {}, {}));
    ASSERT_TRUE(upload);
    // Keep one that sits on mp1: its part files go there.
    Result<std::unique_ptr<ObjectWriter>> part = run(store_->create_part(object, upload->upload_id, 1, testing::fast()));
    ASSERT_TRUE(part);
    ASSERT_TRUE(run((*part)->write(std::span<const char>("part", 4))).is_ok());
    ASSERT_TRUE(run((*part)->commit()));
    if (!files_under(dir_.sub("mp1/parts")).empty()) break;
    ASSERT_TRUE(run(store_->abort_upload(object, upload->upload_id)).is_ok());
  }
  ASSERT_FALSE(files_under(dir_.sub("mp1/parts")).empty());
  Result<ResilverStats> busy = run(store_->detach_mountpath(id_of(dir_.sub("mp1")), never));
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(busy.status().message().find("multipart uploads"), std::string::npos) << busy.status();
  // It stays attached and disabled: nothing new goes there, everything still reads.
  ASSERT_EQ(store_->mountpaths().size(), 2u);
  EXPECT_EQ(store_->mountpaths()[0].state, MountpathState::kDisabled);
  expect_all_readable();
}

TEST_F(StoreMountpathTest, DetachWaitsForWritesHeadedThereAndLosesNone) {
  ASSERT_TRUE(run(store_->attach_mountpath(dir_.sub("mp2"))));
  // Writers opened before the detach: about half of them write to mp1.
  std::vector<std::unique_ptr<ObjectWriter>> writers;
  std::vector<std::string> late;
  for (int i = 0; i < 20; ++i) {
    late.push_back(fmt::format("late-{}", i));
    Result<std::unique_ptr<ObjectWriter>> writer = run(store_->create({bucket_, late.back()}, testing::fast()));
    ASSERT_TRUE(writer);
    writers.push_back(std::move(*writer));
  }
  ASSERT_GT(files_under(dir_.sub("mp1/work")).size(), 0u);
  boost::asio::io_context io;
  std::optional<Result<ResilverStats>> detached;
  bool writers_done = false;
  boost::asio::co_spawn(
      io,
      [&]() -> Awaitable<void> {
        detached.emplace(co_await store_->detach_mountpath(id_of(dir_.sub("mp1")), never));
        // The detach must not have finished before the last writer committed.
        EXPECT_TRUE(writers_done);
      },
      boost::asio::detached);
  boost::asio::co_spawn(
      io,
      [&]() -> Awaitable<void> {
        for (size_t i = 0; i < writers.size(); ++i) {
          const std::string data = "v-" + late[i];
          Status written = co_await writers[i]->write(std::span<const char>(data.data(), data.size()));
          EXPECT_TRUE(written.is_ok()) << written;
          Result<wire::ObjectRecord> committed = co_await writers[i]->commit();
          EXPECT_TRUE(committed) << committed.status();
        }
        // Also reads and new writes while the detach runs.
        for (int i = 0; i < 20; ++i) {
          const ObjectRef object{bucket_, names_[static_cast<size_t>(i)]};  // no temporary beside co_await (ADR 0003)
          Result<OpenObject> open = co_await store_->open(object);
          EXPECT_TRUE(open) << open.status();
        }
        writers.clear();
        writers_done = true;
      },
      boost::asio::detached);
  io.run();
  ASSERT_TRUE(detached);
  ASSERT_TRUE(*detached) << detached->status();
  names_.insert(names_.end(), late.begin(), late.end());
  expect_all_readable();
  EXPECT_TRUE(files_under(dir_.sub("mp1/obj")).empty());
  EXPECT_EQ(files_under(dir_.sub("mp2/obj")).size(), names_.size());
}

TEST_F(StoreMountpathTest, ReadsAndWritesOnSeveralThreadsThroughAttachAndDetachLoseNothing) {
  // Four writers and four readers on two threads while mp2 is attached, resilvered onto
  // and mp1 detached: every acknowledged write reads back, every read finds its object.
  boost::asio::io_context io;
  std::atomic<bool> is_done{false};
  struct {
    Mutex mutex;
    std::map<std::string, std::string> writes GUARDED_BY(mutex);
  } acknowledged;
  std::atomic<int> failures{0};
  for (int w = 0; w < 4; ++w) {
    boost::asio::co_spawn(
        io,
        [&, w]() -> Awaitable<void> {
          for (int i = 0; !is_done; ++i) {
            const ObjectRef object{bucket_, fmt::format("w{}-{}", w, i % 40)};
            const std::string data = fmt::format("writer {} round {}", w, i);
            Result<wire::ObjectRecord> put = co_await testing::put_object(*store_, object, data, testing::fast());
            if (!put) {
              ++failures;
              ADD_FAILURE() << object.name << ": " << put.status();
              continue;
            }
            MutexLock lock(acknowledged.mutex);
            acknowledged.writes[object.name] = data;
          }
        },
        boost::asio::detached);
  }
  for (int r = 0; r < 4; ++r) {
    boost::asio::co_spawn(
        io,
        [&, r]() -> Awaitable<void> {
          for (size_t i = static_cast<size_t>(r); !is_done; i += 7) {
            const ObjectRef object{bucket_, names_[i % names_.size()]};
            Result<OpenObject> open = co_await store_->open(object);
            if (!open || testing::read_all(open->fd()) != "v-" + object.name) {
              ++failures;
              ADD_FAILURE() << object.name << ": " << (open ? "wrong bytes" : open.status().to_string());
            }
            // A warm open completes without suspending (a kept file): let the others run.
            co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
          }
        },
        boost::asio::detached);
  }
  boost::asio::co_spawn(
      io,
      [&]() -> Awaitable<void> {
        Result<MountpathInfo> attached = co_await store_->attach_mountpath(dir_.sub("mp2"));
        EXPECT_TRUE(attached) << attached.status();
        Result<ResilverStats> moved = co_await store_->resilver(never);
        EXPECT_TRUE(moved) << moved.status();
        const std::string id = id_of(dir_.sub("mp1"));
        Result<ResilverStats> detached = co_await store_->detach_mountpath(id, never);
        EXPECT_TRUE(detached) << detached.status();
        is_done = true;
      },
      boost::asio::detached);
  std::thread second([&] { io.run(); });
  io.run();
  second.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(store_->mountpaths().size(), 1u);
  EXPECT_TRUE(files_under(dir_.sub("mp1/obj")).empty());
  for (const std::string& name : names_) EXPECT_EQ(*get(*store_, {bucket_, name}), "v-" + name);
  MutexLock lock(acknowledged.mutex);  // the io threads are joined: only for the analysis
  for (const auto& [name, data] : acknowledged.writes) {
    Result<std::string> got = get(*store_, {bucket_, name});
    ASSERT_TRUE(got) << name << ": " << got.status();
    EXPECT_EQ(*got, data) << name;
  }
  Result<ListResult> listed = run(store_->list(bucket_, {}));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->entries.size(), names_.size() + acknowledged.writes.size());
}

}  // namespace
}  // namespace silo::store
