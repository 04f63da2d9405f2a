#include "wire/mountpath_json.h"

#include <gtest/gtest.h>

namespace silo::wire {
namespace {

MountpathEntry failed_disk() { return {"mp-2", "/data/d\"2", "failed", "EIO on write", 1ull << 40, 12345, 77}; }

MountpathWork running(std::string reason, int64_t started) {
  MountpathWork work;
  work.state = "running";
  work.reason = std::move(reason);
  work.started_unix_nanos = started;
  return work;
}

TEST(MountpathJsonTest, RoundTrip) {
  auto decoded = parse_mountpath_json(mountpath_json(failed_disk()));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(*decoded, failed_disk());
}

TEST(MountpathJsonTest, BytesAreTheTargets) {
  // rebalance/mountpaths.cc writes these documents by hand; the codec writes the same bytes.
  EXPECT_EQ(mountpath_json({"mp-1", "/d1", "enabled", "", 100, 40, 3}),
            R"({"id":"mp-1","path":"/d1","state":"enabled","failure":"","capacity":100,"available":40,"objects":3})");
  MountpathList list{{{"mp-1", "/d1", "enabled", "", 100, 40, 3}}, {}};
  EXPECT_EQ(mountpath_list_json(list),
            R"({"mountpaths":[{"id":"mp-1","path":"/d1","state":"enabled","failure":"","capacity":100,)"
            R"("available":40,"objects":3}]})");
  list.work = running("mountpath /d2 attached", 5);
  EXPECT_EQ(mountpath_list_json(list).substr(mountpath_list_json(list).find(",\"resilver\"")),
            R"(,"resilver":{"state":"running","reason":"mountpath /d2 attached","detach":"","detach_path":"",)"
            R"("started":5,"finished":0}})");
}

TEST(MountpathJsonTest, StateChangeRoundTrip) {
  const MountpathStateChange change{"mp-\"1", "disabled"};
  EXPECT_EQ(*parse_mountpath_state_json(mountpath_state_json(change)), change);
  // rebalance/mountpaths.cc writes this document by hand; the codec writes the same bytes.
  EXPECT_EQ(mountpath_state_json({"mp-1", "detaching"}), R"({"id":"mp-1","state":"detaching"})");
  auto missing = parse_mountpath_state_json(R"({"id": "mp-1"})");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "a mountpath state change: 'state' is missing");
}

TEST(MountpathJsonTest, ListRoundTrip) {
  MountpathList list;
  EXPECT_EQ(*parse_mountpath_list_json(mountpath_list_json(list)), list);
  list.mountpaths = {failed_disk(), MountpathEntry{"mp-1", "/data/d1", "enabled", "", 10, 5, 0}};
  list.work = running("mountpath /data/d1 attached", 9);
  auto running = parse_mountpath_list_json(mountpath_list_json(list));
  ASSERT_TRUE(running.has_value()) << running.error();
  EXPECT_EQ(*running, list);
  list.work = {"failed", "detach of /data/d2", "mp-2", "/data/d2", 9, 19, 100, 60, 6000, 2, "t3 unreachable"};
  auto failed = parse_mountpath_list_json(mountpath_list_json(list));
  ASSERT_TRUE(failed.has_value()) << failed.error();
  EXPECT_EQ(*failed, list);
}

TEST(MountpathJsonTest, MalformedNamesTheDocumentAndField) {
  const std::pair<const char*, const char*> cases[] = {
      {"null", "the mountpath list: not a JSON object"},
      {R"({"resilver": {}})", "the mountpath list: 'mountpaths' is missing"},
      {R"({"mountpaths": [{"id": "a", "path": "/a"}]})", "the mountpath list: 'mountpaths[0].state' is missing"},
      {R"({"mountpaths": [], "resilver": {"state": "running", "started": "x"}})",
       "the mountpath list: 'resilver.started' must be an integer"},
      {R"({"mountpaths": [], "resilver": {"reason": "x"}})", "the mountpath list: 'resilver.state' is missing"},
  };
  for (const auto& [text, message] : cases) {
    auto decoded = parse_mountpath_list_json(text);
    ASSERT_FALSE(decoded.has_value()) << text;
    EXPECT_EQ(decoded.error().code(), Code::kInvalidArgument) << text;
    EXPECT_EQ(decoded.error().message(), message) << text;
  }
  auto entry = parse_mountpath_json(R"({"id": "a", "path": "/a", "state": "enabled", "capacity": -1})");
  ASSERT_FALSE(entry.has_value());
  EXPECT_EQ(entry.error().message(), "a mountpath: 'capacity' must be a non-negative integer");
}

}  // namespace
}  // namespace silo::wire
