// SnowflakeGenerator: layout, node fields, the default (logical) policy, batches,
// fencing and counters, all under a manual clock.
#include "idforge/snowflake.h"

#include <gtest/gtest.h>

#include <set>

#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::kT0;

using testing::make_generator;
using testing::manual_options;
using testing::parts;
using testing::take;

TEST(SnowflakeTest, FirstIdCarriesClockNodeAndSequenceZero) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
  auto id = gen->next();
  ASSERT_TRUE(id.ok());
  auto p = parts(*id);
  EXPECT_EQ(p.unix_ms, kT0);
  EXPECT_EQ(p.datacenter, 3u);
  EXPECT_EQ(p.worker, 7u);
  EXPECT_EQ(p.sequence, 0u);
  // The formula of docs/snowflake.md.
  EXPECT_EQ(*id, (uint64_t(kT0 - 1288834974657) << 22) | (3u << 17) | (7u << 12));
}

TEST(SnowflakeTest, SequenceCountsWithinATickAndResetsOnTheNext) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
  auto ids = take(*gen, 3);
  EXPECT_EQ(parts(ids[2]).sequence, 2u);
  clock.advance(1);
  auto next = gen->next();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(parts(*next).unix_ms, kT0 + 1);
  EXPECT_EQ(parts(*next).sequence, 0u);
}

TEST(SnowflakeTest, RejectsUnknownOrOversizedNodeFields) {
  ManualClock clock(kT0);
  SnowflakeOptions o;
  o.clock = &clock;
  o.nodes = {{"worker", 32}};
  auto r = SnowflakeGenerator::create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("worker"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("31"), std::string::npos) << r.status().message();

  o.nodes = {{"shard", 1}};
  r = SnowflakeGenerator::create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shard"), std::string::npos);
  EXPECT_NE(r.status().message().find("datacenter, worker"), std::string::npos);

  o.nodes = {{"sequence", 1}};  // not a node field
  EXPECT_FALSE(SnowflakeGenerator::create(o).ok());
}

TEST(SnowflakeTest, RejectsBadOptions) {
  ManualClock clock(kT0);
  SnowflakeOptions o;
  o.clock = &clock;
  o.max_drift_ms = -1;
  EXPECT_EQ(SnowflakeGenerator::create(o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.clock = &clock;
  o.ring_ticks = 0;
  EXPECT_EQ(SnowflakeGenerator::create(o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  ManualClock before_epoch(1000);
  o.clock = &before_epoch;
  auto r = SnowflakeGenerator::create(o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("epoch"), std::string::npos);
}

TEST(SnowflakeTest, PolicyNamesRoundTrip) {
  for (auto p : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                 RollbackPolicy::kRing}) {
    EXPECT_EQ(parse_policy(policy_name(p)).value(), p);
  }
  EXPECT_FALSE(parse_policy("fast").ok());
  EXPECT_NE(parse_policy("fast").status().message().find("logical, wait, reject, ring"),
            std::string::npos);
}

TEST(SnowflakeTest, EveryPresetIssuesIdsThatDecodeToItsNode) {
  for (const auto& name : Layout::preset_names()) {
    SCOPED_TRACE(name);
    Layout layout = Layout::preset(name).value();
    ManualClock clock(kT0);
    SnowflakeOptions o;
    o.clock = &clock;
    o.layout = layout;
    for (const auto& f : layout.fields()) {
      if (f.role == FieldRole::kNode) o.nodes.emplace_back(f.name, (uint64_t{1} << f.bits) - 1);
    }
    auto gen = make_generator(o);
    ASSERT_NE(gen, nullptr);
    auto ids = take(*gen, 5000);
    ASSERT_EQ(ids.size(), 5000u);
    EXPECT_TRUE(testing::strictly_increasing(ids));
    for (uint64_t id : {ids.front(), ids.back()}) {
      DecodedId d = layout.decode(id).value();
      for (const auto& [field, value] : o.nodes) EXPECT_EQ(d.get(field), value) << field;
      // The time is the clock's, rounded down to the tick, or ahead of it when borrowed.
      EXPECT_GE(d.unix_ms, kT0 - layout.tick_ms());
      EXPECT_LE(d.unix_ms, kT0 + 1000);
    }
  }
}

TEST(SnowflakeTest, LogicalBorrowsTheNextTickOnOverflow) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
  auto ids = take(*gen, 4096 * 3 + 1);
  ASSERT_EQ(ids.size(), 4096u * 3 + 1);
  EXPECT_TRUE(testing::strictly_increasing(ids));
  EXPECT_EQ(parts(ids[4095]).unix_ms, kT0);
  EXPECT_EQ(parts(ids[4096]).unix_ms, kT0 + 1);  // borrowed: the clock is still at kT0
  EXPECT_EQ(parts(ids.back()).unix_ms, kT0 + 3);
  EXPECT_EQ(clock.now_ms(), kT0) << "borrowing must not wait";
  EXPECT_EQ(gen->counters().borrowed_ms, 3u);
  EXPECT_EQ(gen->drift_ms(), 3);
}

TEST(SnowflakeTest, LogicalStopsAtTheDriftLimitThenWaitsThenFails) {
  ManualClock clock(kT0, /*auto_advance=*/false);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.max_drift_ms = 2;
  o.max_wait_ms = 0;
  auto gen = make_generator(o);
  // Ticks kT0 .. kT0+2 may be used: 3 x 4096 IDs.
  auto ids = take(*gen, 4096 * 3);
  ASSERT_EQ(ids.size(), 4096u * 3);
  auto r = gen->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("max_drift_ms"), std::string::npos) << r.status().message();
  EXPECT_EQ(gen->counters().failures, 1u);
  // Once the clock moves, issuing resumes above everything issued so far.
  clock.advance(1);
  auto after = gen->next();
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_GT(*after, ids.back());
}

TEST(SnowflakeTest, LogicalWaitsForTheClockWhenItCanCatchUpInTime) {
  ManualClock clock(kT0);  // auto-advance: the wait moves the clock
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.max_drift_ms = 1;
  auto gen = make_generator(o);
  auto ids = take(*gen, 4096 * 5);
  ASSERT_EQ(ids.size(), 4096u * 5);
  EXPECT_TRUE(testing::strictly_increasing(ids));
  EXPECT_GT(gen->counters().waited_ms, 0u);
  EXPECT_LE(parts(ids.back()).unix_ms - clock.now_ms(), 1);
}

TEST(SnowflakeTest, ClassicModeWaitsForTheNextRealTick) {
  ManualClock clock(kT0);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.max_drift_ms = 0;
  auto gen = make_generator(o);
  auto ids = take(*gen, 4097);
  ASSERT_EQ(ids.size(), 4097u);
  EXPECT_EQ(parts(ids.back()).unix_ms, kT0 + 1);
  EXPECT_EQ(clock.now_ms(), kT0 + 1) << "classic mode must wait for the clock, not borrow";
  EXPECT_EQ(gen->counters().borrowed_ms, 0u);
  EXPECT_EQ(gen->counters().waited_ms, 1u);
}

TEST(SnowflakeTest, BatchIsIncreasingAndMatchesSingleCalls) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
  std::vector<uint64_t> batch(10000);
  ASSERT_TRUE(gen->next_batch(batch).ok());
  EXPECT_TRUE(testing::strictly_increasing(batch));
  EXPECT_EQ(parts(batch[0]).sequence, 0u);
  EXPECT_EQ(parts(batch[4096]).unix_ms, kT0 + 1);
  auto single = gen->next();
  ASSERT_TRUE(single.ok());
  EXPECT_GT(*single, batch.back());
  // Continues the same tick where the batch stopped.
  EXPECT_EQ(parts(*single).sequence, parts(batch.back()).sequence + 1);
}

