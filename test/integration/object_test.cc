// Object data path: names, listing pages, a big object with ranges, metadata, forwarding
// between targets and redirect mode.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "base/base64.h"
#include "placement/hrw.h"
#include "test_util.h"
#include "testing/random.h"

namespace silo::integration {
namespace {

std::string md5_raw(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_md5(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string to_hex(std::string_view raw) {
  std::string out;
  for (unsigned char ch : raw) out += fmt::format("{:02x}", ch);
  return out;
}

std::string base64_of(std::string_view raw) {
  return base64::encode({reinterpret_cast<const unsigned char*>(raw.data()), raw.size()});
}

// The proxy asks each target for its share of a page plus a margin and cuts the merge
// at the smallest last name of a target that had more. Names that crowd onto one
// target force that cut early; a second round must still fill every page, in order,
// each name once.
TEST(ObjectTest, ListingPagesStayFullWhenNamesCrowdOneTarget) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .env = {{"SILO_DURABILITY", "page_cache"}}}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("crowd"));
  ASSERT_OK_AND_ASSIGN(const client::BucketEntry bucket, c.bucket_props("crowd"));
  const std::vector<std::string> targets = cluster->target_ids();
  ASSERT_EQ(targets.size(), 3u);
  const placement::HrwCandidates hrw(targets);
  std::vector<std::string> names;
  size_t crowded = 0, others = 0;
  for (int i = 0; crowded < 300 || others < 10; ++i) {
    std::string name = fmt::format("n-{:06}", i);
    const bool on_first = hrw.id(hrw.owner(ObjectRef{BucketId(bucket.id), name})) == targets[0];
    if (on_first ? crowded++ < 300 : others++ < 10) names.push_back(std::move(name));
  }
  for (const auto& name : names) ASSERT_OK(c.put("crowd", name, name));
  std::sort(names.begin(), names.end());

  std::vector<std::string> got;
  std::string token;
  do {
    ASSERT_OK_AND_ASSIGN(const client::ListPage page, c.list("crowd", "", 100, token));
    token = page.next_token;
    if (!token.empty()) {
      EXPECT_EQ(page.objects.size(), 100u) << "a page before the last is short";
    }
    for (const auto& o : page.objects) got.push_back(o.name);
    ASSERT_LE(got.size(), names.size()) << "the listing repeats names";
  } while (!token.empty());
  EXPECT_EQ(got, names);
}

TEST(ObjectTest, AwkwardNamesRoundTripAndListOnce) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("names"));
  const std::vector<std::string> names = {
      "a",
      "a/b",
      "dir/sub/file.txt",
      "with space",
      "unicod\xC3\xA9-\xE5\x90\x8D\xE5\x89\x8D-\xF0\x9F\x98\x80",
      "100%",
      "%41%",
      "..",
      "x/../y",
      "what?",
      "a?b=c&d",
      "hash#tag",
      "plus+sign",
      "tab\tand\"quote",
      std::string(1024, 'n'),
  };
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string bytes = fmt::format("object {} named {}", i, names[i]);
    ASSERT_OK_AND_ASSIGN(const client::PutResult put, c.put("names", names[i], bytes));
    EXPECT_EQ(put.size, bytes.size()) << "name #" << i;
    EXPECT_EQ(put.name, names[i]) << "the PUT answer names another object (name #" << i << ")";
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string bytes = fmt::format("object {} named {}", i, names[i]);
    ASSERT_OK_AND_ASSIGN(const std::string got, c.get("names", names[i]));
    EXPECT_EQ(difference(bytes, got), "") << "name #" << i << " '" << names[i].substr(0, 40) << "'";
    ASSERT_OK_AND_ASSIGN(const client::ObjectInfo info, c.head("names", names[i]));
    EXPECT_EQ(info.size, bytes.size()) << "HEAD of name #" << i;
  }
  EXPECT_CODE(c.put("names", std::string(1025, 'n'), "x"), Code::kInvalidArgument);
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("names"));
  std::map<std::string, int> seen;
  for (const auto& o : listed) ++seen[o.name];
  EXPECT_EQ(listed.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(seen[names[i]], 1) << "name #" << i << " '" << names[i].substr(0, 40) << "' in the listing";
  }
  // Deleting `a` leaves `a/b` alone.
  ASSERT_OK(c.remove("names", "a"));
  EXPECT_CODE(c.get("names", "a"), Code::kNotFound);
  EXPECT_OK(c.get("names", "a/b"));
}

