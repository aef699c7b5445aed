// SnowflakeGenerator's hot path. The layout is the wide one (22 sequence bits) so that
// the 4,096 IDs per ms of a twitter layout do not cap the figure: this is what one
// call costs, not what a node may issue.
//
// BM_SnowflakeNext calls through the SnowflakeGenerator interface, as a library user
// does; BM_SnowflakeNextImpl holds the implementation (final, so next() and its fast
// path inline), as `idforge bench` does. The difference is the virtual call.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "core/snowflake_impl.h"
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

// The same generator, held as the implementation.
std::unique_ptr<idforge::SnowflakeGeneratorImpl> g_impl;

void make_wide_impl(const benchmark::State&) {
  idforge::SnowflakeOptions options;
  options.layout = idforge::Layout::parse("time:41,sequence:22").value();
  g_impl = idforge::SnowflakeGeneratorImpl::create(std::move(options), {}).value();
}

void drop_impl(const benchmark::State&) { g_impl.reset(); }

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

void BM_SnowflakeNextImpl(benchmark::State& state) {
  for (auto _ : state) {
    idforge::Result<uint64_t> id = g_impl->next();
    if (!id.ok()) {
      state.SkipWithError(id.status().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(*id);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SnowflakeNextImpl)
    ->Setup(make_wide_impl)
    ->Teardown(drop_impl)
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
