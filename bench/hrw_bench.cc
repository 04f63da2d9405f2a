// Cost of placing one object: the proxy and every smart client pay it per request.
#include <benchmark/benchmark.h>

#include "placement/hrw.h"

namespace {

void BM_OwnerOfObject(benchmark::State& state) {
  std::vector<std::string> ids;
  for (int i = 0; i < state.range(0); ++i) ids.push_back("t" + std::to_string(i));
  const silo::placement::HrwCandidates targets(ids);
  const silo::ObjectRef object{silo::BucketId(3), "train/shard-000123.tar"};
  for (auto _ : state) benchmark::DoNotOptimize(targets.owner(object));
}
BENCHMARK(BM_OwnerOfObject)->Arg(3)->Arg(16)->Arg(128);

}  // namespace

BENCHMARK_MAIN();
