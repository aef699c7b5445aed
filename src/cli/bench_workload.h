// The measuring kit shared by `idforge bench`'s workloads: per-thread tallies, cheap
// order checks, the timed loop, and the Workload interface.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "idforge/snowflake.h"
#include "idforge/status.h"

namespace idforge::cli::bench {

// Calls between two looks at the stop flag: the look is cheap, but not free next to a
// 5 ns fetch_add, and 64 calls are still far below a millisecond.
constexpr int kChunk = 64;

using Steady = std::chrono::steady_clock;

// What one thread saw. Written once, when the thread stops; the alignment keeps
// threads that finish at different times off each other's cache line.
struct alignas(64) Tally {
  uint64_t ids = 0;
  uint64_t digest = 0;        // XOR of all IDs: makes every result observable
  uint64_t out_of_order = 0;  // IDs not above the thread's previous one
  Steady::time_point start;
  Steady::time_point end;
  Status error;
};

inline uint64_t load_be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

// Per-thread order checks, branch-free so that they cost a cycle or two. A thread's
// own IDs must increase: each call takes effect after the thread's previous one.
class U64Order {
 public:
  void see(uint64_t id) {
    bad_ += id <= last_ ? 1 : 0;
    last_ = id;
    digest_ ^= id;
  }
  void see_run(std::span<const uint64_t> ids) {
    // Inside a batch only the ends are compared; the generator's tests check the rest.
    bad_ += (ids.front() <= last_ || ids.back() <= ids.front()) ? 1 : 0;
    last_ = ids.back();
    for (uint64_t id : ids) digest_ ^= id;
  }
  uint64_t bad() const { return bad_; }
  uint64_t digest() const { return digest_; }

 private:
  uint64_t last_ = 0;
  uint64_t bad_ = 0;
  uint64_t digest_ = 0;
};

class U128Order {
 public:
  void see(const std::array<uint8_t, 16>& bytes) {
    uint64_t hi = load_be64(bytes.data());
    uint64_t lo = load_be64(bytes.data() + 8);
    bad_ += (hi < hi_ || (hi == hi_ && lo <= lo_)) ? 1 : 0;
    hi_ = hi;
    lo_ = lo;
    digest_ ^= hi ^ lo;
  }
  uint64_t bad() const { return bad_; }
  uint64_t digest() const { return digest_; }

 private:
  uint64_t hi_ = 0;
  uint64_t lo_ = 0;
  uint64_t bad_ = 0;
  uint64_t digest_ = 0;
};

// UUIDv4 has no order; only the digest keeps the work alive.
class Unordered {
 public:
  void see(const std::array<uint8_t, 16>& bytes) {
    digest_ ^= load_be64(bytes.data()) ^ load_be64(bytes.data() + 8);
  }
  uint64_t bad() const { return 0; }
  uint64_t digest() const { return digest_; }

 private:
  uint64_t digest_ = 0;
};

// Calls `step` until `stop` is set or a step fails. A step feeds its IDs to the order
// check and returns how many it made, 0 after storing an error. Everything the loop
// touches is local, so it stays in registers and the generator is all that is timed.
template <typename Order, typename Step>
void drive(std::atomic<bool>& stop, Tally& tally, Step step) {
  Order order;
  uint64_t ids = 0;
  bool ok = true;
  tally.start = Steady::now();
  // Relaxed is enough: the flag only has to be seen eventually, and the results are
  // published by the thread's join.
  while (ok && !stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < kChunk; ++i) {
      uint64_t made = step(order, tally.error);
      if (made == 0) {
        ok = false;
        break;
      }
      ids += made;
    }
  }
  tally.end = Steady::now();
  if (!ok) stop.store(true, std::memory_order_relaxed);  // the others stop too
  tally.ids = ids;
  tally.digest = order.digest();
  tally.out_of_order = order.bad();
}

struct SnowflakeFacts {
  SnowflakeCounters counters;
  int64_t drift_ms = 0;  // how far ahead of the clock the generator ended
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Makes IDs on the calling thread until `stop`; sets `stop` itself after an error.
  virtual void run(std::atomic<bool>& stop, Tally& tally) = 0;
  // Whether a thread may see its IDs go down without a bug (ring after a rollback).
  virtual bool may_revisit() const { return false; }
  virtual std::optional<SnowflakeFacts> facts() const { return std::nullopt; }
};

using WorkloadResult = Result<std::unique_ptr<Workload>>;

// Drives any 64-bit generator with `Result<uint64_t> next()` and
// `Status next_batch(std::span<uint64_t>)`: one ID per call, or batches of kN.
template <size_t kN, typename Gen>
void drive_u64_generator(Gen& gen, bool batch, std::atomic<bool>& stop, Tally& tally) {
  if (batch) {
    std::array<uint64_t, kN> out{};
    drive<U64Order>(stop, tally, [&](U64Order& order, Status& error) -> uint64_t {
      Status s = gen.next_batch(out);
      if (!s.ok()) {
        error = std::move(s);
        return 0;
      }
      order.see_run(out);
      return out.size();
    });
    return;
  }
  drive<U64Order>(stop, tally, [&](U64Order& order, Status& error) -> uint64_t {
    Result<uint64_t> id = gen.next();
    if (!id.ok()) {
      error = id.status();
      return 0;
    }
    order.see(*id);
    return 1;
  });
}

// Segment IDs from a SegmentBuffer over an in-memory source (the buffer's own cost) or
// over a real SQLite store in a temporary directory (prefetch hiding the store).
WorkloadResult make_segment_memory(bool batch = false);
WorkloadResult make_segment_sqlite();

}  // namespace idforge::cli::bench