TEST(ObjectTest, MetadataAndContentMd5) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("meta"));
  const std::string bytes = "the quick brown fox";
  http::Headers headers;
  headers.set("x-amz-meta-colour", "blue");
  headers.set("Content-Type", "text/plain");
  headers.set("Content-MD5", base64_of(md5_raw(bytes)));
  ASSERT_OK_AND_ASSIGN(const client::PutResult put, c.put("meta", "fox.txt", bytes, headers));
  EXPECT_EQ(put.etag, to_hex(md5_raw(bytes)));
  ASSERT_OK_AND_ASSIGN(const client::ObjectInfo info, c.head("meta", "fox.txt"));
  EXPECT_EQ(info.etag, put.etag);
  EXPECT_EQ(info.headers.get("x-amz-meta-colour").value_or("<none>"), "blue");
  EXPECT_EQ(info.headers.get("Content-Type").value_or("<none>"), "text/plain");

  http::Headers wrong;
  wrong.set("Content-MD5", base64_of(md5_raw("something else")));
  EXPECT_CODE(c.put("meta", "bad-md5", bytes, wrong), Code::kInvalidArgument);
  EXPECT_CODE(c.head("meta", "bad-md5"), Code::kNotFound);
}

TEST(ObjectTest, ListingPagesAndPrefixes) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .env = {{"SILO_DURABILITY", "page_cache"}}}));
  ASSERT_OK(cluster->client().create_bucket("many"));
  // 2,500 names: 1,000 under a/, 1,000 under b/, 500 under c/.
  std::vector<std::string> names;
  for (int i = 0; i < 2500; ++i) {
    names.push_back(fmt::format("{}/obj-{:05}", i < 1000 ? 'a' : i < 2000 ? 'b' : 'c', i));
  }
  constexpr int kThreads = 4;
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::mutex failure_mutex;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto c = cluster->new_client();
      if (!c) {
        ++failures;
        return;
      }
      for (size_t i = next++; i < names.size(); i = next++) {
        if (auto put = (*c)->put("many", names[i], names[i]); !put) {
          std::lock_guard lock(failure_mutex);
          if (failures++ == 0) first_failure = put.error().to_string();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0) << "first failed PUT: " << first_failure;
  client::Client& c = cluster->client();

  for (const size_t page_size : {size_t{1000}, size_t{7}}) {
    std::vector<std::string> got;
    std::string token;
    size_t pages = 0;
    do {
      ASSERT_OK_AND_ASSIGN(const client::ListPage page, c.list("many", "", page_size, token));
      ASSERT_LE(page.objects.size(), page_size);
      for (const auto& o : page.objects) got.push_back(o.name);
      token = page.next_token;
      ASSERT_LT(++pages, 1000u) << "the listing does not end";
    } while (!token.empty());
    EXPECT_EQ(pages, (names.size() + page_size - 1) / page_size) << "pages of " << page_size;
    ASSERT_EQ(got.size(), names.size()) << "names listed with pages of " << page_size;
    for (size_t i = 0; i < names.size(); ++i) {
      ASSERT_EQ(got[i], names[i]) << "entry " << i << " with pages of " << page_size;
    }
  }

  ASSERT_OK_AND_ASSIGN(const auto b_names, c.list_all("many", "b/", 300));
  ASSERT_EQ(b_names.size(), 1000u);
  EXPECT_EQ(b_names.front().name, "b/obj-01000");
  EXPECT_EQ(b_names.back().name, "b/obj-01999");
  ASSERT_OK_AND_ASSIGN(const auto ten, c.list_all("many", "c/obj-0201"));
  ASSERT_EQ(ten.size(), 10u);
  for (size_t i = 0; i < ten.size(); ++i) EXPECT_EQ(ten[i].name, fmt::format("c/obj-0201{}", i));
  ASSERT_OK_AND_ASSIGN(const client::ListPage none, c.list("many", "zzz/"));
  EXPECT_TRUE(none.objects.empty());
  EXPECT_TRUE(none.next_token.empty());
  ASSERT_OK_AND_ASSIGN(const client::ListPage exact, c.list("many", "a/", 1000));
  EXPECT_EQ(exact.objects.size(), 1000u);
  // One of 1,000 entries listed with limit 1,000 may or may not say there is more; if it
  // does, the next page must be empty.
  if (!exact.next_token.empty()) {
    ASSERT_OK_AND_ASSIGN(const client::ListPage rest, c.list("many", "a/", 1000, exact.next_token));
    EXPECT_TRUE(rest.objects.empty());
    EXPECT_TRUE(rest.next_token.empty());
  }
  for (const char* bad : {"0", "10001", "-1", "ten"}) {
    ASSERT_OK_AND_ASSIGN(const client::Response r,
                         c.request(http::Method::kGet, std::string("/v1/buckets/many?limit=") + bad));
    EXPECT_EQ(r.status, 400) << "limit=" << bad << ": " << r.body;
  }
  ASSERT_OK_AND_ASSIGN(const client::Response bad_token,
                       c.request(http::Method::kGet, "/v1/buckets/many?token=xyz"));
  EXPECT_EQ(bad_token.status, 400) << bad_token.body;
}

