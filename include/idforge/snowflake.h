// SnowflakeGenerator: 64-bit, time-ordered IDs for one node of a layout.
//
//   auto gen = idforge::SnowflakeGenerator::create({}).value();
//   idforge::Result<uint64_t> id = gen->next();
//
// Thread-safety: every method may be called from any number of threads at once.
// next() is lock-free: one compare-and-swap on a 64-bit (tick, sequence) word and one
// read of the clock. IDs of one generator strictly increase in the order the calls
// take effect, whatever the clock does (the `ring` policy trades this for
// availability: after a rollback it fills unused sequences of recent ticks, so IDs
// stay unique but may be lower than earlier ones). See docs/snowflake.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/clock.h"
#include "idforge/high_water.h"
#include "idforge/layout.h"
#include "idforge/status.h"

namespace idforge {

// What a generator does when the clock is behind the last tick it issued, or when a
// tick's sequence runs out.
enum class RollbackPolicy {
  // Never step back: keep the last tick and continue its sequence; on overflow move to
  // the next tick while at most max_drift_ms ahead of the clock; past that, wait up to
  // max_wait_ms for the clock, then fail. max_drift_ms = 0 is classic Snowflake.
  kLogical,
  // Wait out a rollback of up to max_wait_ms; longer fails. Overflow waits for the
  // next tick.
  kWait,
  // Any rollback fails at once (the original Twitter code). Overflow waits.
  kReject,
  // Remember each of the last ring_ticks ticks' highest sequence; after a rollback
  // inside that window continue the revisited tick; outside it fail.
  kRing,
};

std::string_view policy_name(RollbackPolicy policy);
// "logical", "wait", "reject", "ring"; anything else is InvalidArgument.
Result<RollbackPolicy> parse_policy(std::string_view name);

// The layout as a high-water mark records it: the field spec, epoch and tick,
// "time:41,datacenter:5,worker:5,sequence:12;epoch=1288834974657;tick_ms=1".
std::string mark_layout_key(const Layout& layout);

struct SnowflakeOptions {
  Layout layout = Layout::twitter();
  // Values of the layout's node fields by name ({"datacenter", 1}, {"worker", 7});
  // absent fields are 0. An unknown name or a value that does not fit is an error.
  std::vector<std::pair<std::string, uint64_t>> nodes;
  RollbackPolicy policy = RollbackPolicy::kLogical;
  int64_t max_drift_ms = 1000;  // logical: how far ahead of the clock it may run
  int64_t max_wait_ms = 5;      // how long one call may wait for the clock
  int ring_ticks = 256;         // ring: ticks remembered (1..65536)
  Clock* clock = nullptr;       // default_clock() when null; must outlive the generator
  // Where the time high-water mark is kept; null = no persistence (IDs are then
  // unique only within this process's lifetime). Must outlive the generator.
  HighWaterStore* high_water = nullptr;
  // How far ahead of the issued time the stored mark runs; a restart may skip up to
  // this much time, and the store is written about twice per reserve_ms under load.
  int64_t reserve_ms = 1000;
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
  // After a restart the stored mark can be ahead of the clock (by up to reserve_ms, or
  // more if the clock was set back while the process was down). create() waits up to
  // this long for the clock to pass it when the policy cannot issue ahead of the clock;
  // past that it fails with Unavailable.
  int64_t max_startup_wait_ms = 3000;
  // The largest forward step of the clock a running generator follows (with a
  // high_water store). It keeps a trusted time: the clock as last accepted, carried on
  // by a monotonic clock. A reading further ahead than this is a jump (a wrong RTC, a bad
  // NTP answer): it is counted (counters().clock_jumps, clock_ahead_ms()), IDs go on at
  // the trusted time, and no mark is written past it, so a clock that comes back finds
  // no far-future mark to wait for, now or after a restart. A stored mark is thus never
  // more than max_clock_step_ms + max_drift_ms + reserve_ms ahead of the trusted time. A
  // jump that was a correction (the clock had been behind) is adopted by a restart,
  // which trusts the clock it starts with. 0: follow every step.
  int64_t max_clock_step_ms = 10'000;
  // The monotonic clock of the trusted time, in ms. Null: CLOCK_BOOTTIME (it also counts
  // a suspend) with the default clock; with a custom `clock` and no monotonic_ms the
  // guard is off, so a test clock's steps are followed as before.
  std::function<int64_t()> monotonic_ms;
};

// Event counts since construction, for metrics (IDs issued are counted by callers:
// a shared counter would double the cost of next()). Each is read atomically but the set
// is not a consistent snapshot.
struct SnowflakeCounters {
  uint64_t rollbacks = 0;          // times the clock was seen to step back
  uint64_t waited_ms = 0;          // ms spent waiting for the clock
  uint64_t borrowed_ms = 0;        // ms of ticks issued ahead of the clock (logical)
  uint64_t failures = 0;           // calls that returned an error
  uint64_t ring_revisits = 0;      // IDs issued in a revisited tick (ring)
  uint64_t high_water_stores = 0;  // writes of the high-water mark
  uint64_t clock_jumps = 0;  // forward steps past max_clock_step_ms (IDs kept to the trusted time)
};

class SnowflakeGenerator {
 public:
  // Validates the options (the error names the bad one), loads the high-water mark
  // and reserves ahead of it.
  static Result<std::unique_ptr<SnowflakeGenerator>> create(SnowflakeOptions options);

