// The micro benchmarks' main: Google Benchmark's own flags (--benchmark_filter, ...).
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
