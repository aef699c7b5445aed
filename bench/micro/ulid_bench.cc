// ULID generation and the Crockford base32 text form both ways.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "idforge/ulid.h"

namespace {

// One generator shared by all threads of a run: its mutex is part of the cost.
std::unique_ptr<idforge::UlidGenerator> g_gen;

void make_gen(const benchmark::State&) { g_gen = idforge::UlidGenerator::create(); }
void drop(const benchmark::State&) { g_gen.reset(); }

void BM_UlidNext(benchmark::State& state) {
  for (auto _ : state) {
    idforge::Ulid u = g_gen->next();
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UlidNext)->Setup(make_gen)->Teardown(drop)->Threads(1)->Threads(2)->UseRealTime();

void BM_UlidToString(benchmark::State& state) {
  idforge::Ulid u = idforge::UlidGenerator::create()->next();
  for (auto _ : state) {
    std::string text = u.to_string();
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UlidToString);

void BM_UlidParse(benchmark::State& state) {
  const std::string text = idforge::UlidGenerator::create()->next().to_string();
  for (auto _ : state) {
    idforge::Result<idforge::Ulid> u = idforge::Ulid::parse(text);
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UlidParse);

}  // namespace
