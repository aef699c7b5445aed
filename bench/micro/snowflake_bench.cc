// SnowflakeGenerator's hot path. The layout is the wide one (22 sequence bits) so that
// the 4,096 IDs per ms of a twitter layout do not cap the figure: this is what one
// call costs, not what a node may issue.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "idforge/layout.h"
#include "idforge/snowflake.h"

namespace {

// One generator shared by all threads of a run, made fresh for each run.
std::unique_ptr<idforge::SnowflakeGenerator> g_gen;

void make_wide(const benchmark::State&) {
  idforge::SnowflakeOptions options;
  options.layout = idforge::Layout::parse("time:41,sequence:22").value();
  g_gen = idforge::SnowflakeGenerator::create(std::move(options)).value();
}

void drop(const benchmark::State&) { g_gen.reset(); }

void BM_SnowflakeNext(benchmark::State& state) {
  for (auto _ : state) {
    idforge::Result<uint64_t> id = g_gen->next();
    if (!id.ok()) {
      state.SkipWithError(id.status().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(*id);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SnowflakeNext)
    ->Setup(make_wide)
    ->Teardown(drop)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

void BM_SnowflakeNextBatch256(benchmark::State& state) {
  std::array<uint64_t, 256> out{};
  for (auto _ : state) {
    idforge::Status s = g_gen->next_batch(out);
    if (!s.ok()) {
      state.SkipWithError(s.to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(out.size()));
}
BENCHMARK(BM_SnowflakeNextBatch256)
    ->Setup(make_wide)
    ->Teardown(drop)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

}  // namespace
