// Clock rollback under each policy (docs/reliability.md): rollbacks of 1 ms, 5 ms and
// 10 s, the ring window's edges, and overflow inside a revisited tick.
#include <gtest/gtest.h>

#include <set>

#include "idforge/snowflake.h"
#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::kT0;

using testing::make_generator;
using testing::manual_options;
using testing::parts;
using testing::take;

struct RollbackCase {
  RollbackPolicy policy;
  int64_t rollback_ms;
  bool issues;  // whether the generator may issue right after the rollback
};

class RollbackTest : public ::testing::TestWithParam<RollbackCase> {};

// After a rollback every policy either issues unique IDs or fails clearly; none repeats.
TEST_P(RollbackTest, NoDuplicateAndTheRightOutcome) {
  const RollbackCase c = GetParam();
  ManualClock clock(kT0, /*auto_advance=*/false);
  SnowflakeOptions o = manual_options(&clock, c.policy);
  auto gen = make_generator(o);
  std::set<uint64_t> seen;
  for (int ms = 0; ms < 20; ++ms) {
    clock.advance(1);
    for (uint64_t id : take(*gen, 100)) ASSERT_TRUE(seen.insert(id).second);
  }
  const uint64_t last_before = *seen.rbegin();
  clock.advance(-c.rollback_ms);
  auto r = gen->next();
  EXPECT_EQ(r.ok(), c.issues) << r.status().to_string();
  if (r.ok()) {
    EXPECT_TRUE(seen.insert(*r).second) << "duplicate after a rollback";
    if (c.policy != RollbackPolicy::kRing) {
      EXPECT_GT(*r, last_before);
    }
  } else if (c.policy == RollbackPolicy::kReject) {
    EXPECT_EQ(r.status().code(), StatusCode::kClockBackwards);
  }
  EXPECT_EQ(gen->counters().rollbacks, 1u);
  // Let the clock run on past the old time: every policy issues again, never a repeat.
  for (int ms = 0; ms < c.rollback_ms + 25; ms += 1) {
    clock.advance(1);
    auto id = gen->next();
    if (id.ok()) {
      ASSERT_TRUE(seen.insert(*id).second) << "duplicate at ms " << ms;
    }
  }
  auto last = gen->next();
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_TRUE(seen.insert(*last).second);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, RollbackTest,
    ::testing::Values(
        // logical continues the last tick's sequence whatever the size of the step back.
        RollbackCase{RollbackPolicy::kLogical, 1, true},
        RollbackCase{RollbackPolicy::kLogical, 5, true},
        RollbackCase{RollbackPolicy::kLogical, 10'000, true},
        // wait: up to max_wait_ms (5) is waited out; a manual clock without auto-advance
        // does not move, so even 1 ms cannot be waited out here and the call fails.
        RollbackCase{RollbackPolicy::kWait, 1, false},
        RollbackCase{RollbackPolicy::kWait, 10'000, false},
        RollbackCase{RollbackPolicy::kReject, 1, false},
        RollbackCase{RollbackPolicy::kReject, 5, false},
        RollbackCase{RollbackPolicy::kReject, 10'000, false},
        // ring revisits ticks inside its window (256 ticks) and refuses older ones.
        RollbackCase{RollbackPolicy::kRing, 1, true}, RollbackCase{RollbackPolicy::kRing, 5, true},
        RollbackCase{RollbackPolicy::kRing, 10'000, false}),
    [](const ::testing::TestParamInfo<RollbackCase>& p) {
      return std::string(policy_name(p.param.policy)) + "_" + std::to_string(p.param.rollback_ms) +
             "ms";
    });

TEST(WaitPolicyTest, WaitsOutRollbacksUpToMaxWait) {
  for (int64_t back : {1, 5}) {
    ManualClock clock(kT0);  // auto-advance: waiting moves the clock
    auto gen = make_generator(manual_options(&clock, RollbackPolicy::kWait));
    clock.advance(10);
    auto a = gen->next();
    ASSERT_TRUE(a.ok());
    clock.advance(-back);
    auto b = gen->next();
    ASSERT_TRUE(b.ok()) << back << ": " << b.status().to_string();
    EXPECT_GT(*b, *a);
    EXPECT_EQ(gen->counters().waited_ms, static_cast<uint64_t>(back));
    EXPECT_EQ(parts(*b).unix_ms, parts(*a).unix_ms) << "continues the tick it waited for";
  }
}

TEST(WaitPolicyTest, LongerRollbackFailsWithoutWaiting) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kWait));
  ASSERT_TRUE(gen->next().ok());
  clock.advance(-6);
  auto r = gen->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("max_wait_ms"), std::string::npos);
  EXPECT_EQ(gen->counters().waited_ms, 0u);
}

TEST(RejectPolicyTest, OverflowWaitsForTheNextTick) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kReject));
  auto ids = take(*gen, 4097);
  ASSERT_EQ(ids.size(), 4097u);
  EXPECT_TRUE(testing::strictly_increasing(ids));
  EXPECT_EQ(parts(ids.back()).unix_ms, kT0 + 1);
  EXPECT_EQ(clock.now_ms(), kT0 + 1);
}

