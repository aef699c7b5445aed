// SegmentBuffer: Leaf-style double buffer over a RangeSource for one tag.
//
// next() hands out the current segment's IDs with one fetch_add, lock-free. When 10% of
// the current segment is used, the next one is fetched in the background; the switch
// is one atomic store. A caller waits only when both buffers are empty, and then at
// most wait_ms before it gets Unavailable with the store's last error. The step grows
// (segments that lasted under 15 minutes double it) and shrinks (over 30 minutes halve
// it) within [min_step, max_step].
//
// IDs of one buffer strictly increase as long as the source's ranges do (one store per
// tag); a striped source gives unique, upward-trending IDs. Thread-safety: all methods
// may be called from any number of threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "idforge/clock.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"

namespace idforge {

struct SegmentBufferOptions {
  std::string tag;
  uint64_t min_step = 1000;       // the tag's configured step
  uint64_t max_step = 1'000'000;  // upper bound of the dynamic step
  double prefetch_at = 0.1;       // fetch the next segment once this share is used
  int64_t wait_ms = 1000;         // longest a caller waits when both buffers are empty
  int64_t grow_below_ms = 15 * 60 * 1000;
  int64_t shrink_above_ms = 30 * 60 * 1000;
  Clock* clock = nullptr;  // for segment lifetimes; default_clock() when null
};

struct SegmentBufferStats {
  uint64_t fetches = 0;         // segments allocated
  uint64_t fetch_failures = 0;  // allocations that returned an error
  uint64_t waits = 0;           // calls that blocked because both buffers were empty
  uint64_t switches = 0;        // moves to the next segment
  uint64_t step = 0;            // step of the next fetch
  uint64_t current_first = 0;   // current segment (0/0 before the first)
  uint64_t current_count = 0;
  uint64_t current_used = 0;  // IDs taken from it (capped at count)
  bool next_ready = false;    // the second buffer holds a segment
  bool fetching = false;      // an allocation is in flight
  int64_t last_fetch_ms = 0;  // how long the last allocation took
  std::string last_error;     // of the last failed allocation, until one succeeds
};

class SegmentBuffer {
 public:
  // `source` must outlive the buffer.
  static Result<std::unique_ptr<SegmentBuffer>> create(RangeSource* source,
                                                       SegmentBufferOptions options);
  ~SegmentBuffer();
  SegmentBuffer(const SegmentBuffer&) = delete;
  SegmentBuffer& operator=(const SegmentBuffer&) = delete;

  Result<uint64_t> next();
  // Fills `out` with increasing IDs (all or nothing: on error the taken ones are gaps).
  Status next_batch(std::span<uint64_t> out);
  // Like next_batch but never waits for the store: fills `out` from the front while the
  // buffers hold IDs and returns how many it filled (fewer than out.size() when both
  // buffers ran empty; a fetch is then under way). For event loops that must not block:
  // they take what is there and ask next_batch() for the rest off the loop. Errors only
  // for what waiting would not fix (unknown tag, exhausted range, shutting down).
  Result<size_t> try_next_batch(std::span<uint64_t> out);

  const std::string& tag() const { return options_.tag; }
  SegmentBufferStats stats() const;

 private:
  // One of the two buffers. A seqlock: `version` is 2*gen+1 while being written and
  // 2*gen+2 once it holds generation `gen`'s segment.
  struct Slot {
    std::atomic<uint64_t> version{0};
    std::atomic<uint64_t> first{0};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> stride{1};
    std::atomic<uint64_t> prefetch{0};  // offset whose taker starts the next fetch
  };
  // What one fetch_add on the cursor yielded.
  struct Take {
    uint64_t gen = 0;
    uint64_t first = 0;
    uint64_t stride = 1;
    uint64_t count = 0;
  };

  SegmentBuffer(RangeSource* source, SegmentBufferOptions options);
  // Claims up to `want` IDs of the current segment; false sends the caller to the slow
  // path (segment used up, none yet, or a slot being rewritten under a slow reader).
  bool try_take(uint64_t want, Take* out);
  // Takes up to out.size() IDs, waiting for the store only when may_wait.
  Result<size_t> fill(std::span<uint64_t> out, bool may_wait);
  // Returns Ok when the caller should try again. With may_wait false it never waits:
  // it sets *would_wait and returns Ok when only waiting would help.
  Status slow_path(uint64_t seen_gen, bool may_wait = true, bool* would_wait = nullptr);
  void start_fetch_locked();
  void fetch_once(uint64_t step);
  uint64_t next_step_locked(int64_t now_ms);

  static constexpr int kOffsetBits = 40;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;

  RangeSource* const source_;
  const SegmentBufferOptions options_;
  Clock* const clock_;

  // (generation << 40) | offset into that generation's segment; generation 0 = none.
  alignas(64) std::atomic<uint64_t> cursor_{0};
  Slot slots_[2];

  // Everything below is guarded by mu_ (the counters are atomics so stats() and the
  // fetch thread can touch them without it).
  alignas(64) mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread fetcher_;
  bool fetching_ = false;
  bool stopping_ = false;
  bool next_ready_ = false;   // the slot of generation current_gen_ + 1 is filled
  uint64_t current_gen_ = 0;  // the generation the cursor points at
  uint64_t step_;
  int64_t current_started_ms_ = 0;
  int64_t last_fetch_done_ms_ = 0;
  int consecutive_failures_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};
  Status last_error_;
  std::atomic<uint64_t> fetches_{0};
  std::atomic<uint64_t> fetch_failures_{0};
  std::atomic<uint64_t> waits_{0};
  std::atomic<uint64_t> switches_{0};
  std::atomic<int64_t> last_fetch_ms_{0};
};

}  // namespace idforge
