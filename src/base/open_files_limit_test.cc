#include "base/open_files_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace silo {
namespace {

TEST(OpenFilesLimitTest, RaisesTheSoftLimitToTheHardOneAndReturnsIt) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  const uint64_t limit = raise_open_files_limit();
  rlimit after{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, after.rlim_max) << "an unprivileged process may raise its soft limit to the hard one";
  EXPECT_GE(after.rlim_cur, before.rlim_cur);
  if (after.rlim_cur == RLIM_INFINITY) {
    EXPECT_EQ(limit, UINT64_MAX);
  } else {
    EXPECT_EQ(limit, static_cast<uint64_t>(after.rlim_cur));
  }
}

}  // namespace
}  // namespace silo
