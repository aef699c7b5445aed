// SegmentBufferImpl: the state behind the SegmentBuffer interface
// (include/idforge/segment_buffer.h): two seqlocked slots, the cursor that one
// fetch_add claims from, and the fetch thread. Internal: included as
// "core/segment_buffer_impl.h", never installed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>

#include "idforge/clock.h"
#include "idforge/segment_buffer.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"
#include "thread_annotations.h"

namespace idforge {

class SegmentBufferImpl final : public SegmentBuffer {
 public:
  // Validates the options; `source` must outlive the buffer.
  static Result<std::unique_ptr<SegmentBufferImpl>> create(RangeSource* source,
                                                           SegmentBufferOptions options);
  ~SegmentBufferImpl() override;

  Result<uint64_t> next() override IDFORGE_EXCLUDES(mu_);
  Status next_batch(std::span<uint64_t> out) override IDFORGE_EXCLUDES(mu_);
  Result<size_t> try_next_batch(std::span<uint64_t> out) override IDFORGE_EXCLUDES(mu_);
  const std::string& tag() const override { return options_.tag; }
  SegmentBufferStats stats() const override IDFORGE_EXCLUDES(mu_);

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

  SegmentBufferImpl(RangeSource* source, SegmentBufferOptions options);
  // Claims up to `want` IDs of the current segment; false sends the caller to the slow
  // path (segment used up, none yet, or a slot being rewritten under a slow reader).
  bool try_take(uint64_t want, Take* out) IDFORGE_EXCLUDES(mu_);
  // Takes up to out.size() IDs, waiting for the store only when may_wait.
  Result<size_t> fill(std::span<uint64_t> out, bool may_wait) IDFORGE_EXCLUDES(mu_);
  // Returns Ok when the caller should try again. With may_wait false it never waits:
  // it sets *would_wait and returns Ok when only waiting would help.
  Status slow_path(uint64_t seen_gen, bool may_wait = true, bool* would_wait = nullptr)
      IDFORGE_EXCLUDES(mu_);
  void start_fetch_locked() IDFORGE_REQUIRES(mu_);
  void fetch_once(uint64_t step) IDFORGE_EXCLUDES(mu_);
  uint64_t next_step_locked(int64_t now_ms) IDFORGE_REQUIRES(mu_);

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
  alignas(64) mutable Mutex mu_;
  std::condition_variable cv_;
  // A fetch thread is running; it clears this as its last step.
  bool fetching_ IDFORGE_GUARDED_BY(mu_) = false;
  bool stopping_ IDFORGE_GUARDED_BY(mu_) = false;
  // The slot of generation current_gen_ + 1 is filled.
  bool next_ready_ IDFORGE_GUARDED_BY(mu_) = false;
  uint64_t current_gen_ IDFORGE_GUARDED_BY(mu_) = 0;  // the generation the cursor points at
  uint64_t step_ IDFORGE_GUARDED_BY(mu_);
  int64_t current_started_ms_ IDFORGE_GUARDED_BY(mu_) = 0;
  int64_t last_fetch_done_ms_ IDFORGE_GUARDED_BY(mu_) = 0;
  int consecutive_failures_ IDFORGE_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point retry_at_ IDFORGE_GUARDED_BY(mu_){};
  Status last_error_ IDFORGE_GUARDED_BY(mu_);
  std::atomic<uint64_t> fetches_{0};
  std::atomic<uint64_t> fetch_failures_{0};
  std::atomic<uint64_t> waits_{0};
  std::atomic<uint64_t> switches_{0};
  std::atomic<int64_t> last_fetch_ms_{0};
};

}  // namespace idforge
