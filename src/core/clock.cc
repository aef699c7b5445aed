#include "idforge/clock.h"

#include <errno.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "thread_annotations.h"
#include "thread_name.h"

namespace idforge {
namespace {

int64_t ms_of(const timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

int64_t read_realtime_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ms_of(ts);
}

void sleep_real_ms(int64_t ms) {
  if (ms <= 0) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// One refresher thread for all CachedSystemClock instances. The value is the system
// clock read at most about a millisecond ago; relaxed order is enough because readers
// only need some recent value, and no other data is published through it.
class Ticker {
 public:
  static Ticker& instance() {
    static Ticker* ticker = new Ticker();  // never destroyed: readers may outlive statics
    return *ticker;
  }

  void acquire() IDFORGE_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (users_++ == 0) {
      now_.store(read_realtime_ms(), std::memory_order_relaxed);
      // Each thread its own flag: with one shared flag, an acquire just after the last
      // release would clear it before the old thread saw it, and that release's join
      // would wait until the next release.
      stop_ = std::make_shared<std::atomic<bool>>(false);
      thread_ = std::thread([this, stop = stop_] { run(*stop); });
    }
  }

  void release() IDFORGE_EXCLUDES(mu_) {
    std::thread done;
    {
      MutexLock lock(mu_);
      if (--users_ > 0) return;
      stop_->store(true, std::memory_order_relaxed);
      done = std::move(thread_);
    }
    if (done.joinable()) done.join();  // within a millisecond: the thread's next wake
  }

  int64_t now() const { return now_.load(std::memory_order_relaxed); }

  // A waiter that read the real clock shares it, so waiting works even when the ticker
  // thread is starved of CPU. Only ever moves forward: a real step back is published
  // by the ticker alone, never by a waiter's older reading.
  void publish(int64_t ms) {
    int64_t cur = now_.load(std::memory_order_relaxed);
    while (ms > cur && !now_.compare_exchange_weak(cur, ms, std::memory_order_relaxed)) {
    }
  }

 private:
  // One clock_nanosleep a millisecond and nothing else: a condition variable's timed wait
  // cost two futex calls a tick (the wait, and the wake glibc makes when it takes the
  // mutex back), 2,000 system calls a second beside the requests (docs/benchmarks.md,
  // "System calls per request").
  void run(const std::atomic<bool>& stop) {
    name_this_thread("idforge-clock");
    while (!stop.load(std::memory_order_relaxed)) {
      timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      now_.store(ms_of(ts), std::memory_order_relaxed);
      // Wake just after the next millisecond boundary (relative: the real clock may step).
      timespec nap{0, 1'000'000 - ts.tv_nsec % 1'000'000 + 20'000};
      while (clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, &nap) == EINTR) {
      }
    }
  }

  Mutex mu_;
  std::thread thread_ IDFORGE_GUARDED_BY(mu_);
  int users_ IDFORGE_GUARDED_BY(mu_) = 0;
  std::shared_ptr<std::atomic<bool>> stop_ IDFORGE_GUARDED_BY(mu_);
  std::atomic<int64_t> now_{0};
};

}  // namespace

std::chrono::microseconds Clock::wait_until(int64_t target_ms, int64_t max_wait_ms) {
  using Steady = std::chrono::steady_clock;
  const auto start = Steady::now();
  const auto deadline = start + std::chrono::milliseconds(std::max<int64_t>(max_wait_ms, 0));
  for (;;) {
    int64_t now = now_ms();
    auto t = Steady::now();
    if (now >= target_ms || t >= deadline) {
      return std::chrono::duration_cast<std::chrono::microseconds>(t - start);
    }
    int64_t left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - t).count();
    int64_t behind = target_ms - now;
    if (behind > 2 && left_ms > 2) {
      sleep_ms(std::min(behind, left_ms) - 1);
    } else {
      std::this_thread::yield();
    }
  }
}

int64_t SystemClock::now_ms() { return read_realtime_ms(); }
void SystemClock::sleep_ms(int64_t ms) { sleep_real_ms(ms); }

CachedSystemClock::CachedSystemClock() { Ticker::instance().acquire(); }
CachedSystemClock::~CachedSystemClock() { Ticker::instance().release(); }
int64_t CachedSystemClock::now_ms() { return Ticker::instance().now(); }
void CachedSystemClock::sleep_ms(int64_t ms) { sleep_real_ms(ms); }

int64_t CachedSystemClock::now_precise_ms() {
  int64_t now = read_realtime_ms();
  Ticker::instance().publish(now);
  return now;
}

std::chrono::microseconds CachedSystemClock::wait_until(int64_t target_ms, int64_t max_wait_ms) {
  SystemClock real;
  const std::chrono::microseconds waited = real.wait_until(target_ms, max_wait_ms);
  Ticker::instance().publish(real.now_ms());
  return waited;
}

Clock& system_clock() {
  static SystemClock* clock = new SystemClock();  // lives as long as the process
  return *clock;
}

Clock& default_clock() {
  static CachedSystemClock* clock = new CachedSystemClock();  // lives as long as the process
  return *clock;
}

void ManualClock::sleep_ms(int64_t ms) {
  if (ms <= 0) return;
  slept_.fetch_add(ms, std::memory_order_acq_rel);
  if (auto_advance_) {
    advance(ms);
  } else {
    // Give the thread that moves the clock a chance to run.
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::chrono::microseconds ManualClock::wait_until(int64_t target_ms, int64_t max_wait_ms) {
  if (!auto_advance_) return Clock::wait_until(target_ms, max_wait_ms);
  int64_t step = std::min(target_ms - now_ms(), std::max<int64_t>(max_wait_ms, 0));
  if (step <= 0) return std::chrono::microseconds(0);
  slept_.fetch_add(step, std::memory_order_acq_rel);
  advance(step);
  return std::chrono::milliseconds(step);
}

}  // namespace idforge
