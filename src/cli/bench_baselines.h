// The two yardsticks `idforge bench` measures beside the real generators.
//
// AtomicCounter is the ceiling for any shared sequence: one fetch_add, nothing else.
// MutexSnowflake is the classic lock-based Snowflake as most ports of the original
// Java code write it, so the table can say how far the lock-free generator is ahead of
// it. Both are thread-safe. Neither is meant for real use: the counter is not an ID
// scheme and MutexSnowflake has no rollback handling beyond refusing.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/thread_annotations.h"
#include "idforge/status.h"

namespace idforge::cli {

class AtomicCounter {
 public:
  // Relaxed is enough: the only promise is a distinct, increasing value per call.
  uint64_t next() { return value_.fetch_add(1, std::memory_order_relaxed) + 1; }

 private:
  alignas(64) std::atomic<uint64_t> value_{0};
};

// The twitter layout (41-bit ms since 2010-11-04, 5-bit datacenter, 5-bit worker,
// 12-bit sequence) behind one mutex, reading CLOCK_REALTIME on every call. When a
// millisecond's 4096 sequences are used up it spins, still holding the lock, until the
// clock shows a later millisecond. A clock behind the last millisecond is an error.
class MutexSnowflake {
 public:
  MutexSnowflake(uint64_t datacenter, uint64_t worker);

  Result<uint64_t> next() IDFORGE_EXCLUDES(mu_);

 private:
  const uint64_t node_bits_;
  Mutex mu_;  // a std::mutex inside: the classic code's cost
  int64_t last_ms_ IDFORGE_GUARDED_BY(mu_) = -1;
  uint64_t sequence_ IDFORGE_GUARDED_BY(mu_) = 0;
};

}  // namespace idforge::cli
