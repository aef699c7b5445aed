// Forward clock steps and far-ahead marks: a clock that jumps hours ahead (a wrong RTC,
// a bad NTP answer) must not leave a mark that a restart, or the running generator once
// the clock comes back, would have to wait hours for.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "core/snowflake_impl.h"
#include "idforge/snowflake.h"
#include "idforge/time_format.h"
#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::kT0;

using testing::make_generator;
using testing::manual_options;
using testing::parts;
using testing::strictly_increasing;
using testing::take;

constexpr int64_t kHourMs = 3'600'000;

// A manual wall clock with a monotonic clock beside it that only real time moves.
struct Clocks {
  ManualClock wall{kT0};
  std::atomic<int64_t> mono{1'000'000};
  void pass(int64_t ms) {
    wall.advance(ms);
    mono.fetch_add(ms);
  }
  SnowflakeOptions options(HighWaterStore* store, RollbackPolicy policy) {
    SnowflakeOptions o = manual_options(&wall, policy);
    o.high_water = store;
    return o;
  }
  // The monotonic clock of the trusted time (a custom clock has none by default).
  SnowflakeInternals internals() {
    SnowflakeInternals i;
    i.monotonic_ms = [this] { return mono.load(); };
    return i;
  }
};

TEST(SnowflakeClockStepTest, AForwardJumpWritesNoFarFutureMarkAndARestartStartsAtOnce) {
  for (auto policy : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                      RollbackPolicy::kRing}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Clocks clocks;
    auto store = MemoryHighWaterStore::create();
    SnowflakeOptions o = clocks.options(store.get(), policy);
    auto gen = make_generator(o, clocks.internals());
    ASSERT_NE(gen, nullptr);
    std::vector<uint64_t> ids;
    for (int ms = 0; ms < 100; ++ms) {
      for (uint64_t id : take(*gen, 10)) ids.push_back(id);
      clocks.pass(1);
    }
    // The clock jumps five hours ahead and stays there for a while.
    clocks.wall.advance(5 * kHourMs);
    for (int ms = 0; ms < 3000; ++ms) {
      for (uint64_t id : take(*gen, 10)) ids.push_back(id);
      ASSERT_TRUE(gen->renew_reservation().ok());
      clocks.pass(1);
    }
    EXPECT_EQ(gen->counters().clock_jumps, 1u);
    EXPECT_GT(gen->clock_ahead_ms(), 4 * kHourMs);
    // IDs went on at the trusted time, and the mark stayed within its bound of it.
    const int64_t trusted = kT0 + 3100;
    EXPECT_LT(parts(ids.back()).unix_ms, trusted + 2000);
    EXPECT_LE(store->load().value(), trusted + o.max_clock_step_ms + o.max_drift_ms + o.reserve_ms);

    // The clock comes back: no stall, no failure, no new jump.
    clocks.wall.advance(-5 * kHourMs);
    for (int ms = 0; ms < 100; ++ms) {
      for (uint64_t id : take(*gen, 10)) ids.push_back(id);
      clocks.pass(1);
    }
    EXPECT_EQ(gen->clock_ahead_ms(), 0);
    EXPECT_EQ(gen->counters().failures, 0u);
    if (policy != RollbackPolicy::kRing) {
      EXPECT_TRUE(strictly_increasing(ids));
    }

    // A restart right away starts within the policy's normal patience, above every ID.
    gen.reset();
    o.max_startup_wait_ms = o.reserve_ms + 100;
    auto again = create_snowflake_generator(o, clocks.internals());
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    uint64_t first = (*again)->next().value();
    for (uint64_t id : ids) ASSERT_GT(first, id);
  }
}

TEST(SnowflakeClockStepTest, AStepWithinTheBoundIsFollowed) {
  Clocks clocks;
  auto store = MemoryHighWaterStore::create();
  auto gen =
      make_generator(clocks.options(store.get(), RollbackPolicy::kLogical), clocks.internals());
  take(*gen, 10);
  clocks.wall.advance(5000);  // an NTP step of 5 s: below max_clock_step_ms
  uint64_t id = gen->next().value();
  EXPECT_EQ(parts(id).unix_ms, kT0 + 5000);
  EXPECT_EQ(gen->counters().clock_jumps, 0u);
  EXPECT_EQ(gen->clock_ahead_ms(), 0);
}

TEST(SnowflakeClockStepTest, ZeroFollowsEveryStep) {
  Clocks clocks;
  auto store = MemoryHighWaterStore::create();
  SnowflakeOptions o = clocks.options(store.get(), RollbackPolicy::kLogical);
  o.max_clock_step_ms = 0;
  auto gen = make_generator(o, clocks.internals());
  clocks.wall.advance(5 * kHourMs);
  EXPECT_EQ(parts(gen->next().value()).unix_ms, kT0 + 5 * kHourMs);
  EXPECT_GE(store->load().value(), kT0 + 5 * kHourMs);
  EXPECT_EQ(gen->counters().clock_jumps, 0u);
}

TEST(SnowflakeClockStepTest, AJumpIsCountedOncePerEpisode) {
  Clocks clocks;
  auto store = MemoryHighWaterStore::create();
  auto gen =
      make_generator(clocks.options(store.get(), RollbackPolicy::kLogical), clocks.internals());
  for (int episode = 0; episode < 3; ++episode) {
    clocks.wall.advance(kHourMs);
    for (int ms = 0; ms < 600; ++ms) {
      ASSERT_TRUE(gen->next().ok());
      clocks.pass(1);
    }
    clocks.wall.advance(-kHourMs);
    for (int ms = 0; ms < 10; ++ms) {
      ASSERT_TRUE(gen->next().ok());
      clocks.pass(1);
    }
  }
  EXPECT_EQ(gen->counters().clock_jumps, 3u);
}

// A mark far ahead of the clock at start (an older version, or a clock that was wrong
// when the node last ran): a clear error naming the mark, the clock and the recovery,
// for every policy (logical does not borrow hours).
TEST(SnowflakeClockStepTest, AFarAheadMarkAtStartIsAnErrorNamingMarkClockAndRecovery) {
  for (auto policy : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                      RollbackPolicy::kRing}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    Clocks clocks;
    auto store = MemoryHighWaterStore::create(kT0 + 5 * kHourMs);
    SnowflakeOptions o = clocks.options(store.get(), policy);
    o.max_startup_wait_ms = 0;
    auto gen = create_snowflake_generator(o, clocks.internals());
    ASSERT_FALSE(gen.ok());
    EXPECT_EQ(gen.status().code(), StatusCode::kUnavailable);
    const std::string text = gen.status().message();
    EXPECT_NE(text.find(format_iso8601_utc(kT0 + 5 * kHourMs)), std::string::npos) << text;
    EXPECT_NE(text.find(format_iso8601_utc(kT0)), std::string::npos) << text;
    EXPECT_NE(text.find("another worker id"), std::string::npos) << text;
    EXPECT_NE(text.find("docs/operations.md"), std::string::npos) << text;
    // Nothing was written over the mark.
    EXPECT_EQ(store->load().value(), kT0 + 5 * kHourMs);
  }
}

}  // namespace
}  // namespace idforge
