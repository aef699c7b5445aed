// The high-water mark records the layout it was written under. A generator of another
// layout starts above every ID the old one could have issued up to the mark, or refuses
// naming both layouts; a mark without a layout (older versions) is read as before.
#include <gtest/gtest.h>

#include <string>

#include "core/snowflake_mark.h"
#include "idforge/snowflake.h"
#include "idforge/time_format.h"
#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::kT0;

using testing::make_generator;
using testing::manual_options;
using testing::take;

constexpr const char* kTwitterSpec = "time:41,datacenter:5,worker:5,sequence:12";

// The largest ID `layout` can make at or before `unix_ms` on any node.
uint64_t largest_id_up_to(const Layout& layout, int64_t unix_ms) {
  std::vector<uint64_t> values;
  for (int i = 0; i < static_cast<int>(layout.fields().size()); ++i) {
    values.push_back(i == layout.time_index() ? layout.tick_of(unix_ms).value()
                                              : layout.max_value(i));
  }
  return layout.compose(values).value();
}

// Runs a twitter generator for 100 ms on `store` and returns its last ID.
uint64_t run_twitter(ManualClock& clock, MemoryHighWaterStore& store) {
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  auto gen = make_generator(o);
  uint64_t last = 0;
  for (int ms = 0; ms < 100; ++ms) {
    last = take(*gen, 20).back();
    clock.advance(1);
  }
  return last;
}

TEST(SnowflakeLayoutChangeTest, TheMarkRecordsItsLayout) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  run_twitter(clock, *store);
  EXPECT_EQ(store->load_mark().value().layout, mark_layout_key(Layout::twitter()));
  EXPECT_EQ(mark_layout_key(Layout::twitter()),
            std::string(kTwitterSpec) + ";epoch=1288834974657;tick_ms=1");
}

// A later epoch makes the same time a smaller ID: the new layout must start further on.
TEST(SnowflakeLayoutChangeTest, ALaterEpochStartsAboveEveryOldIdWithinTheDrift) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  const uint64_t last_old = run_twitter(clock, *store);
  const HighWaterMark mark = store->load_mark().value();

  Layout later = Layout::parse(kTwitterSpec, Layout::twitter().epoch_ms() + 2000).value();
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.layout = later;
  o.high_water = store.get();
  o.max_drift_ms = 5000;  // enough to start at once, ahead of the clock
  o.max_startup_wait_ms = 0;
  auto gen = make_generator(o);
  ASSERT_NE(gen, nullptr);
  const uint64_t first = gen->next().value();
  EXPECT_GT(first, last_old);
  EXPECT_GT(first, largest_id_up_to(Layout::twitter(), mark.unix_ms));
  // The mark now says which layout it covers.
  EXPECT_EQ(store->load_mark().value().layout, mark_layout_key(later));
}

TEST(SnowflakeLayoutChangeTest, ALaterEpochWaitsWithinTheStartupWait) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  const uint64_t last_old = run_twitter(clock, *store);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kWait);
  o.layout = Layout::parse(kTwitterSpec, Layout::twitter().epoch_ms() + 1500).value();
  o.high_water = store.get();
  auto gen = make_generator(o);  // the manual clock advances through the wait
  ASSERT_NE(gen, nullptr);
  EXPECT_GT(gen->next().value(), last_old);
}

// More time bits per ID (a wider sequence): the same time is already a larger ID.
TEST(SnowflakeLayoutChangeTest, AWiderLayoutStartsAtOnce) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  const uint64_t last_old = run_twitter(clock, *store);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kReject);
  o.layout = Layout::parse("time:40,datacenter:5,worker:5,sequence:13").value();
  o.high_water = store.get();
  o.max_startup_wait_ms = 0;
  auto gen = make_generator(o);
  ASSERT_NE(gen, nullptr);
  EXPECT_GT(gen->next().value(), last_old);
}

TEST(SnowflakeLayoutChangeTest, ALayoutThatCannotCatchUpIsRefusedNamingBoth) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  run_twitter(clock, *store);
  for (auto policy : {RollbackPolicy::kLogical, RollbackPolicy::kWait}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    SnowflakeOptions o = manual_options(&clock, policy);
    const int64_t day = 86'400'000;
    o.layout = Layout::parse(kTwitterSpec, Layout::twitter().epoch_ms() + day).value();
    o.high_water = store.get();
    auto gen = SnowflakeGenerator::create(o);
    ASSERT_FALSE(gen.ok());
    EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
    const std::string text = gen.status().message();
    EXPECT_NE(text.find(format_iso8601_utc(Layout::twitter().epoch_ms())), std::string::npos)
        << text;
    EXPECT_NE(text.find(format_iso8601_utc(Layout::twitter().epoch_ms() + day)), std::string::npos)
        << text;
    EXPECT_NE(text.find("layout changed"), std::string::npos) << text;
  }
  // A layout whose time field cannot even hold the old IDs' values.
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.layout = Layout::parse("time:35,datacenter:5,worker:5,sequence:12", kT0 - 1000).value();
  o.high_water = store.get();
  auto gen = SnowflakeGenerator::create(o);
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(gen.status().message().find(kTwitterSpec), std::string::npos) << gen.status().message();
}

// Marks of older versions have no layout: read in the current layout's terms, as then.
TEST(SnowflakeLayoutChangeTest, AMarkWithoutALayoutIsReadInTheCurrentLayout) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create(kT0 + 500);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = store.get();
  auto gen = make_generator(o);
  ASSERT_NE(gen, nullptr);
  EXPECT_GT(testing::parts(gen->next().value()).unix_ms, kT0 + 500);
  EXPECT_EQ(store->load_mark().value().layout, mark_layout_key(Layout::twitter()));
}

TEST(SnowflakeLayoutChangeTest, AnUnreadableLayoutIsRefused) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create(kT0, "not a layout");
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = store.get();
  auto gen = SnowflakeGenerator::create(o);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gen.status().message().find("not a layout"), std::string::npos);
}

}  // namespace
}  // namespace idforge
