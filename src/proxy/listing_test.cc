#include "proxy/detail/listing.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace silo::proxy::detail {
namespace {

struct Name {
  std::string name;
  int64_t mtime = 0;
  bool is_remote_only = false;
};

wire::ListPage page(std::initializer_list<Name> names, bool is_truncated = false) {
  wire::ListPage out;
  for (const Name& n : names) {
    wire::ListEntry& entry = *out.add_entries();
    entry.set_name(n.name);
    entry.set_mtime_unix_nanos(n.mtime);
    entry.set_is_remote_only(n.is_remote_only);
  }
  out.set_is_truncated(is_truncated);
  return out;
}

std::vector<std::string> names_of(const std::vector<wire::ListEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.name());
  return out;
}

using Names = std::vector<std::string>;

TEST(MergePagesTest, InterleavesSortedPagesOfEveryTarget) {
  std::vector<Result<wire::ListPage>> pages;
  pages.emplace_back(page({{"a"}, {"d"}, {"e"}}));
  pages.emplace_back(page({{"b"}, {"c"}, {"f"}}));
  pages.emplace_back(page({}));
  auto merged = merge_pages(pages, 10);
  ASSERT_TRUE(merged.has_value()) << merged.status();
  EXPECT_EQ(names_of(merged->first), (Names{"a", "b", "c", "d", "e", "f"}));
  EXPECT_FALSE(merged->second) << "no target had more";
}

TEST(MergePagesTest, ANameOnSeveralTargetsAppearsOnceNewestKept) {
  std::vector<Result<wire::ListPage>> pages;
  pages.emplace_back(page({{"a", 5}, {"b", 1}}));
  pages.emplace_back(page({{"a", 9}, {"c", 1}}));  // moved by a rebalance: written later
  pages.emplace_back(page({{"a", 7}}));
  auto merged = merge_pages(pages, 10);
  ASSERT_TRUE(merged.has_value()) << merged.status();
  EXPECT_EQ(names_of(merged->first), (Names{"a", "b", "c"}));
  EXPECT_EQ(merged->first[0].mtime_unix_nanos(), 9);
}

TEST(MergePagesTest, CachedCopyWinsOverTheBackendsEntry) {
  std::vector<Result<wire::ListPage>> pages;
  pages.emplace_back(page({{"a", 1}}));                          // a target's cached copy
  pages.emplace_back(page({{"a", 50, true}, {"b", 50, true}}));  // the backend, newer
  auto merged = merge_pages(pages, 10);
  ASSERT_TRUE(merged.has_value()) << merged.status();
  ASSERT_EQ(names_of(merged->first), (Names{"a", "b"}));
  EXPECT_FALSE(merged->first[0].is_remote_only()) << "cached, whatever the times say";
  EXPECT_TRUE(merged->first[1].is_remote_only());
}

TEST(MergePagesTest, PageEndsAtTheSmallestLastNameOfATruncatedTarget) {
  // Target 1 sent up to "c" and has more: it may hold "d", so nothing past "c" is known.
  std::vector<Result<wire::ListPage>> pages;
  pages.emplace_back(page({{"a"}, {"c"}}, /*is_truncated=*/true));
  pages.emplace_back(page({{"b"}, {"d"}, {"e"}}));
  auto merged = merge_pages(pages, 10);
  ASSERT_TRUE(merged.has_value()) << merged.status();
  EXPECT_EQ(names_of(merged->first), (Names{"a", "b", "c"}));
  EXPECT_TRUE(merged->second) << "more follow";
}

TEST(MergePagesTest, LimitCutsThePageAndSaysMoreFollow) {
  std::vector<Result<wire::ListPage>> pages;
  pages.emplace_back(page({{"a"}, {"c"}, {"e"}}));
  pages.emplace_back(page({{"b"}, {"d"}}));
  auto merged = merge_pages(pages, 3);
  ASSERT_TRUE(merged.has_value()) << merged.status();
  EXPECT_EQ(names_of(merged->first), (Names{"a", "b", "c"}));
  EXPECT_TRUE(merged->second);

  // A duplicate right after the cut is no more names: the page is exactly full.
  std::vector<Result<wire::ListPage>> twice;
  twice.emplace_back(page({{"a"}, {"b"}}));
  twice.emplace_back(page({{"a"}, {"b"}}));
  auto exact = merge_pages(twice, 2);
  ASSERT_TRUE(exact.has_value()) << exact.status();
  EXPECT_EQ(names_of(exact->first), (Names{"a", "b"}));
  EXPECT_FALSE(exact->second);
}

