// SnowflakeGeneratorImpl: the state and the inline fast path behind the
// SnowflakeGenerator interface (include/idforge/snowflake.h), and SnowflakeInternals,
// the knobs only idforge's own layers set: the server (store_on_next,
// reservation_wanted), its leases (renew_below_ms, src/coord/held_lease.cc) and the
// tests (monotonic_ms). Internal: included as "core/snowflake_impl.h", never installed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "idforge/clock.h"
#include "idforge/high_water.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "thread_annotations.h"

namespace idforge {

// "250 ms", for the generator's error messages.
inline std::string ms_text(int64_t ms) { return std::to_string(ms) + " ms"; }

struct SnowflakeInternals {
  // The mark is written again once less than this is left ahead (0: reserve_ms / 2).
  // A reservation renewed early, with little issued since, is what keeps IDs flowing
  // through a store outage of nearly reserve_ms (the server's lease marks,
  // docs/operations.md "Worker ids"); at most reserve_ms - 1.
  int64_t renew_below_ms = 0;
  // Whether next() may write the mark itself when the reservation runs short: a store
  // round trip (to a coordinator, for a lease's mark) on the caller's thread. false:
  // only renew_reservation() writes it, which a background thread must then call; a
  // call that needs a tick past the reservation waits up to max_wait_ms for it and
  // otherwise fails with Unavailable. The server uses false, so that a slow coordinator
  // never holds an event loop.
  bool store_on_next = true;
  // With store_on_next false: called on the caller's thread, once until the next store,
  // when next() reaches the point where the mark should be renewed; it should wake the
  // thread that calls renew_reservation(). Must not call into the generator.
  std::function<void()> reservation_wanted;
  // The monotonic clock of the trusted time (SnowflakeOptions::max_clock_step_ms), in
  // ms. Null: CLOCK_BOOTTIME (it also counts a suspend) with a clock that reads the
  // system's time; with a test `clock` and no monotonic_ms the guard is off, so its
  // steps are followed as before.
  std::function<int64_t()> monotonic_ms;
};

// SnowflakeGenerator::create with the internal knobs; validates both (the error names
// the bad one).
Result<std::unique_ptr<SnowflakeGenerator>> create_snowflake_generator(
    SnowflakeOptions options, SnowflakeInternals internals);

class SnowflakeGeneratorImpl final : public SnowflakeGenerator {
 public:
  // Validates the options, loads the high-water mark and reserves ahead of it.
  static Result<std::unique_ptr<SnowflakeGeneratorImpl>> create(SnowflakeOptions options,
                                                                SnowflakeInternals internals);
  ~SnowflakeGeneratorImpl() override;

  // Inline here, so a caller that holds the implementation (the class is final) pays
  // no virtual call on the fast path.
  Result<uint64_t> next() override {
    uint64_t id;
    if (try_fast(&id)) return id;
    return next_slow();
  }
  Status next_batch(std::span<uint64_t> out) override;

  void fence(std::string reason) override IDFORGE_EXCLUDES(fence_mu_);
  void unfence() override IDFORGE_EXCLUDES(fence_mu_);
  bool fenced() const override { return fenced_.load(std::memory_order_acquire); }
  Status renew_reservation() override IDFORGE_EXCLUDES(slow_mu_);

  const Layout& layout() const override { return layout_; }
  RollbackPolicy policy() const override { return policy_; }
  uint64_t node_bits() const override { return node_bits_; }
  int64_t last_unix_ms() const override;
  int64_t drift_ms() const override;
  int64_t reserved_until_ms() const override;
  int64_t clock_ahead_ms() const override {
    return clock_ahead_ms_.load(std::memory_order_relaxed);
  }
  SnowflakeCounters counters() const override;

 private:
  SnowflakeGeneratorImpl(SnowflakeOptions options, SnowflakeInternals internals);

  // A run of consecutive sequences in one tick.
  struct Claim {
    uint64_t tick = 0;
    uint64_t first_seq = 0;
    uint64_t count = 0;
  };

