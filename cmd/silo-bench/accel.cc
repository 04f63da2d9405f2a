// Simulated accelerators, the MLPerf Storage rule: each accelerator trains on batches of
// samples that its reader threads read from shards (each shard read whole and in order),
// and "computes" for a fixed time per batch. Its utilization is compute time over wall
// time; the storage keeps N accelerators fed when every one stays >= 90 % busy.
//
// Model: the readers of one accelerator stream shard bytes into a count of sample bytes
// ready (bounded by `prefetch_batches` batches: readers wait when it is full, as a data
// loader's queue does); the compute loop takes `batch_size * sample_bytes` from it per
// batch, or idles (1 ms polls) until that much is ready. The clock starts with the
// readers, so the wait for the first batch counts as idle (strict; MLPerf runs several
// epochs, which dilutes it). One accelerator's readers and compute loop share one io
// thread, so its counters need no locks.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "route.h"

namespace silo::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Profile {
  const char* name;
  uint64_t sample_bytes;
  int batch_size;
  double compute_s;
  int readers;
};

// MLPerf Storage's H100 workload files (mlcommons/storage configs/dlio/workload).
constexpr Profile kProfiles[] = {
    {"resnet50", 114660, 400, 0.224, 8},
    {"unet3d", 146600628, 7, 0.323, 4},
};

http::Awaitable<void> pause(std::chrono::microseconds how_long) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  timer.expires_after(how_long);
  boost::system::error_code ec;
  co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
}

class Accelerator final : public ChunkSink {
 public:
  Accelerator(const Config& config, const std::vector<std::string>& names, const Router* router,
              http::Client* http, size_t index, size_t count, Clock::time_point deadline)
      : config_(config), names_(names), router_(router), http_(http), index_(index), count_(count),
        deadline_(deadline), batch_bytes_(config.sample_bytes * static_cast<uint64_t>(config.batch_size)),
        cap_(batch_bytes_ * static_cast<uint64_t>(std::max(config.prefetch_batches, 1))) {}

  http::Awaitable<void> take(size_t bytes) override {
    ready_ += bytes;
    bytes_ += bytes;
    while (ready_ >= cap_ && Clock::now() < deadline_) co_await pause(std::chrono::milliseconds(1));
  }

  http::Awaitable<void> read_loop() {
    std::vector<char> buffer(1u << 20);
    while (Clock::now() < deadline_) {
      // Accelerator i reads shards i, i+N, i+2N, ... (a DDP rank's share), round and round.
      const std::string& name = names_[(index_ + next_shard_++ * count_) % names_.size()];
      Outcome out;
      if (router_ == nullptr) {
        out = co_await read_file(config_.dir + "/" + name, buffer, this);
      } else {
        out = co_await get_object(*http_, router_->object(name), buffer, this);
      }
      if (!out.status.is_ok() && Clock::now() < deadline_) {
        ++errors_;
        if (first_error_.empty()) first_error_ = out.status.to_string();
        co_await pause(std::chrono::milliseconds(10));
      }
    }
  }

  http::Awaitable<void> compute_loop() {
    const auto compute = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::duration<double>(config_.compute_s));
    while (Clock::now() < deadline_) {
      if (ready_ < batch_bytes_) {
        co_await pause(std::chrono::milliseconds(1));
        continue;
      }
      ready_ -= batch_bytes_;
      const auto start = Clock::now();
      co_await pause(std::min(compute, std::chrono::duration_cast<std::chrono::microseconds>(deadline_ - start)));
      busy_s_ += std::chrono::duration<double>(std::min(Clock::now(), deadline_) - start).count();
      ++batches_;
    }
  }

  double busy_s() const { return busy_s_; }
  uint64_t batches() const { return batches_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t errors() const { return errors_; }
  const std::string& first_error() const { return first_error_; }

 private:
  const Config& config_;
  const std::vector<std::string>& names_;
  const Router* router_;
  http::Client* http_;
  const size_t index_, count_;
  const Clock::time_point deadline_;
  const uint64_t batch_bytes_, cap_;
  uint64_t next_shard_ = 0;
  uint64_t ready_ = 0, bytes_ = 0, batches_ = 0, errors_ = 0;
  double busy_s_ = 0;
  std::string first_error_;
};

// co_spawn targets: named coroutines, no lambda captures in the frame (ADR 0003).
http::Awaitable<void> run_reader(Accelerator* a, IoPool* pool, size_t shard) {
  co_await a->read_loop();
  pool->worker_done(shard);
}
http::Awaitable<void> run_compute(Accelerator* a, IoPool* pool, size_t shard) {
  co_await a->compute_loop();
  pool->worker_done(shard);
}

