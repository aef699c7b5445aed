#include "server/service/snowflake_events.h"

#include <algorithm>
#include <chrono>

#include "core/now_ms.h"
#include "log/log.h"

namespace idforge::server {
namespace {

std::string iso_time(int64_t unix_ms) {
  return log::format_time(
      std::chrono::system_clock::time_point(std::chrono::milliseconds(unix_ms)));
}

// What the policy does while the clock is behind (docs/snowflake.md).
std::string_view policy_action(RollbackPolicy policy) {
  switch (policy) {
    case RollbackPolicy::kLogical:
      return "IDs go on from the last tick, up to max_drift_ms ahead of the clock; beyond that "
             "requests fail (resource_exhausted) until the clock catches up";
    case RollbackPolicy::kWait:
      return "requests wait up to max_wait_ms for the clock; a longer step fails them "
             "(deadline_exceeded) until the clock catches up";
    case RollbackPolicy::kReject:
      return "requests fail (clock_backwards) until the clock catches up";
    case RollbackPolicy::kRing:
      return "IDs take unused sequences of recent ticks; a step past the ring fails requests "
             "(clock_backwards) until the clock catches up";
  }
  return "";
}

}  // namespace

SnowflakeEvents::SnowflakeEvents(const ServiceConfig& config)
    : policy_(config.policy),
      max_drift_ms_(config.max_drift_ms),
      max_wait_ms_(config.max_wait_ms),
      max_clock_step_ms_(config.max_clock_step_ms),
      slow_ms_(config.slow_store_ms),
      layout_(config.layout_label),
      last_unix_ms_(config.layout.capacity().last_unix_ms) {}

void SnowflakeEvents::started(const SnowflakeGenerator& gen) {
  seen_ = gen.counters();
  counters_read_ = true;
  check_layout(unix_now_ms());
}

void SnowflakeEvents::check_layout(int64_t now_unix_ms) {
  const int64_t left = last_unix_ms_ - now_unix_ms;
  if (left <= 0) {
    if (layout_exhausted_) return;
    layout_exhausted_ = layout_warned_ = true;
    log::error("layout.exhausted", {{"layout", layout_}, {"ran_out", iso_time(last_unix_ms_)}});
  } else if (left < kLayoutWarnMs && !layout_warned_) {
    layout_warned_ = true;
    log::warn("layout.exhausting", {{"layout", layout_},
                                    {"time_left_days", left / (24 * 3600 * 1000)},
                                    {"runs_out", iso_time(last_unix_ms_)}});
  }
}

void SnowflakeEvents::observe(const SnowflakeGenerator& gen, bool held) {
  const SnowflakeCounters c = gen.counters();
  if (!counters_read_) {
    seen_ = c;
    counters_read_ = true;
  }
  const std::string_view policy = policy_name(policy_);

  // The clock behind the last ID issued: one line when seen, one when it caught up, with
  // what the policy did meanwhile.
  if (c.rollbacks > seen_.rollbacks) {
    if (!behind_) {
      behind_ = true;
      behind_since_ms_ = steady_now_ms();
      behind_steps_ = 0;
      behind_start_ = seen_;
      log::warn("clock.set_back", {{"policy", policy},
                                   {"behind_ms", gen.drift_ms()},
                                   {"max_drift_ms", max_drift_ms_},
                                   {"max_wait_ms", max_wait_ms_},
                                   {"action", policy_action(policy_)}});
    }
    behind_steps_ += c.rollbacks - seen_.rollbacks;
  } else if (behind_ && gen.drift_ms() == 0) {
    behind_ = false;
    log::info("clock.caught_up",
              {{"policy", policy},
               {"steps", behind_steps_},
               {"took_ms", steady_now_ms() - behind_since_ms_},
               {"failed_requests", c.failures - behind_start_.failures},
               {"waited_ms", c.waited_ms - behind_start_.waited_ms},
               {"borrowed_ms", c.borrowed_ms - behind_start_.borrowed_ms},
               {"ring_revisits", c.ring_revisits - behind_start_.ring_revisits}});
  }

  // A forward step the generator did not follow.
  const int64_t jump_ms = gen.clock_ahead_ms();
  if (c.clock_jumps > seen_.clock_jumps) {
    if (!jumped_) {
      jumped_ = true;
      jump_steps_ = 0;
      log::warn("clock.jumped",
                {{"ahead_ms", jump_ms},
                 {"max_clock_step_ms", max_clock_step_ms_},
                 {"action",
                  "IDs stay at the trusted time (the clock as last accepted, carried on by the "
                  "monotonic clock); no high-water mark is written past it"}});
    }
    jump_steps_ += c.clock_jumps - seen_.clock_jumps;
  } else if (jumped_ && jump_ms == 0) {
    jumped_ = false;
    log::info("clock.jump_ended", {{"jumps", jump_steps_}});
  }
  seen_ = c;

  // IDs that reached the stored mark before a write landed wait for it, then fail. Not
  // judged during a jump: the wall clock is then ahead of the time IDs carry.
  const int64_t reserved = gen.reserved_until_ms();
  const int64_t now = unix_now_ms();
  if (held && reserved != 0 && jump_ms == 0) {
    const int64_t ahead = reserved - std::max(now, gen.last_unix_ms());
    if (ahead < 0) {
      ran_out_.fail(log::Level::kError, "reservation.ran_out", {{"behind_ms", -ahead}});
    } else {
      ran_out_.recover(log::Level::kInfo, "reservation.restored", {{"ahead_ms", ahead}});
    }
  }
  check_layout(now);
}

void SnowflakeEvents::renewal(const SnowflakeGenerator& gen, const Status& renewed, int64_t took_ms,
                              uint64_t stores_before) {
  if (!renewed.ok()) {
    renew_failures_.fail(log::Level::kWarn, "reservation.failed",
                         {{"error", renewed.message()}, {"took_ms", took_ms}});
    return;
  }
  renew_failures_.recover(log::Level::kInfo, "reservation.renewed", {{"took_ms", took_ms}});
  if (gen.counters().high_water_stores == stores_before) return;  // nothing was written
  if (took_ms >= slow_ms_) {
    renew_slow_.fail(log::Level::kWarn, "reservation.slow",
                     {{"took_ms", took_ms}, {"slow_store_ms", slow_ms_}});
  } else {
    renew_slow_.recover(log::Level::kInfo, "reservation.fast", {{"took_ms", took_ms}});
  }
}

void SnowflakeEvents::replaced(uint64_t old_slot, uint64_t slot, uint64_t leases_taken) {
  const log::Field fields[] = {
      {"old_slot", old_slot}, {"slot", slot}, {"leases_taken", leases_taken}};
  if (!reacquire_.recover(log::Level::kInfo, "lease.replaced", fields)) {
    log::write(log::Level::kInfo, "lease.replaced", fields);
  }
}

void SnowflakeEvents::replace_failed(uint64_t old_slot, const Status& error) {
  reacquire_.fail(log::Level::kWarn, "lease.acquire_failed",
                  {{"old_slot", old_slot}, {"error", error.message()}});
}

}  // namespace idforge::server
