// ISA-L Reed-Solomon encode and reconstruct throughput per core (PERF.md's reference:
// ~28 GB/s of data per core for 4+2 with 1 MiB slices). Bytes counted are data bytes.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ec/reed_solomon.h"

namespace {

struct Fixture {
  silo::ec::ReedSolomon rs;
  std::vector<std::vector<uint8_t>> slices;
  Fixture(int k, int m, size_t length) : rs(*silo::ec::ReedSolomon::create(k, m)) {
    std::mt19937 rng(1);
    slices.assign(k + m, std::vector<uint8_t>(length));
    for (int i = 0; i < k; ++i) {
      for (auto& b : slices[i]) b = static_cast<uint8_t>(rng());
    }
  }
};

void BM_Encode(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const size_t length = static_cast<size_t>(state.range(2));
  Fixture f(k, m, length);
  std::vector<std::span<const uint8_t>> data;
  for (int i = 0; i < k; ++i) data.emplace_back(f.slices[i]);
  std::vector<std::span<uint8_t>> parity;
  for (int i = 0; i < m; ++i) parity.emplace_back(f.slices[k + i]);
  for (auto _ : state) benchmark::DoNotOptimize(f.rs.encode(data, parity));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k * static_cast<int64_t>(length));
}
BENCHMARK(BM_Encode)->Args({2, 1, 1 << 20})->Args({4, 2, 1 << 20})->Args({8, 3, 1 << 20})->Args({4, 2, 64 << 10});

void BM_ReconstructTwoDataSlices(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const size_t length = static_cast<size_t>(state.range(2));
  Fixture f(k, m, length);
  std::vector<std::span<uint8_t>> spans;
  for (auto& s : f.slices) spans.emplace_back(s);
  std::vector<bool> present(k + m, true);
  present[0] = false;
  present[1] = false;
  for (auto _ : state) benchmark::DoNotOptimize(f.rs.reconstruct(spans, present));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * k * static_cast<int64_t>(length));
}
BENCHMARK(BM_ReconstructTwoDataSlices)->Args({4, 2, 1 << 20})->Args({8, 3, 1 << 20});

}  // namespace

BENCHMARK_MAIN();
