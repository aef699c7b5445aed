// Layout::decode, what `idforge parse` and GET /v1/decode do per ID.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "idforge/layout.h"

namespace {

void BM_LayoutDecodeTwitter(benchmark::State& state) {
  const idforge::Layout& layout = idforge::Layout::twitter();
  // The ID of the published `idforge parse` example (tests/data/published_snowflake.txt).
  uint64_t id = 910499571847892992;
  for (auto _ : state) {
    idforge::Result<idforge::DecodedId> decoded = layout.decode(id);
    benchmark::DoNotOptimize(decoded);
    ++id;  // a new value each time, so nothing is folded away
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LayoutDecodeTwitter);

}  // namespace
