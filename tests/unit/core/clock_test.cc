// Clocks: the cached system clock tracks the real one, waits are bounded, and the
// manual clock is deterministic.
#include "idforge/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace idforge {
namespace {

TEST(ClockTest, CachedClockStaysWithinAFewMillisecondsOfTheSystemClock) {
  SystemClock real;
  CachedSystemClock cached;
  int64_t worst = 0;
  for (int i = 0; i < 50; ++i) {
    int64_t before = real.now_ms();
    int64_t c = cached.now_ms();
    worst = std::max(worst, before - c);
    EXPECT_LE(c, real.now_ms());
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  // About a millisecond normally; a loaded machine can delay the ticker thread.
  EXPECT_LT(worst, 50);
}

TEST(ClockTest, CachedClockAdvancesOverTime) {
  Clock& clock = default_clock();
  int64_t a = clock.now_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(clock.now_ms() - a, 10);
}

TEST(ClockTest, WaitUntilReturnsOnceTheTargetIsReached) {
  Clock& clock = default_clock();
  int64_t target = clock.now_ms() + 3;
  clock.wait_until(target, 1000);
  EXPECT_GE(clock.now_ms(), target);
}

TEST(ClockTest, WaitUntilGivesUpAfterMaxWait) {
  SystemClock clock;
  auto start = std::chrono::steady_clock::now();
  clock.wait_until(clock.now_ms() + 60'000, 20);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(19));
  EXPECT_LT(took, std::chrono::milliseconds(2000));
}

TEST(ClockTest, ManualClockAdvancesOnlyWhenTold) {
  ManualClock clock(1000);
  EXPECT_EQ(clock.now_ms(), 1000);
  clock.advance(5);
  EXPECT_EQ(clock.now_ms(), 1005);
  clock.set(10);
  EXPECT_EQ(clock.now_ms(), 10);
  clock.sleep_ms(7);  // auto-advance
  EXPECT_EQ(clock.now_ms(), 17);
  EXPECT_EQ(clock.wait_until(30, 5), std::chrono::milliseconds(5));  // bounded by max_wait
  EXPECT_EQ(clock.now_ms(), 22);
  EXPECT_EQ(clock.wait_until(20, 100), std::chrono::microseconds(0));  // already there
  EXPECT_EQ(clock.slept_ms(), 12);
}

TEST(ClockTest, FrozenManualClockDoesNotMoveWhileWaiting) {
  ManualClock clock(1000, /*auto_advance=*/false);
  clock.wait_until(2000, 5);
  EXPECT_EQ(clock.now_ms(), 1000);
}

}  // namespace
}  // namespace idforge