AccelTrial run_trial(const Config& config, const std::vector<std::string>& names, const Router* router,
                     int accelerators, std::atomic<uint64_t>& total_bytes) {
  const int threads = config.threads > 0 ? config.threads : static_cast<int>(std::thread::hardware_concurrency());
  IoPool pool(threads, config, router != nullptr && router->signs(),
              static_cast<size_t>(accelerators * config.readers_per_accelerator / threads + 1));
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config.duration_s));
  std::vector<std::unique_ptr<Accelerator>> accs;
  for (int i = 0; i < accelerators; ++i) {
    const size_t shard = static_cast<size_t>(i) % pool.size();
    accs.push_back(std::make_unique<Accelerator>(config, names, router, &pool.client(shard), static_cast<size_t>(i),
                                                 static_cast<size_t>(accelerators), deadline));
    for (int r = 0; r < config.readers_per_accelerator; ++r) {
      pool.add_worker(shard);
      boost::asio::co_spawn(pool.io(shard), run_reader(accs.back().get(), &pool, shard), boost::asio::detached);
    }
    pool.add_worker(shard);
    boost::asio::co_spawn(pool.io(shard), run_compute(accs.back().get(), &pool, shard), boost::asio::detached);
  }
  pool.run();
  AccelTrial trial;
  trial.accelerators = accelerators;
  trial.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  double busy = 0;
  for (const auto& a : accs) {
    busy += a->busy_s();
    trial.batches += a->batches();
    trial.bytes += a->bytes();
    trial.errors += a->errors();
    if (trial.first_error.empty()) trial.first_error = a->first_error();
  }
  total_bytes += trial.bytes;
  trial.utilization = busy / (accelerators * config.duration_s);
  return trial;
}

}  // namespace

Result<AccelReport> run_accel(const Config& given) {
  Config config = given;
  const Profile* profile = nullptr;
  for (const auto& p : kProfiles) {
    if (config.profile == p.name) profile = &p;
  }
  if (profile == nullptr) return Status::invalid_argument("unknown --profile '{}' (resnet50, unet3d)", config.profile);
  if (config.sample_bytes == 0) config.sample_bytes = profile->sample_bytes;
  if (config.batch_size == 0) config.batch_size = profile->batch_size;
  if (config.compute_s == 0) config.compute_s = profile->compute_s;
  if (config.readers_per_accelerator == 0) config.readers_per_accelerator = profile->readers;
  if (config.duration_s <= 0) config.duration_s = 20;

  ASSIGN_OR_RETURN(const std::vector<std::string> names, object_names(config));
  std::shared_ptr<const Router> router;
  if (config.path != Path::kFile) {
    ASSIGN_OR_RETURN(router, Router::create(config));
  }
  AccelReport report;
  report.profile = profile->name;
  report.sample_bytes = config.sample_bytes;
  report.batch_size = config.batch_size;
  report.compute_s = config.compute_s;

  UsageProbe probe(config.watch_pids);
  std::atomic<bool> finished{false};
  std::atomic<uint64_t> trials_done{0}, bytes{0};
  std::thread watcher([&] { watch_progress(config, probe, finished, trials_done, bytes, "trials"); });
  auto trial = [&](int n) {
    AccelTrial t = run_trial(config, names, router.get(), n, bytes);
    ++trials_done;
    report.trials.push_back(t);
    if (config.progress) {
      std::fprintf(stderr, "accelerators %d: utilization %.1f %%, %.0f MB/s\n", n, 100 * t.utilization,
                   static_cast<double>(t.bytes) / t.seconds / 1e6);
    }
    return t.utilization >= config.target_utilization;
  };
  if (config.accelerators > 0) {
    if (trial(config.accelerators)) report.max_accelerators = config.accelerators;
  } else {
    // Double until one fails, then bisect between the last good and the first bad.
    int good = 0, bad = 0;
    for (int n = 1; n <= 4096; n *= 2) {
      if (!trial(n)) {
        bad = n;
        break;
      }
      good = n;
    }
    while (bad > 0 && bad - good > 1) {
      const int mid = (good + bad) / 2;
      if (trial(mid)) good = mid;
      else bad = mid;
    }
    report.max_accelerators = good;
  }
  finished = true;
  watcher.join();
  report.server = probe.finish();
  return report;
}

}  // namespace silo::bench