TEST(MergePagesTest, AFailedTargetFailsTheListing) {
  std::vector<Result<wire::ListPage>> pages;
  pages.emplace_back(page({{"a"}}));
  pages.emplace_back(Status::unavailable("target t2 is down"));
  auto merged = merge_pages(pages, 10);
  ASSERT_FALSE(merged.has_value());
  EXPECT_EQ(merged.status().code(), Code::kUnavailable) << "never a silently incomplete listing";
}

TEST(ContinuationTokenTest, RoundTripsAnyNameAndRefusesGarbage) {
  const std::string name("dir/a b\xc3\xa9\x01", 10);
  const std::string token = token_of(name);
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos)
      << "safe in a URL: " << token;
  EXPECT_EQ(name_of_token(token), name);
  EXPECT_EQ(name_of_token(""), std::string());
  EXPECT_EQ(name_of_token("abc"), std::nullopt) << "odd length";
  EXPECT_EQ(name_of_token("zz"), std::nullopt);
  EXPECT_EQ(name_of_token("+1"), std::nullopt) << "from_chars would take a sign elsewhere";
}

// Feeds `names` to `folder` until it is full.
void fold(S3PageFolder& folder, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    wire::ListEntry entry;
    entry.set_name(name);
    if (!folder.add(entry)) return;
  }
}

TEST(S3PageFolderTest, DelimiterFoldsKeysIntoCommonPrefixes) {
  S3PageFolder folder("photos/", "/", 1000);
  fold(folder, {"photos/2023/a.jpg", "photos/2023/b.jpg", "photos/2024/c.jpg", "photos/cover.jpg"});
  EXPECT_EQ(folder.prefixes(), (Names{"photos/2023/", "photos/2024/"}));
  EXPECT_EQ(names_of(folder.contents()), (Names{"photos/cover.jpg"}));
  EXPECT_EQ(folder.count(), 3u) << "a common prefix counts as one key";
  EXPECT_FALSE(folder.is_truncated());
}

TEST(S3PageFolderTest, MaxKeysTruncatesAndTellsWhereToResume) {
  S3PageFolder folder("", "/", 2);
  fold(folder, {"a/1", "a/2", "b", "c/1", "d"});
  EXPECT_TRUE(folder.is_truncated());
  EXPECT_EQ(folder.prefixes(), (Names{"a/"}));
  EXPECT_EQ(names_of(folder.contents()), (Names{"b"}));
  EXPECT_EQ(folder.last_item(), "b") << "NextMarker";
  EXPECT_EQ(folder.resume_from(), "b");

  S3PageFolder ends_in_prefix("", "/", 1);
  fold(ends_in_prefix, {"a/1", "a/2", "b"});
  EXPECT_TRUE(ends_in_prefix.is_truncated());
  EXPECT_EQ(ends_in_prefix.last_item(), "a/");
  EXPECT_EQ(ends_in_prefix.resume_from(), "a/\xff")
      << "the next page starts past everything under a/";

  S3PageFolder none("", "", 0);
  fold(none, {"a"});
  EXPECT_TRUE(none.is_truncated()) << "max-keys=0 of a non-empty bucket";
  EXPECT_EQ(none.count(), 0u);
}

TEST(S3PageFolderTest, MarkerThatIsACommonPrefixSkipsWhatItFolded) {
  S3PageFolder folder("photos/", "/", 1000);
  EXPECT_EQ(folder.start_after("photos/2023/"), "photos/2023/\xff");
  EXPECT_EQ(folder.start_after("photos/2023/a.jpg"), "photos/2023/a.jpg") << "a key marker stays";
  EXPECT_EQ(folder.start_after("photos/a/b/"), "photos/a/b/")
      << "two delimiters: not a common prefix";
  EXPECT_EQ(folder.start_after("other/x/"), "other/x/") << "outside the prefix";
  S3PageFolder flat("", "", 1000);
  EXPECT_EQ(flat.start_after("a/"), "a/") << "no delimiter, no folding";
}

TEST(S3PageFolderTest, NextFetchSkipsNamesUnderTheLastCommonPrefix) {
  S3PageFolder folder("", "/", 1000);
  fold(folder, {"a/1", "a/2"});
  EXPECT_EQ(folder.fetch_after("a/2"), "a/\xff");
  fold(folder, {"b"});
  EXPECT_EQ(folder.fetch_after("b"), "b");
}

}  // namespace
}  // namespace silo::proxy::detail