  // The common case, inline: no rollback suspected, room in the tick (or a new tick),
  // one CAS, nothing to reserve. Anything else, including a lost CAS, goes to the
  // slow path, which handles every case again from the start.
  bool try_fast(uint64_t* id) {
    if (policy_ == RollbackPolicy::kRing || fenced_.load(std::memory_order_acquire)) return false;
    const int64_t now = clock_->now_ms();
    if (now < max_clock_ms_.load(std::memory_order_relaxed)) return false;
    const uint64_t now_tick = tick_of_ms(now);
    uint64_t cur = state_.load(std::memory_order_acquire);
    const uint64_t tick = cur >> seq_bits_;
    uint64_t next;
    if (now_tick > tick) {
      if (now_tick > max_tick_) return false;
      next = now_tick << seq_bits_;
    } else if ((now_tick == tick || policy_ == RollbackPolicy::kLogical) &&
               (cur & seq_mask_) < seq_mask_) {
      next = cur + 1;
    } else {
      return false;
    }
    if ((next >> seq_bits_) >= renew_tick_.load(std::memory_order_acquire)) return false;
    if (!state_.compare_exchange_strong(cur, next, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
      return false;
    }
    // Once per tick: remember the clock value, to tell a rollback from a stale reading.
    if (now_tick > tick) note_fast_clock(now);
    *id = compose(next >> seq_bits_, next & seq_mask_);
    return true;
  }
  Result<uint64_t> next_slow();
  void note_clock(int64_t now_ms);
  // note_clock for a reading the fast path issued at: not a jump, so one that was going
  // on is over.
  void note_fast_clock(int64_t now_ms);

  Status init() IDFORGE_EXCLUDES(slow_mu_);
  // Claims up to `want` sequences of one tick under the policy, then makes sure the
  // high-water mark covers that tick.
  Status claim(uint64_t want, Claim* out);
  Status claim_linear(uint64_t want, Claim* out);
  Status claim_ring(uint64_t want, Claim* out);
  // Tick of the clock (0 before the epoch), and whether the clock stepped back.
  uint64_t read_tick();
  // `clock_ms`, or the trusted time when the clock jumped past max_clock_step_ms.
  int64_t trusted_ms(int64_t clock_ms);
  // The trusted time now (only with the jump guard on).
  int64_t trusted_now_ms() const;
  // The start's refusal when the clock is behind the restored mark.
  Status start_refused(const HighWaterMark& mark, const std::string& old_layout, int64_t now_ms,
                       int64_t need_ms) const;
  uint64_t tick_of_ms(int64_t unix_ms) const {
    if (unix_ms <= epoch_ms_) return 0;
    const auto delta = static_cast<uint64_t>(unix_ms - epoch_ms_);
    return tick_ms_ == 1 ? delta : delta / tick_ms_;
  }
  // Waits for the clock to reach `tick`, at most `max_ms`; false if it did not.
  bool wait_for_tick(uint64_t tick, int64_t max_ms);
  Status ensure_reserved(uint64_t tick) IDFORGE_EXCLUDES(slow_mu_);
  // store_on_next false: waits (at most max_wait_ms) for renew_reservation() to cover
  // `tick`, asking for it through reservation_wanted.
  Status await_reservation(uint64_t tick);
  Status store_mark_locked(int64_t mark_ms) IDFORGE_REQUIRES(slow_mu_);
  Status time_exhausted() const;
  Status fail(Status status);
  uint64_t compose(uint64_t tick, uint64_t seq) const {
    return (tick << time_shift_) | node_bits_ | (seq << seq_shift_);
  }

  // Read-mostly configuration.
  const Layout layout_;
  const RollbackPolicy policy_;
  const int64_t max_drift_ms_;
  const int64_t max_wait_ms_;
  const uint64_t ring_ticks_;
  const int64_t reserve_ms_;
  const int64_t renew_below_ms_;  // renew the mark when less than this is left
  const int64_t startup_wait_ms_;
  const int64_t max_step_ms_;
  Clock* const clock_;
  std::function<int64_t()> monotonic_;  // null: no jump guard
  HighWaterStore* const high_water_ IDFORGE_PT_GUARDED_BY(slow_mu_);
  const bool store_on_next_;
  const std::function<void()> reservation_wanted_;
  std::vector<std::pair<std::string, uint64_t>> nodes_;
  uint64_t node_bits_ = 0;
  int time_shift_ = 0;
  int seq_shift_ = 0;
  int seq_bits_ = 0;
  uint64_t seq_mask_ = 0;
  uint64_t max_tick_ = 0;
  int64_t epoch_ms_ = 0;
  uint64_t tick_ms_ = 1;
  uint64_t floor_tick_ = 0;  // first tick this generator may use (above the restored mark)
  bool guard_ = false;       // the clock-jump guard is on
  std::string mark_layout_;  // mark_layout_key(layout_)

  // The hot word: (tick << seq_bits_) | last sequence issued in that tick. Alone on
  // its cache line so that counter updates do not bounce it between cores.
  alignas(64) std::atomic<uint64_t> state_{0};
  // Ring policy: one word per remembered tick, same encoding as state_.
  std::unique_ptr<std::atomic<uint64_t>[]> ring_;

  alignas(64) std::atomic<int64_t> max_clock_ms_{0};  // highest clock value seen
  std::atomic<int64_t> rollback_mark_{0};             // max_clock_ms_ at the last counted rollback
  std::atomic<int64_t> trust_offset_{0};              // trusted time = monotonic_() + this
  std::atomic<int64_t> trust_ceiling_ms_{0};  // a reading up to this is trusted without looking
  std::atomic<int64_t> clock_ahead_ms_{0};
  std::atomic<uint64_t> ring_high_{0};      // ring: highest tick issued
  std::atomic<uint64_t> reserved_tick_{0};  // ticks <= this are covered by the stored mark
  std::atomic<uint64_t> renew_tick_{0};     // from this tick on, renew the mark early
  std::atomic<int64_t> reserved_ms_{0};
  std::atomic<bool> fenced_{false};
  std::atomic<bool> reservation_asked_{false};  // reservation_wanted called since the last store
  // Serializes the calls into high_water_ (PT_GUARDED_BY), which may wait on a
  // coordinator.
  Mutex slow_mu_;
  // Guards fence_reason_ alone and is never held across I/O: a fenced request reads the
  // reason, and the lease keeper fences on time, while a mark write hangs under slow_mu_.
  // So it may be taken under slow_mu_, never the reverse.
  mutable Mutex fence_mu_ IDFORGE_ACQUIRED_AFTER(slow_mu_);
  std::string fence_reason_ IDFORGE_GUARDED_BY(fence_mu_);

  alignas(64) std::atomic<uint64_t> rollbacks_{0};
  std::atomic<uint64_t> waited_us_{0};
  std::atomic<uint64_t> borrowed_ms_{0};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> ring_revisits_{0};
  std::atomic<uint64_t> high_water_stores_{0};
  std::atomic<uint64_t> clock_jumps_{0};
};

}  // namespace idforge
