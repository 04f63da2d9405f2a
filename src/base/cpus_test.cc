#include "base/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace silo::cpus {
namespace {

TEST(CpusTest, AQuotaCountsWholeCpusRoundedUp) {
  EXPECT_EQ(quota_of("max 100000\n"), std::nullopt) << "no limit";
  EXPECT_EQ(quota_of("200000 100000\n"), 2u);
  EXPECT_EQ(quota_of("150000 100000"), 2u) << "1.5 CPUs get two threads";
  EXPECT_EQ(quota_of("50000 100000"), 1u) << "never fewer than one";
  EXPECT_EQ(quota_of(""), std::nullopt) << "no cgroup v2 file";
  EXPECT_EQ(quota_of("100000 0"), std::nullopt);
  EXPECT_EQ(quota_of("garbage"), std::nullopt);
}

TEST(CpusTest, UsableIsAtMostTheAffinityMaskAndAtLeastOne) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_GE(usable(), 1u);
  EXPECT_LE(usable(), static_cast<uint32_t>(CPU_COUNT(&set)));
}

}  // namespace
}  // namespace silo::cpus
