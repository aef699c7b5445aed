// Invariant 2: no reuse across restarts, even when the clock was set back while the
// process was down. The generator keeps a high-water mark ahead of itself and a new
// generator starts strictly above it.
#include <gtest/gtest.h>

#include <set>

#include "idforge/snowflake.h"
#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::make_generator;
using testing::manual_options;
using testing::parts;
using testing::take;

constexpr int64_t kT0 = 1'700'000'000'000;

class FailingStore final : public HighWaterStore {
 public:
  Result<int64_t> load() override { return int64_t{0}; }
  Status store(int64_t) override { return fail_ ? Status::IoError("disk full") : Status::Ok(); }
  bool fail_ = false;
};

TEST(SnowflakeRestartTest, MarkIsStoredAheadBeforeTheFirstId) {
  ManualClock clock(kT0);
  MemoryHighWaterStore store;
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  o.reserve_ms = 1000;
  auto gen = make_generator(o);
  EXPECT_EQ(store.stores(), 1);
  EXPECT_GE(store.load().value(), kT0 + 1000);
  EXPECT_EQ(gen->reserved_until_ms(), store.load().value());
}

TEST(SnowflakeRestartTest, MarkIsRenewedBeforeItRunsOut) {
  ManualClock clock(kT0);
  MemoryHighWaterStore store;
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  o.reserve_ms = 100;
  auto gen = make_generator(o);
  for (int ms = 0; ms < 1000; ++ms) {
    auto id = gen->next();
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    // Never an ID above what is durable.
    ASSERT_LE(parts(*id).unix_ms, store.load().value());
    clock.advance(1);
  }
  // About one store per half reserve.
  EXPECT_GE(store.stores(), 15);
  EXPECT_LE(store.stores(), 25);
}

// The case the seeds warn about: the clock is set back while the process is down.
TEST(SnowflakeRestartTest, RestartAfterClockSetBackRepeatsNothing) {
  for (auto policy : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                      RollbackPolicy::kRing}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    ManualClock clock(kT0);
    MemoryHighWaterStore store;
    std::set<uint64_t> seen;
    {
      SnowflakeOptions o = manual_options(&clock, policy);
      o.high_water = &store;
      auto gen = make_generator(o);
      for (int ms = 0; ms < 300; ++ms) {
        for (uint64_t id : take(*gen, 50)) ASSERT_TRUE(seen.insert(id).second);
        clock.advance(1);
      }
    }                     // crash: nothing but the store survives
    clock.advance(-200);  // set back while down; a generator without the mark repeats IDs
    SnowflakeOptions o = manual_options(&clock, policy);
    o.high_water = &store;
    auto gen = make_generator(o);
    ASSERT_NE(gen, nullptr);
    for (int ms = 0; ms < 300; ++ms) {
      for (uint64_t id : take(*gen, 50)) ASSERT_TRUE(seen.insert(id).second) << "repeated an ID";
      clock.advance(1);
    }
  }
}

TEST(SnowflakeRestartTest, WithoutTheMarkTheSameScenarioRepeats) {
  // The control experiment: proves the test above would catch a repeat.
  ManualClock clock(kT0);
  std::set<uint64_t> seen;
  {
    auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
    for (uint64_t id : take(*gen, 50)) seen.insert(id);
  }
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
  auto again = gen->next();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(seen.count(*again));
}

TEST(SnowflakeRestartTest, ClockFarBehindTheMarkRefusesToStart) {
  ManualClock clock(kT0, /*auto_advance=*/false);
  MemoryHighWaterStore store(kT0 + 60'000);  // an earlier run reserved a minute ahead
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kReject);
  o.high_water = &store;
  o.max_startup_wait_ms = 10;
  auto r = SnowflakeGenerator::create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("high-water mark"), std::string::npos);
  // logical may borrow up to max_drift_ms, not a minute.
  o.policy = RollbackPolicy::kLogical;
  EXPECT_EQ(SnowflakeGenerator::create(o).status().code(), StatusCode::kUnavailable);
}

TEST(SnowflakeRestartTest, LogicalStartsWithinDriftOfTheMarkAtOnce) {
  ManualClock clock(kT0, /*auto_advance=*/false);
  MemoryHighWaterStore store(kT0 + 400);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  auto gen = make_generator(o);
  auto id = gen->next();
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(parts(*id).unix_ms, kT0 + 401);
}

TEST(SnowflakeRestartTest, WaitPolicyWaitsAtStartForTheClockToPassTheMark) {
  ManualClock clock(kT0);  // auto-advance
  MemoryHighWaterStore store(kT0 + 400);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kWait);
  o.high_water = &store;
  auto gen = make_generator(o);
  EXPECT_GE(clock.now_ms(), kT0 + 401);
  auto id = gen->next();
  ASSERT_TRUE(id.ok());
  EXPECT_GT(parts(*id).unix_ms, kT0 + 400);
}

TEST(SnowflakeRestartTest, StoreFailureReturnsAnErrorNotAnUnreservedId) {
  ManualClock clock(kT0);
  FailingStore store;
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  o.reserve_ms = 10;
  auto gen = make_generator(o);
  ASSERT_TRUE(gen->next().ok());
  store.fail_ = true;
  clock.advance(50);  // past the reservation
  auto r = gen->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("disk full"), std::string::npos);
  store.fail_ = false;
  EXPECT_TRUE(gen->next().ok());
}

TEST(SnowflakeRestartTest, CorruptOrUnreadableMarkFailsCreate) {
  class Broken final : public HighWaterStore {
   public:
    Result<int64_t> load() override { return Status::IoError("mark file is garbage"); }
    Status store(int64_t) override { return Status::Ok(); }
  } broken;
  ManualClock clock(kT0);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &broken;
  auto r = SnowflakeGenerator::create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace idforge
