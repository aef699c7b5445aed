// Request-rate limits: a token bucket of `burst` requests refilled at `rate` per second,
// kept as one atomic (GCRA, the "generic cell rate algorithm": the time at which the
// bucket would be full again), so a token's bucket shared by every I/O thread costs one
// compare-and-swap per request and no lock. Time is given by the caller in nanoseconds
// of a monotonic clock, so tests drive it by hand.
//
//   RateLimiter bucket;
//   if (int64_t wait_ns = bucket.acquire(rate, burst, now_ns); wait_ns > 0) refuse(wait_ns);
//
// Thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>

namespace idforge::server {

// Per-connection limits of a session (HttpOptions, RespOptions); 0 turns a limit off.
struct ConnectionLimits {
  double rate = 0;     // requests per second per connection
  uint32_t burst = 0;  // requests at once; 0: max(1, rate)
};

class RateLimiter {
 public:
  // The bucket a rate and a burst make: burst 0 means max(1, rate), as in the tokens
  // file and the serve settings.
  static uint32_t effective_burst(double rate, uint32_t burst) {
    if (burst != 0) return burst;
    return rate >= 1 ? static_cast<uint32_t>(std::min(rate, 4e9)) : 1u;
  }

  // Takes one request out of the bucket. 0: admitted; otherwise refused, and the
  // nanoseconds until a request would be admitted (at least 1). A rate of 0 or less
  // admits everything.
  int64_t acquire(double rate, uint32_t burst, int64_t now_ns) {
    if (!(rate > 0)) return 0;
    // One request's share of time; at least 1 ns so that a huge rate still counts.
    const int64_t interval = std::max<int64_t>(1, static_cast<int64_t>(std::min(1e9 / rate, 1e18)));
    const int64_t burst_ns = interval * (static_cast<int64_t>(effective_burst(rate, burst)) - 1);
    int64_t full_at = full_at_.load(std::memory_order_relaxed);
    while (true) {
      const int64_t base = std::max(full_at, now_ns);
      if (base - now_ns > burst_ns) return std::max<int64_t>(1, base - now_ns - burst_ns);
      if (full_at_.compare_exchange_weak(full_at, base + interval, std::memory_order_relaxed)) {
        return 0;
      }
    }
  }

 private:
  // When the bucket is full again: each request admitted moves it one interval on; a
  // request is refused when it lies more than burst - 1 intervals ahead of now.
  std::atomic<int64_t> full_at_{std::numeric_limits<int64_t>::min()};
};

}  // namespace idforge::server
