// Clock: where generators read the time, so tests can substitute a manual one.
//
// now_ms() is Unix time in milliseconds and may step backwards (NTP, an operator);
// generators never trust it to be monotonic. All clocks here are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace idforge {

class Clock {
 public:
  virtual ~Clock() = default;
  // Unix time in milliseconds.
  virtual int64_t now_ms() = 0;
  // Unix time read from the source itself, for decisions worth a system call (whether
  // to wait or fail); a cached clock also refreshes its cache with it.
  virtual int64_t now_precise_ms() { return now_ms(); }
  // Blocks for about `ms` milliseconds (a ManualClock advances itself instead).
  virtual void sleep_ms(int64_t ms) = 0;
  // Waits until now_ms() >= target_ms, giving up after about max_wait_ms of real time;
  // returns the time spent (in microseconds: waits at a tick boundary are mostly under a
  // millisecond). Waits of a couple of ms spin (yielding), since a Snowflake tick is 1 ms
  // and a sleep overshoots it; longer ones sleep.
  virtual std::chrono::microseconds wait_until(int64_t target_ms, int64_t max_wait_ms);
  // True for the clocks that read the system's real-time clock, whose steps the system's
  // monotonic clock can tell from jumps (SnowflakeOptions::max_clock_step_ms).
  virtual bool reads_system_time() const { return false; }
};

// Reads the system's real-time clock on every call (about 20 ns).
class SystemClock final : public Clock {
 public:
  int64_t now_ms() override;
  bool reads_system_time() const override { return true; }
  void sleep_ms(int64_t ms) override;
};

// The system clock read by a background thread once per millisecond; now_ms() is one
// atomic load (about 1 ns), at most about a millisecond behind the system clock.
// The thread starts with the first instance and stops when the last one is destroyed.
// Uniqueness never depends on how fresh the value is: generators treat any clock
// value as a hint.
class CachedSystemClock final : public Clock {
 public:
  CachedSystemClock();
  ~CachedSystemClock() override;
  CachedSystemClock(const CachedSystemClock&) = delete;
  CachedSystemClock& operator=(const CachedSystemClock&) = delete;

  int64_t now_ms() override;
  int64_t now_precise_ms() override;
  void sleep_ms(int64_t ms) override;
  bool reads_system_time() const override { return true; }
  // Waits on the real clock and then shares what it read, so a waiter does not depend
  // on the background thread getting CPU time.
  std::chrono::microseconds wait_until(int64_t target_ms, int64_t max_wait_ms) override;
};

// The clock generators use when none is given: a process-wide CachedSystemClock.
Clock& default_clock();

// A process-wide SystemClock: no thread. For a process whose generators are asked a few
// hundred thousand times a second at most (the server), where the cached clock's thread,
// waking a thousand times a second, costs more than reading the clock on each call.
Clock& system_clock();

// A clock that moves only when told to. With auto_advance (the default), sleep_ms
// advances it by the requested time, so code that waits finishes at once in tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000, bool auto_advance = true)
      : now_(start_ms), auto_advance_(auto_advance) {}

  int64_t now_ms() override { return now_.load(std::memory_order_acquire); }
  void sleep_ms(int64_t ms) override;
  // With auto_advance, moves the clock forward to target_ms (at most max_wait_ms) and
  // returns that step.
  std::chrono::microseconds wait_until(int64_t target_ms, int64_t max_wait_ms) override;

  void set(int64_t ms) { now_.store(ms, std::memory_order_release); }
  void advance(int64_t ms) { now_.fetch_add(ms, std::memory_order_acq_rel); }
  // Total milliseconds requested through sleep_ms.
  int64_t slept_ms() const { return slept_.load(std::memory_order_acquire); }

 private:
  std::atomic<int64_t> now_;
  std::atomic<int64_t> slept_{0};
  bool auto_advance_;
};

}  // namespace idforge
