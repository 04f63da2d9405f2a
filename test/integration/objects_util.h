#pragma once

// Helpers of the suites that fill a bucket and check it back (rebalance, data protection):
// random objects written in parallel, every byte read back, object files counted on disk,
// a reader thread that counts failed GETs.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "test_util.h"
#include "testing/random.h"
#include "wire/mountpath_json.h"

namespace silo::integration {

inline constexpr std::string_view kBucket = "shards";

using Objects = std::map<std::string, std::string>;

// Writers that PUT random objects in the background, for the fault tests, keeping a
// ledger of every attempt: whether it was acknowledged, and its bytes as a seed
// (Random(seed).bytes(size)). Each thread writes through the node at urls[i % size]
// (the cluster's endpoint when empty), with `write` (a plain PUT unless given). stop()
// joins them; check() reads the ledger back.
class LedgerWriters {
 public:
  using WriteFn = std::function<Status(client::Client& c, std::string_view bucket, const std::string& name,
                                       const std::string& bytes)>;
  static Status put(client::Client& c, std::string_view bucket, const std::string& name, const std::string& bytes) {
    return c.put(bucket, name, bytes).status();
  }

  struct Attempt {
    uint64_t seed = 0;
    size_t size = 0;
    bool is_acknowledged = false;  // the PUT answered 200
    std::string error;
  };

  LedgerWriters(LocalCluster& cluster, std::string bucket, int threads, size_t min_size, size_t max_size,
                std::vector<std::string> urls = {}, WriteFn write = put) {
    silo::testing::Random random;
    for (int t = 0; t < threads; ++t) {
      std::string url = urls.empty() ? "" : urls[static_cast<size_t>(t) % urls.size()];
      threads_.emplace_back([this, &cluster, bucket, t, min_size, max_size, url, write,
                             rng = random.fork()]() mutable {
        auto c = cluster.new_client({.io_timeout = std::chrono::milliseconds(15000)}, url);
        if (!c) return;
        for (int i = 0; !is_stopping_; ++i) {
          Attempt a;
          a.seed = rng.next();
          a.size = rng.uniform(min_size, max_size);
          const std::string name = fmt::format("w{}/obj-{:05}", t, i);
          const Status written = write(**c, bucket, name, bytes_of(a));
          a.is_acknowledged = written.is_ok();
          if (!written.is_ok()) a.error = written.to_string();
          acknowledged_ += a.is_acknowledged;
          ++finished_;
          MutexLock lock(mutex_);
          attempts_.emplace(name, std::move(a));
        }
      });
    }
  }
  ~LedgerWriters() { stop(); }
  LedgerWriters(const LedgerWriters&) = delete;
  LedgerWriters& operator=(const LedgerWriters&) = delete;