TEST(ObjectTest, BigObjectRoundTripsWithRanges) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("big"));
  silo::testing::Random random;
  constexpr size_t kSize = 64 * 1024 * 1024;
  const std::string bytes = random.bytes(kSize);

  size_t offset = 0;
  ASSERT_OK_AND_ASSIGN(const client::PutResult put,
                       c.put_stream("big", "blob", kSize, [&](std::span<char> buffer) {
                         const size_t n = std::min(buffer.size(), kSize - offset);
                         std::memcpy(buffer.data(), bytes.data() + offset, n);
                         offset += n;
                         return n;
                       }));
  EXPECT_EQ(put.size, kSize);
  EXPECT_EQ(put.etag, to_hex(md5_raw(bytes)));

  ASSERT_OK_AND_ASSIGN(const std::string whole, c.get("big", "blob"));
  ASSERT_EQ(difference(bytes, whole), "") << "GET of the 64 MiB object";

  size_t received = 0;
  std::string mismatch;
  ASSERT_OK_AND_ASSIGN(const client::ObjectInfo streamed, c.get_stream("big", "blob", [&](std::span<const char> d) {
    if (mismatch.empty() && (received + d.size() > kSize || std::memcmp(d.data(), bytes.data() + received, d.size()) != 0)) {
      mismatch = fmt::format("streamed bytes differ in the {} bytes at offset {}", d.size(), received);
    }
    received += d.size();
    return Status::ok();
  }));
  EXPECT_EQ(mismatch, "");
  EXPECT_EQ(received, kSize);
  EXPECT_EQ(streamed.status, 200);

  struct Case {
    ByteRange range;
    size_t first;
    size_t length;
  };
  const Case cases[] = {
      {ByteRange::first_last(0, 0), 0, 1},
      {ByteRange::first_last(1000, 1999), 1000, 1000},
      {ByteRange::first_last(kSize - 10, kSize + 100), kSize - 10, 10},  // clamped to the end
      {ByteRange::from(kSize - 12345), kSize - 12345, 12345},
      {ByteRange::from(33 * 1024 * 1024 + 7), 33 * 1024 * 1024 + 7, kSize - (33 * 1024 * 1024 + 7)},
      {ByteRange::suffix(500), kSize - 500, 500},
      {ByteRange::suffix(kSize + 1), 0, kSize},  // a suffix longer than the object is all of it
  };
  for (const Case& k : cases) {
    http::Headers headers;
    headers.set("Range", k.range.header);
    ASSERT_OK_AND_ASSIGN(const client::Response r,
                         c.request(http::Method::kGet, client::Client::object_target("big", "blob"), {}, headers));
    ASSERT_EQ(r.status, 206) << k.range.header << ": " << r.body.substr(0, 200);
    EXPECT_EQ(r.headers.get("Content-Range").value_or("<none>"),
              fmt::format("bytes {}-{}/{}", k.first, k.first + k.length - 1, kSize))
        << k.range.header;
    EXPECT_EQ(difference(std::string_view(bytes).substr(k.first, k.length), r.body), "") << k.range.header;
  }
  for (const ByteRange& bad : {ByteRange::from(kSize), ByteRange::first_last(kSize + 5, kSize + 10),
                               ByteRange::suffix(0)}) {
    http::Headers headers;
    headers.set("Range", bad.header);
    ASSERT_OK_AND_ASSIGN(const client::Response r,
                         c.request(http::Method::kGet, client::Client::object_target("big", "blob"), {}, headers));
    EXPECT_EQ(r.status, 416) << bad.header;
    EXPECT_EQ(r.headers.get("Content-Range").value_or("<none>"), fmt::format("bytes */{}", kSize)) << bad.header;
    EXPECT_CODE(c.get("big", "blob", bad), Code::kOutOfRange);
  }
}

