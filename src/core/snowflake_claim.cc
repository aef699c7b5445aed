// SnowflakeGeneratorImpl's issuing beyond the inline fast path: reading the clock
// (rollbacks, waits) and claiming sequences under each policy. The rest (creation, the
// start above the stored mark, the reservation, fencing) is in snowflake.cc.
#include <algorithm>
#include <chrono>
#include <span>
#include <string>
#include <thread>

#include "snowflake_impl.h"

namespace idforge {
namespace {}  // namespace

void SnowflakeGeneratorImpl::note_clock(int64_t now_ms) {
  int64_t seen = max_clock_ms_.load(std::memory_order_relaxed);
  while (now_ms > seen &&
         !max_clock_ms_.compare_exchange_weak(seen, now_ms, std::memory_order_relaxed)) {
  }
}

void SnowflakeGeneratorImpl::note_fast_clock(int64_t now_ms) {
  note_clock(now_ms);
  if (clock_ahead_ms_.load(std::memory_order_relaxed) != 0) {
    clock_ahead_ms_.store(0, std::memory_order_relaxed);
  }
}

uint64_t SnowflakeGeneratorImpl::read_tick() {
  int64_t now = trusted_ms(clock_->now_ms());
  // Track the highest clock value seen, to count rollbacks. The store happens once per
  // millisecond, so the line stays shared-clean on the hot path.
  int64_t seen = max_clock_ms_.load(std::memory_order_relaxed);
  if (now > seen) {
    note_clock(now);
  } else if (now < seen) {
    // A thread may have read the clock just before another read a later value; only a
    // second reading still behind counts as the clock stepping back.
    int64_t again = trusted_ms(clock_->now_precise_ms());
    if (again < seen) {
      int64_t counted = rollback_mark_.load(std::memory_order_relaxed);
      if (counted != seen &&
          rollback_mark_.compare_exchange_strong(counted, seen, std::memory_order_relaxed)) {
        rollbacks_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    now = again;
  }
  return tick_of_ms(now);
}

bool SnowflakeGeneratorImpl::wait_for_tick(uint64_t tick, int64_t max_ms) {
  const int64_t waited_us = clock_->wait_until(layout_.unix_ms_of(tick), max_ms).count();
  if (waited_us > 0) {
    waited_us_.fetch_add(static_cast<uint64_t>(waited_us), std::memory_order_relaxed);
  }
  int64_t now = trusted_ms(clock_->now_ms());
  const int64_t target = layout_.unix_ms_of(tick);
  if (now < target && guard_ && clock_ahead_ms_.load(std::memory_order_relaxed) != 0 &&
      target - now <= max_ms) {
    // The clock jumped past the tick but the trusted time has not reached it yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(target - now));
    waited_us_.fetch_add(static_cast<uint64_t>(target - now) * 1000, std::memory_order_relaxed);
    now = trusted_ms(clock_->now_ms());
  }
  return tick_of_ms(now) >= tick;
}

Result<uint64_t> SnowflakeGeneratorImpl::next_slow() {
  Claim c;
  Status st = claim(1, &c);
  if (!st.ok()) return st;
  return compose(c.tick, c.first_seq);
}

Status SnowflakeGeneratorImpl::next_batch(std::span<uint64_t> out) {
  size_t filled = 0;
  while (filled < out.size()) {
    Claim c;
    IDFORGE_RETURN_IF_ERROR(claim(out.size() - filled, &c));
    uint64_t id = compose(c.tick, c.first_seq);
    const uint64_t step = uint64_t{1} << seq_shift_;
    for (uint64_t i = 0; i < c.count; ++i, id += step) out[filled++] = id;
  }
  return Status::Ok();
}

Status SnowflakeGeneratorImpl::claim(uint64_t want, Claim* out) {
  if (fenced_.load(std::memory_order_acquire)) {
    MutexLock lock(fence_mu_);
    return fail(Status::Unavailable(fence_reason_));
  }
  Status st = policy_ == RollbackPolicy::kRing ? claim_ring(want, out) : claim_linear(want, out);
  if (!st.ok()) return fail(std::move(st));
  if (out->tick >= renew_tick_.load(std::memory_order_acquire)) {
    st = ensure_reserved(out->tick);
    if (!st.ok()) return fail(std::move(st));
  }
  return Status::Ok();
}

// logical, wait and reject: one (tick, last sequence) word, never stepping back.
Status SnowflakeGeneratorImpl::claim_linear(uint64_t want, Claim* out) {
  const int64_t tick_ms = layout_.tick_ms();
  uint64_t now_tick = read_tick();
  uint64_t cur = state_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t tick = cur >> seq_bits_;
    const uint64_t seq = cur & seq_mask_;
    Claim c;
    if (now_tick > tick) {
      if (now_tick > max_tick_) return time_exhausted();
      c = {now_tick, 0, std::min(want, seq_mask_ + 1)};
    } else if (now_tick < tick && policy_ != RollbackPolicy::kLogical) {
      // Another thread may have read the clock after this one did and issued a later
      // tick; the state was loaded with acquire, so a fresh reading sees that tick.
      if (uint64_t again = tick_of_ms(trusted_ms(clock_->now_precise_ms())); again >= tick) {
        now_tick = again;
        continue;
      }
      // The clock really is behind the last tick issued.
      int64_t behind_ms = static_cast<int64_t>(tick - now_tick) * tick_ms;
      if (policy_ == RollbackPolicy::kReject) {
        return Status::ClockBackwards("the clock is " + ms_text(behind_ms) +
                                      " behind the last ID issued (policy reject)");
      }
      if (behind_ms > max_wait_ms_ || !wait_for_tick(tick, max_wait_ms_)) {
        return Status::DeadlineExceeded("the clock is " + ms_text(behind_ms) +
                                        " behind the last ID issued, more than max_wait_ms " +
                                        ms_text(max_wait_ms_) + " (policy wait)");
      }
      now_tick = read_tick();
      cur = state_.load(std::memory_order_acquire);
      continue;
    } else if (seq < seq_mask_) {
      c = {tick, seq + 1, std::min(want, seq_mask_ - seq)};
    } else {
      // This tick's sequence is used up.
      const uint64_t next_tick = tick + 1;
      if (next_tick > max_tick_) return time_exhausted();
      const int64_t ahead_ms = static_cast<int64_t>(next_tick - now_tick) * tick_ms;
      if (policy_ == RollbackPolicy::kLogical && ahead_ms <= max_drift_ms_) {
        c = {next_tick, 0, std::min(want, seq_mask_ + 1)};
      } else if (uint64_t fresh = tick_of_ms(trusted_ms(clock_->now_precise_ms()));
                 fresh > now_tick) {
        // This thread's reading was stale (it may have been descheduled since, or the
        // cached clock's thread starved): retry with a precise one before deciding to
        // wait or fail.
        now_tick = fresh;
        cur = state_.load(std::memory_order_acquire);
        continue;
      } else {
        // Wait for the clock to come within reach of the next tick: a tick of waiting is
        // the classic cost of overflow, max_wait_ms on top is the policy's patience.
        const int64_t excess_ms =
            ahead_ms - (policy_ == RollbackPolicy::kLogical ? max_drift_ms_ : 0);
        const uint64_t need_ticks = static_cast<uint64_t>((excess_ms + tick_ms - 1) / tick_ms);
        if (excess_ms > tick_ms + max_wait_ms_ ||
            !wait_for_tick(now_tick + need_ticks, tick_ms + max_wait_ms_)) {
          if (policy_ == RollbackPolicy::kLogical && max_drift_ms_ > 0) {
            return Status::ResourceExhausted("the generator would run " + ms_text(ahead_ms) +
                                             " ahead of the clock, more than max_drift_ms " +
                                             ms_text(max_drift_ms_) + "; one node issues at most " +
                                             std::to_string(seq_mask_ + 1) + " IDs per " +
                                             ms_text(tick_ms));
          }
          return Status::ResourceExhausted(
              "the sequence of the current tick is used up and "
              "the clock did not reach the next tick in time");
        }
        now_tick = read_tick();
        cur = state_.load(std::memory_order_acquire);
        continue;
      }
    }
    const uint64_t next = (c.tick << seq_bits_) | (c.first_seq + c.count - 1);
    if (state_.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      if (c.tick > now_tick && c.first_seq == 0 && c.tick > tick) {
        borrowed_ms_.fetch_add(static_cast<uint64_t>(tick_ms), std::memory_order_relaxed);
      }
      *out = c;
      return Status::Ok();
    }
  }
}

// ring: one word per remembered tick. A slot only ever moves to a later tick, so all
// claims of a tick happen while its slot holds that tick and the CAS keeps them apart;
// a tick whose slot moved on is outside the window and is refused, never reused.
Status SnowflakeGeneratorImpl::claim_ring(uint64_t want, Claim* out) {
  const int64_t tick_ms = layout_.tick_ms();
  uint64_t tick = read_tick();
  uint64_t high = ring_high_.load(std::memory_order_acquire);
  bool revisit = false;
  // As in claim_linear: confirm with a precise reading before treating it as a rollback.
  if (tick < high) tick = std::max(tick, tick_of_ms(trusted_ms(clock_->now_precise_ms())));
  if (tick < high) {
    if (high - tick >= ring_ticks_) {
      return Status::ClockBackwards("the clock is " +
                                    ms_text(static_cast<int64_t>(high - tick) * tick_ms) +
                                    " behind the last ID issued, outside the ring of " +
                                    std::to_string(ring_ticks_) + " ticks");
    }
    revisit = true;
  }
  for (;;) {
    if (tick > max_tick_) return time_exhausted();
    std::atomic<uint64_t>& slot = ring_[tick % ring_ticks_];
    uint64_t cur = slot.load(std::memory_order_acquire);
    const uint64_t slot_tick = cur >> seq_bits_;
    const uint64_t seq = cur & seq_mask_;
    Claim c;
    if (slot_tick > tick) {
      return Status::ClockBackwards("tick " + std::to_string(tick) +
                                    " is no longer in the ring of " + std::to_string(ring_ticks_) +
                                    " ticks");
    } else if (slot_tick < tick) {
      c = {tick, 0, std::min(want, seq_mask_ + 1)};
    } else if (seq < seq_mask_) {
      c = {tick, seq + 1, std::min(want, seq_mask_ - seq)};
    } else {
      // Used up. A revisited tick continues in the next one (still below the high
      // mark, or the frontier itself); at the frontier, wait for the clock.
      high = ring_high_.load(std::memory_order_acquire);
      if (tick < high) {
        ++tick;
        continue;
      }
      if (!wait_for_tick(tick + 1, tick_ms + max_wait_ms_)) {
        return Status::ResourceExhausted(
            "the sequence of the current tick is used up and the "
            "clock did not move on within max_wait_ms");
      }
      tick = std::max(tick + 1, read_tick());
      continue;
    }
    const uint64_t next = (c.tick << seq_bits_) | (c.first_seq + c.count - 1);
    if (slot.compare_exchange_weak(cur, next, std::memory_order_acq_rel,
                                   std::memory_order_acquire)) {
      uint64_t h = ring_high_.load(std::memory_order_relaxed);
      while (c.tick > h && !ring_high_.compare_exchange_weak(h, c.tick, std::memory_order_acq_rel,
                                                             std::memory_order_relaxed)) {
      }
      if (revisit || c.tick < h) {
        ring_revisits_.fetch_add(c.count, std::memory_order_relaxed);
      }
      *out = c;
      return Status::Ok();
    }
  }
}

}  // namespace idforge
