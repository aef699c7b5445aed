// SnowflakeEvents: what the Snowflake part's thread writes to the log, once per change of
// state (docs/operations.md, "Logs"). The generator (in core, which does no I/O) only
// counts; this looks at its counters and gauges once per round of the part's thread
// (every 100 ms) and writes what changed:
//
//   clock.set_back / clock.caught_up   the clock stepped behind the last ID issued, and
//                                      what the policy did until it caught up
//   clock.jumped / clock.jump_ended    a forward step past max_clock_step_ms, not followed
//   reservation.failed / .renewed      a write of the time high-water mark failed (counted)
//   reservation.slow / .fast           a write took slow_store_ms or more (counted)
//   reservation.ran_out / .restored    IDs reached the stored mark before a write landed
//   layout.exhausting / .exhausted     the layout's time field runs out within a year / ran out
//   lease.replaced, lease.acquire_failed   a lost lease replaced (or not yet)
//
// Used by the part's one thread only (and by start() before that thread exists): no lock.
#pragma once

#include <cstdint>
#include <string>

#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "log/repeats.h"
#include "server/service/service_config.h"
#include "server/service/service_status.h"

namespace idforge::server {

class SnowflakeEvents {
 public:
  // Warned about when the layout's time field has less than this left.
  static constexpr int64_t kLayoutWarnMs = int64_t{365} * 24 * 3600 * 1000;

  explicit SnowflakeEvents(const ServiceConfig& config);

  // Once, when the part starts: the layout's time left, when short.
  void started(const SnowflakeGenerator& gen);
  // A round of the part's thread, after any renewal: the clock and the layout.
  // `held`: the lease is in state held (the reservation is only kept then).
  void observe(const SnowflakeGenerator& gen, bool held);
  // A renewal of the reservation that took `took_ms`; `stores_before` is the generator's
  // high_water_stores counter before it (a renewal with nothing to write is not timed).
  void renewal(const SnowflakeGenerator& gen, const Status& renewed, int64_t took_ms,
               uint64_t stores_before);
  // A lost lease was replaced by one on `slot` (`old_slot` before), or could not be.
  void replaced(uint64_t old_slot, uint64_t slot, uint64_t leases_taken);
  void replace_failed(uint64_t old_slot, const Status& error);

 private:
  void check_layout(int64_t now_unix_ms);

  const RollbackPolicy policy_;
  const int64_t max_drift_ms_;
  const int64_t max_wait_ms_;
  const int64_t max_clock_step_ms_;
  const int64_t slow_ms_;
  const std::string layout_;
  const int64_t last_unix_ms_;  // the layout's last tick

  SnowflakeCounters seen_;  // the counters at the last round
  bool counters_read_ = false;
  // A set-back episode: from the first rollback to the clock passing the last ID.
  bool behind_ = false;
  int64_t behind_since_ms_ = 0;  // steady
  uint64_t behind_steps_ = 0;
  SnowflakeCounters behind_start_;  // the counters when it began
  bool jumped_ = false;
  uint64_t jump_steps_ = 0;
  bool layout_warned_ = false;
  bool layout_exhausted_ = false;
  log::RepeatLimiter renew_failures_;
  log::RepeatLimiter renew_slow_;
  log::RepeatLimiter ran_out_;
  log::RepeatLimiter reacquire_;
};

}  // namespace idforge::server