TEST(ObjectTest, RequestToANonOwnerTargetIsForwarded) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1, .targets = 3}));
  ASSERT_OK(cluster->client().create_bucket("forward"));
  ASSERT_OK_AND_ASSIGN(auto t1, cluster->client_of("t1"));
  ASSERT_OK_AND_ASSIGN(auto t3, cluster->client_of("t3"));
  silo::testing::Random random;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 24; ++i) {
    const std::string name = fmt::format("via-t1/{:02}", i);
    objects[name] = random.bytes(random.uniform(1, 300 * 1024));
    ASSERT_OK_AND_ASSIGN(const client::PutResult put, t1->put("forward", name, objects[name]));
    EXPECT_EQ(put.size, objects[name].size()) << name;
  }
  ASSERT_OK_AND_ASSIGN(const NodeInfo t1_node, cluster->node("t1"));
  const size_t on_t1 = object_file_count(t1_node);
  ASSERT_LT(on_t1, objects.size()) << "t1 owns every object: nothing was forwarded";
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string via_proxy, cluster->client().get("forward", name));
    EXPECT_EQ(difference(bytes, via_proxy), "") << name << " read through the proxy";
    ASSERT_OK_AND_ASSIGN(const std::string via_t3, t3->get("forward", name));
    EXPECT_EQ(difference(bytes, via_t3), "") << name << " read through t3";
  }
  // Delete through a target as well; the proxy then reports it gone.
  const std::string first = objects.begin()->first;
  ASSERT_OK(t3->remove("forward", first));
  EXPECT_CODE(cluster->client().get("forward", first), Code::kNotFound);
  ASSERT_OK_AND_ASSIGN(const auto listed, cluster->client().list_all("forward"));
  EXPECT_EQ(listed.size(), objects.size() - 1);
}

// A client with `direct` sends object calls straight to the owner target: they keep
// working while the proxy is down (the node map and bucket id are cached), and a client
// whose map names a target that does not answer falls back to the proxy.
TEST(ObjectTest, DirectClientTalksToTheOwnerTarget) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 2, .targets = 3}));
  ASSERT_OK(cluster->client().create_bucket("direct"));
  client::ClientOptions options;
  options.direct = true;
  ASSERT_OK_AND_ASSIGN(auto direct, cluster->new_client(options));
  silo::testing::Random random;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 24; ++i) {
    const std::string name = fmt::format("d/{:02}", i);
    objects[name] = random.bytes(random.uniform(1, 200 * 1024));
    ASSERT_OK(direct->put("direct", name, objects[name]).status());
  }
  // Each object's only copy is on its owner, and every target got some.
  size_t files = 0;
  for (const std::string id : {"t1", "t2", "t3"}) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo node, cluster->node(id));
    const size_t here = object_file_count(node);
    EXPECT_GT(here, 0u) << id;
    files += here;
  }
  EXPECT_EQ(files, objects.size());

  // The proxy the client knows goes away: object calls still work, straight to targets.
  ASSERT_OK(cluster->stop("p1"));
  for (const auto& [name, bytes] : objects) {
    ASSERT_OK_AND_ASSIGN(const std::string got, direct->get("direct", name));
    EXPECT_EQ(difference(bytes, got), "") << name;
    ASSERT_OK_AND_ASSIGN(const client::ObjectInfo info, direct->head("direct", name));
    EXPECT_EQ(info.size, bytes.size()) << name;
  }
  std::string streamed;
  ASSERT_OK(direct->get_stream("direct", "d/00", [&](std::span<const char> chunk) {
    streamed.append(chunk.data(), chunk.size());
    return Status::ok();
  }).status());
  EXPECT_EQ(difference(objects["d/00"], streamed), "");
  ASSERT_OK(direct->put("direct", "d/new", "written while the proxy is down").status());
  ASSERT_OK(direct->remove("direct", "d/01"));
  EXPECT_CODE(direct->get("direct", "d/01"), Code::kNotFound);
  ASSERT_OK(cluster->restart("p1"));
  ASSERT_OK_AND_ASSIGN(const std::string via_proxy, cluster->client().get("direct", "d/new"));
  EXPECT_EQ(via_proxy, "written while the proxy is down");

  // A target that does not answer: the call goes through the proxy instead.
  ASSERT_OK(cluster->stop("t3"));
  ASSERT_OK_AND_ASSIGN(auto fresh, cluster->new_client(options));
  for (const auto& [name, bytes] : objects) {
    if (name == "d/01") continue;
    auto got = fresh->get("direct", name);
    if (got) {
      EXPECT_EQ(difference(bytes, *got), "") << name;
    } else {
      // t3's objects: the proxy answers for them, and says the owner is down.
      EXPECT_EQ(got.status().code(), Code::kUnavailable) << name << ": " << got.status();
      EXPECT_NE(got.status().message().find("HTTP 503"), std::string::npos) << got.status();
    }
  }
}