TEST(SnowflakeTest, BatchOnSonyflakeStepsBySequencePosition) {
  // Sonyflake's sequence sits above the machine field: consecutive IDs differ by 2^16.
  ManualClock clock(kT0);
  SnowflakeOptions o;
  o.clock = &clock;
  o.layout = Layout::preset("sonyflake").value();
  o.nodes = {{"machine", 513}};
  auto gen = make_generator(o);
  std::vector<uint64_t> batch(600);
  ASSERT_TRUE(gen->next_batch(batch).ok());
  EXPECT_TRUE(testing::strictly_increasing(batch));
  std::set<uint64_t> distinct(batch.begin(), batch.end());
  EXPECT_EQ(distinct.size(), batch.size());
  for (uint64_t id : batch) EXPECT_EQ(o.layout.decode(id).value().get("machine"), 513u);
  EXPECT_EQ(batch[1] - batch[0], uint64_t{1} << 16);
}

TEST(SnowflakeTest, FencedGeneratorIssuesNothingUntilUnfenced) {
  ManualClock clock(kT0);
  auto gen = make_generator(manual_options(&clock, RollbackPolicy::kLogical));
  auto before = gen->next();
  ASSERT_TRUE(before.ok());
  gen->fence("lease for worker 7 lost");
  EXPECT_TRUE(gen->fenced());
  auto r = gen->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "lease for worker 7 lost");
  std::vector<uint64_t> batch(3);
  EXPECT_FALSE(gen->next_batch(batch).ok());
  gen->unfence();
  auto after = gen->next();
  ASSERT_TRUE(after.ok());
  EXPECT_GT(*after, *before);
}

TEST(SnowflakeTest, TimeFieldExhaustionIsAClearError) {
  // A 4-bit time field of 1 s ticks runs out 16 s after its epoch.
  Layout tiny = Layout::parse("time:4,sequence:2", /*epoch_ms=*/kT0, /*tick_ms=*/1000).value();
  ManualClock clock(kT0 + 15'000);
  SnowflakeOptions o;
  o.clock = &clock;
  o.layout = tiny;
  o.max_drift_ms = 0;
  auto gen = make_generator(o);
  auto ids = take(*gen, 4);  // tick 15, sequences 0..3
  ASSERT_EQ(ids.size(), 4u);
  auto r = gen->next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("ran out"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace idforge
