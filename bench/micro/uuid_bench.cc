// UUIDv7 and UUIDv4 generation, and the text form both ways.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "idforge/uuid.h"

namespace {

// One generator shared by all threads of a run: its mutex is part of the cost.
std::unique_ptr<idforge::Uuid7Generator> g_gen;

void make_gen(const benchmark::State&) { g_gen = idforge::Uuid7Generator::create(); }
void drop(const benchmark::State&) { g_gen.reset(); }

void BM_Uuid7Next(benchmark::State& state) {
  for (auto _ : state) {
    idforge::Uuid u = g_gen->next();
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Uuid7Next)->Setup(make_gen)->Teardown(drop)->Threads(1)->Threads(2)->UseRealTime();

void BM_Uuid4(benchmark::State& state) {
  for (auto _ : state) {
    idforge::Uuid u = idforge::uuid4();
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Uuid4)->Threads(1)->Threads(2)->UseRealTime();

void BM_UuidToString(benchmark::State& state) {
  idforge::Uuid u = idforge::Uuid7Generator::create()->next();
  for (auto _ : state) {
    std::string text = u.to_string();
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UuidToString);

void BM_UuidParse(benchmark::State& state) {
  const std::string text = idforge::Uuid7Generator::create()->next().to_string();
  for (auto _ : state) {
    idforge::Result<idforge::Uuid> u = idforge::Uuid::parse(text);
    benchmark::DoNotOptimize(u);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UuidParse);

}  // namespace