  SnowflakeGenerator(const SnowflakeGenerator&) = delete;
  SnowflakeGenerator& operator=(const SnowflakeGenerator&) = delete;
  ~SnowflakeGenerator();

  // The next ID. Errors: Unavailable (fenced; clock behind the restart mark),
  // ClockBackwards, ResourceExhausted (drift budget spent, time field exhausted),
  // DeadlineExceeded (waited max_wait_ms), IoError (high-water store failed).
  Result<uint64_t> next() {
    uint64_t id;
    if (try_fast(&id)) return id;
    return next_slow();
  }

  // Fills `out` with increasing IDs, taking each tick's free sequences in one CAS.
  // All or nothing: on error, `out` holds no usable IDs (the skipped ones are gaps).
  Status next_batch(std::span<uint64_t> out);

  // Stops issuing: next() returns Unavailable with `reason` until unfence(). Used when
  // a worker-id lease cannot be renewed (invariant 3).
  void fence(std::string reason);
  void unfence();
  bool fenced() const { return fenced_.load(std::memory_order_acquire); }

  // Writes a fresh mark (reserve_ms past the clock or the last ID issued, whichever is
  // later) if less than renew_below_ms is left ahead of either. Called by a
  // background timer so that next() rarely (store_on_next) or never writes it itself.
  Status renew_reservation();

  const Layout& layout() const { return layout_; }
  RollbackPolicy policy() const { return policy_; }
  // The node part of every ID (all node fields in place).
  uint64_t node_bits() const { return node_bits_; }
  // Unix ms of the last tick issued (0 before the first ID).
  int64_t last_unix_ms() const;
  // How far the last issued tick is ahead of the clock, in ms (0 when behind).
  int64_t drift_ms() const;
  // The stored high-water mark in Unix ms (0 without a store).
  int64_t reserved_until_ms() const;
  // While the clock is more than max_clock_step_ms ahead of the trusted time (a jump
  // this generator does not follow): by how much, as last seen; else 0.
  int64_t clock_ahead_ms() const { return clock_ahead_ms_.load(std::memory_order_relaxed); }
  SnowflakeCounters counters() const;

 private:
  explicit SnowflakeGenerator(SnowflakeOptions options);

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

  Status init();
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
  Status ensure_reserved(uint64_t tick);
  // store_on_next false: waits (at most max_wait_ms) for renew_reservation() to cover
  // `tick`, asking for it through reservation_wanted.
  Status await_reservation(uint64_t tick);
  Status store_mark_locked(int64_t mark_ms);
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
  HighWaterStore* const high_water_;
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
  std::mutex slow_mu_;                          // guards fence_reason_ and high-water writes
  std::string fence_reason_;

  alignas(64) std::atomic<uint64_t> rollbacks_{0};
  std::atomic<uint64_t> waited_us_{0};
  std::atomic<uint64_t> borrowed_ms_{0};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> ring_revisits_{0};
  std::atomic<uint64_t> high_water_stores_{0};
  std::atomic<uint64_t> clock_jumps_{0};
};

}  // namespace idforge