  static std::string bytes_of(const Attempt& a) { return silo::testing::Random(a.seed).bytes(a.size); }
  int acknowledged() const { return acknowledged_; }
  int finished() const { return finished_; }
  // Waits until `count` more PUTs than now have finished (answered or failed).
  Status wait_for_more(int count, std::chrono::seconds timeout) {
    const int from = finished_;
    return silo::testing::wait_until([&] { return finished_ >= from + count; }, timeout,
                                     fmt::format("{} more PUTs", count));
  }
  void stop() {
    is_stopping_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  // After stop(): every acknowledged PUT reads back byte for byte through `c`; a failed
  // one is absent (404) or whole (its commit may have landed before the answer was
  // lost), never different. Returns how many failed.
  size_t check(client::Client& c, std::string_view bucket) {
    std::map<std::string, Attempt> attempts;
    {
      MutexLock lock(mutex_);
      attempts = attempts_;
    }
    size_t failed = 0;
    for (const auto& [name, a] : attempts) {
      auto got = c.get(bucket, name);
      if (a.is_acknowledged) {
        EXPECT_TRUE(got.has_value()) << "acknowledged PUT of " << name << " is lost: " << got.error();
        if (got) {
          EXPECT_EQ(difference(bytes_of(a), *got), "") << "acknowledged object " << name;
        }
        continue;
      }
      ++failed;
      if (got) {
        EXPECT_EQ(difference(bytes_of(a), *got), "") << "failed PUT of " << name << " (" << a.error
                                                     << ") left a different object";
      } else {
        EXPECT_EQ(got.error().code(), Code::kNotFound) << "failed PUT of " << name << ": " << got.error();
      }
    }
    return failed;
  }
  size_t attempts() {
    MutexLock lock(mutex_);
    return attempts_.size();
  }

 private:
  std::atomic<bool> is_stopping_{false};
  std::atomic<int> acknowledged_{0};
  std::atomic<int> finished_{0};
  Mutex mutex_;
  std::map<std::string, Attempt> attempts_ GUARDED_BY(mutex_);
  std::vector<std::thread> threads_;
};

// The kill tests' middle: kills `target` under the writers' load, keeps the load on until
// `more` further writes finished (the kill is noticed and hits writes in flight), stops the
// writers, restarts the target and waits until it is online again.
inline Status kill_under_writers_and_restart(LocalCluster& cluster, LedgerWriters& writers, std::string_view target,
                                             int more, std::chrono::seconds timeout) {
  RETURN_IF_ERROR(cluster.kill(target));
  const Status loaded = writers.wait_for_more(more, timeout);
  writers.stop();
  RETURN_IF_ERROR(loaded);
  RETURN_IF_ERROR(cluster.restart(target));
  return cluster.wait_for_node_state(target, "online", std::chrono::seconds(10));
}

// `count` objects of 1 B .. 48 KiB, a few of 3 MiB, written by 4 threads.
inline Objects put_objects(LocalCluster& cluster, int count, std::string_view prefix = "obj",
                           std::string_view bucket = kBucket) {
  Objects objects;
  silo::testing::Random random;
  for (int i = 0; i < count; ++i) {
    const size_t size = i % 500 == 7 ? 3 << 20 : random.uniform(1, 48 * 1024);
    objects[fmt::format("{}-{:05}", prefix, i)] = random.bytes(size);
  }
  std::vector<std::pair<std::string, std::string>> items(objects.begin(), objects.end());
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&] {
      auto client = cluster.new_client();
      if (!client) {
        ++failures;
        return;
      }
      for (size_t i = next++; i < items.size(); i = next++) {
        if (!(*client)->put(bucket, items[i].first, items[i].second)) ++failures;
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0) << "PUTs failed";
  return objects;
}

inline void expect_all_readable(client::Client& c, const Objects& objects, std::string_view bucket = kBucket) {
  size_t bad = 0;
  for (const auto& [name, bytes] : objects) {
    auto got = c.get(bucket, name);
    if (!got) {
      if (++bad <= 5) ADD_FAILURE() << "GET " << name << ": " << got.error();
      continue;
    }
    const std::string diff = difference(bytes, *got);
    if (!diff.empty() && ++bad <= 5) ADD_FAILURE() << name << ": " << diff;
  }
  EXPECT_EQ(bad, 0u) << "objects unreadable or wrong";
}

// Object files over the given targets (each object is one file when it sits once).
inline size_t files_on(const LocalCluster& cluster, const std::vector<std::string>& ids) {
  size_t n = 0;
  for (const auto& id : ids) {
    auto node = cluster.node(id);
    if (node) n += object_file_count(*node);
  }
  return n;
}

// Waits for the rebalance the map names to finish; fails the test when it does not.
inline void wait_rebalance(client::Client& c, const std::string& job_id) {
  ASSERT_FALSE(job_id.empty()) << "the change started no rebalance";
  ASSERT_OK_AND_ASSIGN(const client::JobEntry job, c.wait_job(job_id, seconds(120)));
  ASSERT_EQ(job.state, "finished") << job_id << " is " << job.state << " (" << job.phase << "): " << job.detail;
}

// Reads random objects through its own client until stopped; counts what fails.
class Reader {
 public:
  Reader(const LocalCluster& cluster, const Objects& objects, std::string_view bucket = kBucket)
      : bucket_(bucket), objects_(objects.begin(), objects.end()) {
    thread_ = std::thread([this, endpoint = cluster.endpoint()] { run(endpoint); });
  }
  ~Reader() { stop(); }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  size_t reads() const { return reads_; }
  size_t failures() const { return failures_; }
  std::string first_failure() {
    MutexLock lock(mutex_);
    return first_failure_;
  }

 private:
  void run(const std::string& endpoint) {
    auto c = client::Client::create(endpoint, silo::testing::admin_client_options());
    if (!c) return fail(c.error().to_string());
    silo::testing::Random random;
    while (!stopping_) {
      const auto& [name, bytes] = objects_[random.uniform(0, objects_.size() - 1)];
      auto got = (*c)->get(bucket_, name);
      ++reads_;
      if (!got) {
        fail(fmt::format("GET {}: {}", name, got.error()));
      } else if (const std::string diff = difference(bytes, *got); !diff.empty()) {
        fail(fmt::format("GET {}: {}", name, diff));
      }
    }
  }
  void fail(std::string what) {
    ++failures_;
    MutexLock lock(mutex_);
    if (first_failure_.empty()) first_failure_ = std::move(what);
  }

