// SpinPolicy: whether an event loop that ran out of work polls for a while before it
// sleeps (NetOptions::io_spin_us). Only decisions on time points, so the rules are
// tested without threads or sockets; Loop::run (net_connection.cc) does the polling.
//
//   SpinPolicy policy(std::chrono::microseconds(50));
//   idle at t:   if (policy.may_spin(t)) poll and yield until t + policy.spin(), and stop
//                early when policy.preempted(before_yield, after_yield) says so;
//   then sleep:  policy.woke(t, time_the_next_work_came);
//
// Why poll at all: a sleeping loop must be woken for the next packet, and the sender
// pays for that wake-up (on loopback, inside the client's send()). Polling helps only
// while requests come back within the spin time, so a gap longer than that stops it
// until the gaps are short again. A yield that took long means another thread wanted
// this core and got it: on an oversubscribed machine a polling loop loses whole time
// slices (milliseconds of latency) where a sleeping one is woken promptly, so it backs
// off, twice as long each time that happens again soon.
#pragma once

#include <algorithm>
#include <chrono>

namespace idforge::server::net {

class SpinPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  // A yield longer than this was a time slice given to another thread. A yield with
  // nobody waiting takes about a microsecond; measured on a busy 2-core VM, slices
  // another thread took were 1.9-4 ms, while hiccups with no thread switch (the
  // hypervisor taking the vCPU) were 0.2-0.7 ms and are no reason to stop.
  static constexpr Clock::duration kPreempted = std::chrono::milliseconds(1);
  static constexpr Clock::duration kBackOff = std::chrono::milliseconds(100);
  static constexpr int kMaxDoublings = 6;  // back-off at most 6.4 s
  // A preemption this long after the previous one starts again from kBackOff.
  static constexpr Clock::duration kForget = std::chrono::seconds(10);

  explicit SpinPolicy(Clock::duration spin) : spin_(std::max(spin, Clock::duration::zero())) {}

  Clock::duration spin() const { return spin_; }

  // Whether a loop that ran out of work at `now` should poll before sleeping.
  bool may_spin(Clock::time_point now) const {
    return spin_ > Clock::duration::zero() && short_gaps_ && now >= no_spin_until_;
  }

  // One yield while polling took from `before` to `after`. True if the loop was
  // preempted: it stops polling now and backs off.
  bool preempted(Clock::time_point before, Clock::time_point after) {
    if (after - before <= kPreempted) return false;
    doublings_ = had_preemption_ && after - last_preempted_ <= kForget
                     ? std::min(doublings_ + 1, kMaxDoublings)
                     : 0;
    had_preemption_ = true;
    last_preempted_ = after;
    no_spin_until_ = after + kBackOff * (1 << doublings_);
    return true;
  }

  // The loop slept; it had been idle (polling included) from `idle_since` until work
  // came at `now`.
  void woke(Clock::time_point idle_since, Clock::time_point now) {
    short_gaps_ = now - idle_since < spin_;
  }

 private:
  Clock::duration spin_;
  bool short_gaps_ = true;
  Clock::time_point no_spin_until_{};
  bool had_preemption_ = false;
  Clock::time_point last_preempted_{};
  int doublings_ = 0;
};

}  // namespace idforge::server::net
