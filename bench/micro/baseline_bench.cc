// The floor under every shared-sequence figure: one relaxed fetch_add on a shared word.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

namespace {

alignas(64) std::atomic<uint64_t> g_counter{0};

void BM_AtomicFetchAdd(benchmark::State& state) {
  for (auto _ : state) {
    // Relaxed, as a sequence needs only distinct values.
    benchmark::DoNotOptimize(g_counter.fetch_add(1, std::memory_order_relaxed));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AtomicFetchAdd)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