  const std::string bucket_;
  const std::vector<std::pair<std::string, std::string>> objects_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> reads_{0};
  std::atomic<size_t> failures_{0};
  Mutex mutex_;
  std::string first_failure_ GUARDED_BY(mutex_);
  std::thread thread_;
};


// The listing names every object exactly once.
inline void expect_listing_complete(client::Client& c, const Objects& objects, std::string_view when,
                                    std::string_view bucket = kBucket) {
  ASSERT_OK_AND_ASSIGN(const auto listed, c.list_all(bucket, "", 1000));
  std::set<std::string> names;
  size_t duplicates = 0;
  for (const auto& e : listed) {
    if (!names.insert(e.name).second) ++duplicates;
  }
  EXPECT_EQ(duplicates, 0u) << "names listed twice " << when;
  size_t missing = 0;
  for (const auto& [name, bytes] : objects) missing += names.count(name) == 0 ? 1 : 0;
  EXPECT_EQ(missing, 0u) << "objects missing from the listing " << when;
  EXPECT_EQ(names.size(), objects.size()) << when;
}

// The sum of every sample of metric `name` (any labels) in the /metrics of the node at
// `url`; 0 when it cannot be read.
inline uint64_t metric_sum(const std::string& url, std::string_view name) {
  auto conn = RawConnection::open(url);
  if (!conn) return 0;
  if (!conn->send("GET /metrics HTTP/1.1\r\nHost: silo\r\nConnection: close\r\n\r\n")) return 0;
  const std::string answer = conn->read(4 << 20, std::chrono::milliseconds(3000));
  uint64_t sum = 0;
  size_t at = 0;
  while ((at = answer.find(name, at)) != std::string::npos) {
    const bool starts_line = at > 0 && answer[at - 1] == '\n';
    const size_t after = at + name.size();
    at = after;
    if (!starts_line || after >= answer.size() || (answer[after] != ' ' && answer[after] != '{')) continue;
    const size_t space = answer.find(' ', answer[after] == '{' ? answer.find('}', after) : after);
    if (space == std::string::npos) break;
    sum += std::strtoull(answer.c_str() + space + 1, nullptr, 10);
  }
  return sum;
}

// Flips one byte in the middle of every non-empty object file of `node`, or only of
// bucket `bucket_id` when it is not 0; returns how many it changed.
inline size_t corrupt_files(const NodeInfo& node, uint64_t bucket_id = 0) {
  size_t changed = 0;
  for (const auto& mp : node.mountpaths) {
    for (const auto& path : object_files(mp)) {
      if (bucket_id != 0 && path.find(fmt::format("/obj/{}/", bucket_id)) == std::string::npos) continue;
      const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat st {};
      char c = 0;
      if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &c, 1, st.st_size / 2) == 1) {
        c = static_cast<char>(c ^ 0x5a);
        if (::pwrite(fd, &c, 1, st.st_size / 2) == 1) ++changed;
      }
      ::close(fd);
    }
  }
  return changed;
}

// Object files of bucket `bucket_id` over every target.
inline size_t bucket_files(const LocalCluster& cluster, uint64_t bucket_id) {
  size_t n = 0;
  for (const auto& id : cluster.target_ids()) {
    auto node = cluster.node(id);
    if (!node) continue;
    for (const auto& mp : node->mountpaths) {
      for (const auto& path : object_files(mp)) n += path.find(fmt::format("/obj/{}/", bucket_id)) != std::string::npos;
    }
  }
  return n;
}

inline uint64_t sum_over_targets(const LocalCluster& cluster, std::string_view metric) {
  uint64_t sum = 0;
  for (const auto& id : cluster.target_ids()) {
    if (auto node = cluster.node(id)) sum += metric_sum(node->url, metric);
  }
  return sum;
}

// GET /v1/mountpaths of a target.
inline Result<wire::MountpathList> mountpaths_of(LocalCluster& cluster, std::string_view target) {
  ASSIGN_OR_RETURN(auto c, cluster.client_of(target));
  ASSIGN_OR_RETURN(const client::Response r, c->request(http::Method::kGet, "/v1/mountpaths"));
  if (r.status != 200) return Status::unavailable("GET /v1/mountpaths: HTTP {}: {}", r.status, r.body);
  return wire::parse_mountpath_list_json(r.body);
}

// The mountpath at `path` in `list`: a default one (empty id and state) when none is.
inline wire::MountpathEntry mountpath_at(const wire::MountpathList& list, std::string_view path) {
  for (const wire::MountpathEntry& m : list.mountpaths) {
    if (m.path == path) return m;
  }
  return {};
}

inline Status wait_resilver_done(LocalCluster& cluster, std::string_view target) {
  return silo::testing::wait_until(
      [&] {
        auto doc = mountpaths_of(cluster, target);
        return doc && doc->work.state == "finished";
      },
      seconds(60), "the resilver to finish");
}

}  // namespace silo::integration
