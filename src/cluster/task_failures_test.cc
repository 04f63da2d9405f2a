#include "cluster/task_failures.h"

#include <gtest/gtest.h>

namespace silo::cluster {
namespace {

TEST(TaskFailuresTest, CountsEveryFailureAndNamesTheFirstObjects) {
  TaskFailures failures;
  failures.fail(Status::unavailable("listing failed"));
  for (size_t i = 0; i < TaskFailures::kMaxFailedObjects + 5; ++i) {
    failures.fail_object("obj-" + std::to_string(i), Status::data_loss("bad bytes"));
  }
  EXPECT_EQ(failures.count(), TaskFailures::kMaxFailedObjects + 6);
  wire::RebalanceProgress progress;
  failures.report(progress);
  EXPECT_EQ(progress.errors(), TaskFailures::kMaxFailedObjects + 6);
  ASSERT_EQ(static_cast<size_t>(progress.failed_objects_size()), TaskFailures::kMaxFailedObjects);
  EXPECT_EQ(progress.failed_objects(0), "obj-0: bad bytes");
  EXPECT_NE(progress.last_error().find("bad bytes"), std::string::npos);
}

}  // namespace
}  // namespace silo::cluster
