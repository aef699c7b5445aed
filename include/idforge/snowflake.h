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

#include <cstdint>
#include <memory>
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
  // this much time, and the store is written about twice per reserve_ms under load
  // (next() writes it, on the caller's thread, once less than half is left ahead).
  int64_t reserve_ms = 1000;
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
  // which trusts the clock it starts with. The monotonic clock is CLOCK_BOOTTIME (it also
  // counts a suspend); with a `clock` that does not read the system's time
  // (Clock::reads_system_time), a test clock, the guard is off and its steps are
  // followed. 0: follow every step.
  int64_t max_clock_step_ms = 10'000;
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

// The generator. An interface: create() returns the implementation, whose state is
// private to the library.
class SnowflakeGenerator {
 public:
  // Validates the options (the error names the bad one), loads the high-water mark
  // and reserves ahead of it.
  static Result<std::unique_ptr<SnowflakeGenerator>> create(SnowflakeOptions options);

  virtual ~SnowflakeGenerator();
  SnowflakeGenerator(const SnowflakeGenerator&) = delete;
  SnowflakeGenerator& operator=(const SnowflakeGenerator&) = delete;

  // The next ID. Errors: Unavailable (fenced; clock behind the restart mark),
  // ClockBackwards, ResourceExhausted (drift budget spent, time field exhausted),
  // DeadlineExceeded (waited max_wait_ms), IoError (high-water store failed).
  virtual Result<uint64_t> next() = 0;

  // Fills `out` with increasing IDs, taking each tick's free sequences in one CAS.
  // All or nothing: on error, `out` holds no usable IDs (the skipped ones are gaps).
  // The way to take many IDs: one call, not one per ID.
  virtual Status next_batch(std::span<uint64_t> out) = 0;

  // Stops issuing: next() returns Unavailable with `reason` until unfence(). Used when
  // a worker-id lease cannot be renewed (docs/architecture.md, invariant 3).
  virtual void fence(std::string reason) = 0;
  virtual void unfence() = 0;
  virtual bool fenced() const = 0;

  // Writes a fresh mark (reserve_ms past the clock or the last ID issued, whichever is
  // later) if less than half of reserve_ms is left ahead of either. next() does the same
  // on its caller's thread when it gets there; called from a timer as well, this keeps
  // the mark ahead while the generator is idle, so that the first call after a pause
  // does not wait for the store.
  virtual Status renew_reservation() = 0;

  virtual const Layout& layout() const = 0;
  virtual RollbackPolicy policy() const = 0;
  // The node part of every ID (all node fields in place).
  virtual uint64_t node_bits() const = 0;
  // Unix ms of the last tick issued (0 before the first ID).
  virtual int64_t last_unix_ms() const = 0;
  // How far the last issued tick is ahead of the clock, in ms (0 when behind).
  virtual int64_t drift_ms() const = 0;
  // The stored high-water mark in Unix ms (0 without a store).
  virtual int64_t reserved_until_ms() const = 0;
  // While the clock is more than max_clock_step_ms ahead of the trusted time (a jump
  // this generator does not follow): by how much, as last seen; else 0.
  virtual int64_t clock_ahead_ms() const = 0;
  virtual SnowflakeCounters counters() const = 0;

 protected:
  SnowflakeGenerator() = default;
};

}  // namespace idforge