TEST(ObjectTest, RedirectModeSends307ToTheOwner) {
  ASSERT_OK_AND_ASSIGN(auto cluster, LocalCluster::start({.proxies = 1,
                                                          .targets = 3,
                                                          .env = {{"SILO_PROXY_MODE", "redirect"}}}));
  client::Client& c = cluster->client();
  ASSERT_OK(c.create_bucket("redir"));
  std::set<std::string> target_urls;
  for (const auto& id : cluster->target_ids()) {
    ASSERT_OK_AND_ASSIGN(const NodeInfo n, cluster->node(id));
    target_urls.insert(n.url);
  }
  auto owner_url_of = [&](std::string_view location) {
    const size_t path = location.find("/v1/");
    return path == std::string_view::npos ? std::string(location) : std::string(location.substr(0, path));
  };
  silo::testing::Random random;
  for (int i = 0; i < 6; ++i) {
    const std::string name = fmt::format("dir/obj {}", i);
    const std::string bytes = random.bytes(random.uniform(1, 100 * 1024));
    const std::string target = client::Client::object_target("redir", name);

    ASSERT_OK_AND_ASSIGN(const client::Response put, c.request(http::Method::kPut, target, bytes));
    ASSERT_EQ(put.status, 307) << "PUT " << name << ": " << put.body;
    const std::string location(put.headers.get("Location").value_or(""));
    EXPECT_EQ(location, owner_url_of(location) + target) << "Location of PUT " << name;
    EXPECT_TRUE(target_urls.contains(owner_url_of(location))) << "Location " << location << " is no target";
    ASSERT_OK_AND_ASSIGN(const client::Response put2, c.request(http::Method::kPut, location, bytes));
    ASSERT_EQ(put2.status, 200) << "PUT at " << location << ": " << put2.body;

    ASSERT_OK_AND_ASSIGN(const client::Response get, c.request(http::Method::kGet, target));
    ASSERT_EQ(get.status, 307) << "GET " << name;
    EXPECT_EQ(get.headers.get("Location").value_or(""), location) << "GET and PUT redirect to different owners";
    ASSERT_OK_AND_ASSIGN(const client::Response get2, c.request(http::Method::kGet, location));
    ASSERT_EQ(get2.status, 200) << "GET at " << location;
    EXPECT_EQ(difference(bytes, get2.body), "") << name;

    // The client follows redirects by itself too.
    ASSERT_OK_AND_ASSIGN(const std::string followed, c.get("redir", name));
    EXPECT_EQ(difference(bytes, followed), "") << name << " (followed by the client)";
  }
  ASSERT_OK_AND_ASSIGN(const client::PutResult put, c.put("redir", "followed-put", "payload"));
  EXPECT_EQ(put.size, 7u);
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all("redir"));
  EXPECT_EQ(listed.size(), 7u);
}

}  // namespace
}  // namespace silo::integration
