// The process's two clocks as whole milliseconds: steady for durations and deadlines,
// the wall clock for timestamps. Not the generator's Clock (include/idforge/clock.h),
// which tests replace and which caches the wall clock: these are for logs, probes and
// timing, where a real reading is wanted.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>

namespace idforge {

inline int64_t steady_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

inline int64_t unix_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace idforge
