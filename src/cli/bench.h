// `idforge bench`: in-process throughput of each generator beside two baselines
// measured in the same run (a mutex-guarded classic Snowflake and a bare atomic
// counter). The CLI parses the flags; this file measures and prints.
#pragma once

#include <string>
#include <vector>

namespace idforge::cli {

struct BenchOptions {
  double seconds = 1.0;           // per measurement
  std::vector<int> threads;       // thread counts to run; empty = {1, 2}
  bool json = false;              // {"results":[{"name","threads","ids_per_sec"},...]}
  std::vector<std::string> only;  // run only benchmarks whose name starts with one of these
};

// Runs the benchmarks and prints a table (or JSON) on stdout. Returns the exit status.
int run_bench(const BenchOptions& options);

}  // namespace idforge::cli
