#include "cluster/jobs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace silo::cluster {
namespace {

class JobRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("silo-jobs-" + std::to_string(std::random_device()()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

wire::JobInfo job(std::string id) {
  wire::JobInfo j;
  j.set_id(std::move(id));
  j.set_kind("rebalance");
  j.set_started_unix_nanos(10);
  return j;
}

TEST_F(JobRegistryTest, StartAndFinishArePersistedProgressIsNot) {
  {
    auto jobs = JobRegistry::open(dir_.string());
    ASSERT_TRUE(jobs.has_value()) << jobs.error();
    ASSERT_TRUE((*jobs)->start(job("rebalance-1")).is_ok());
    ASSERT_TRUE((*jobs)->start(job("rebalance-2")).is_ok());
    wire::JobInfo progress = job("rebalance-2");
    progress.set_objects_done(42);
    (*progress.mutable_nodes())["t1"].set_objects_moved(42);
    (*jobs)->update(progress);
    EXPECT_EQ((*jobs)->find("rebalance-2")->objects_done(), 42u);
    EXPECT_EQ((*jobs)->find("rebalance-2")->state(), "running");
    ASSERT_TRUE((*jobs)->finish("rebalance-1", "preempted", "by rebalance-2", 20).is_ok());
    // Finishing twice, or an unknown job, changes nothing.
    ASSERT_TRUE((*jobs)->finish("rebalance-1", "finished", "", 30).is_ok());
    ASSERT_TRUE((*jobs)->finish("rebalance-9", "finished", "", 30).is_ok());
    (*jobs)->update(job("rebalance-1"));  // not running: ignored
    EXPECT_EQ((*jobs)->find("rebalance-1")->state(), "preempted");
    ASSERT_TRUE((*jobs)->checkpoint(progress).is_ok());
  }
  auto reopened = JobRegistry::open(dir_.string());
  ASSERT_TRUE(reopened.has_value());
  const auto list = (*reopened)->list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id(), "rebalance-1");
  EXPECT_EQ(list[0].state(), "preempted");
  EXPECT_EQ(list[0].detail(), "by rebalance-2");
  EXPECT_EQ(list[0].finished_unix_nanos(), 20);
  EXPECT_EQ(list[1].state(), "running");
  EXPECT_EQ(list[1].objects_done(), 42u);  // checkpointed
  EXPECT_TRUE(list[1].nodes().empty());    // per-node progress is rebuilt, not kept
}

TEST_F(JobRegistryTest, KeepsTheNewestJobsOnly) {
  auto jobs = JobRegistry::open(dir_.string());
  ASSERT_TRUE(jobs.has_value());
  for (size_t i = 0; i < JobRegistry::kMaxJobs + 5; ++i) {
    ASSERT_TRUE((*jobs)->start(job("rebalance-" + std::to_string(i))).is_ok());
  }
  const auto list = (*jobs)->list();
  ASSERT_EQ(list.size(), JobRegistry::kMaxJobs);
  EXPECT_EQ(list.front().id(), "rebalance-5");
  EXPECT_FALSE((*jobs)->find("rebalance-0").has_value());
}

TEST_F(JobRegistryTest, CorruptFileIsAnErrorNotACrash) {
  std::ofstream(dir_ / "jobs.pb") << "not a protobuf at all";
  auto jobs = JobRegistry::open(dir_.string());
  ASSERT_FALSE(jobs.has_value());
  EXPECT_EQ(jobs.error().code(), Code::kDataLoss);
}

}  // namespace
}  // namespace silo::cluster
