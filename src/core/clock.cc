#include "idforge/clock.h"

#include <time.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace idforge {
namespace {

int64_t read_realtime_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
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

  void acquire() {
    std::lock_guard lock(mu_);
    if (users_++ == 0) {
      now_.store(read_realtime_ms(), std::memory_order_relaxed);
      stop_ = false;
      thread_ = std::thread([this] { run(); });
    }
  }

  void release() {
    std::thread done;
    {
      std::lock_guard lock(mu_);
      if (--users_ > 0) return;
      stop_ = true;
      done = std::move(thread_);
    }
    cv_.notify_all();
    if (done.joinable()) done.join();
  }

  int64_t now() const { return now_.load(std::memory_order_relaxed); }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      now_.store(static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000,
                 std::memory_order_relaxed);
      // Wake just after the next millisecond boundary.
      auto until_next = std::chrono::nanoseconds(1'000'000 - ts.tv_nsec % 1'000'000 + 20'000);
      lock.lock();
      cv_.wait_for(lock, until_next, [this] { return stop_; });
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  int users_ = 0;
  bool stop_ = false;
  std::atomic<int64_t> now_{0};
};

}  // namespace

int64_t SystemClock::now_ms() { return read_realtime_ms(); }
void SystemClock::sleep_ms(int64_t ms) { sleep_real_ms(ms); }

CachedSystemClock::CachedSystemClock() { Ticker::instance().acquire(); }
CachedSystemClock::~CachedSystemClock() { Ticker::instance().release(); }
int64_t CachedSystemClock::now_ms() { return Ticker::instance().now(); }
void CachedSystemClock::sleep_ms(int64_t ms) { sleep_real_ms(ms); }

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

}  // namespace idforge