// Ring: issue a few IDs in each of `ticks` ticks, then step back `back` ticks.
struct RingFixture {
  explicit RingFixture(int ring_ticks) : clock(kT0, /*auto_advance=*/false) {
    SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kRing);
    o.ring_ticks = ring_ticks;
    gen = make_generator(o);
  }
  void issue_over(int ticks, int per_tick) {
    for (int t = 0; t < ticks; ++t) {
      for (uint64_t id : take(*gen, static_cast<size_t>(per_tick))) {
        EXPECT_TRUE(seen.insert(id).second);
      }
      clock.advance(1);
    }
  }
  ManualClock clock;
  std::unique_ptr<SnowflakeGenerator> gen;
  std::set<uint64_t> seen;
};

TEST(RingPolicyTest, RevisitedTickContinuesFromItsRememberedSequence) {
  RingFixture f(8);
  f.issue_over(5, 3);  // ticks kT0..kT0+4, sequences 0..2; clock now kT0+5
  f.clock.set(kT0 + 2);
  auto r = f.gen->next();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(parts(*r).unix_ms, kT0 + 2);
  EXPECT_EQ(parts(*r).sequence, 3u);
  EXPECT_TRUE(f.seen.insert(*r).second);
  EXPECT_EQ(f.gen->counters().ring_revisits, 1u);
}

TEST(RingPolicyTest, WindowEdgeOldestRememberedTickIsUsableOneOlderIsNot) {
  constexpr int kRing = 8;
  RingFixture f(kRing);
  f.issue_over(20, 2);  // last tick issued: kT0+19
  // kT0+12 is the oldest tick that still has its own slot (19 - 12 = 7 < 8).
  f.clock.set(kT0 + 12);
  auto edge = f.gen->next();
  ASSERT_TRUE(edge.ok()) << edge.status().to_string();
  EXPECT_EQ(parts(*edge).unix_ms, kT0 + 12);
  EXPECT_EQ(parts(*edge).sequence, 2u);
  EXPECT_TRUE(f.seen.insert(*edge).second);
  // kT0+11 shares its slot with kT0+19: a ring that ignored the slot's tick would hand
  // out (kT0+11, 2) again, or restart kT0+19's sequence.
  f.clock.set(kT0 + 11);
  auto beyond = f.gen->next();
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), StatusCode::kClockBackwards);
  EXPECT_NE(beyond.status().message().find("ring"), std::string::npos);
}

TEST(RingPolicyTest, OverflowInsideARevisitedTickMovesToTheNextTick) {
  RingFixture f(16);
  f.issue_over(4, 4090);  // ticks kT0..kT0+3 each have 6 sequences left
  f.clock.set(kT0 + 1);
  std::vector<uint64_t> got = take(*f.gen, 6 + 6 + 3);
  ASSERT_EQ(got.size(), 15u);
  for (uint64_t id : got) ASSERT_TRUE(f.seen.insert(id).second) << "duplicate in revisited tick";
  EXPECT_EQ(parts(got[5]).unix_ms, kT0 + 1);
  EXPECT_EQ(parts(got[5]).sequence, 4095u);
  EXPECT_EQ(parts(got[6]).unix_ms, kT0 + 2);  // moved on instead of wrapping to 0
  EXPECT_EQ(parts(got[6]).sequence, 4090u);
  EXPECT_EQ(parts(got[12]).unix_ms, kT0 + 3);
}

TEST(RingPolicyTest, RevisitedTicksUsedUpReachTheFrontierAndWait) {
  RingFixture f(16);
  f.issue_over(3, 4096);  // kT0..kT0+2 full; clock kT0+3
  f.clock.set(kT0 + 1);
  // kT0+1 and kT0+2 are full, and kT0+2 is the frontier: wait for the clock, which a
  // manual clock without auto-advance never moves, so the call fails.
  auto r = f.gen->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  f.clock.set(kT0 + 3);
  auto ok = f.gen->next();
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(f.seen.insert(*ok).second);
}

TEST(RingPolicyTest, StaysIncreasingWithoutRollback) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kRing));
  std::vector<uint64_t> ids;
  for (int ms = 0; ms < 50; ++ms) {
    auto part = take(*gen, 300);
    ids.insert(ids.end(), part.begin(), part.end());
    clock.advance(1);
  }
  EXPECT_TRUE(testing::strictly_increasing(ids));
  EXPECT_EQ(gen->counters().ring_revisits, 0u);
}

}  // namespace
}  // namespace idforge
