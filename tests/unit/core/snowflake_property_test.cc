// Model-based property test: random schedules of clock moves (forward, back by 1 ms to
// 10 s) and calls (single and batch) under every policy. Whatever happens, an ID is
// never repeated, node fields never change, IDs increase (except ring after a
// rollback), and logical never runs more than max_drift_ms ahead of the clock.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <vector>

#include "idforge/snowflake.h"

namespace idforge {
namespace {

struct Step {
  int64_t clock_move;  // ms; may be negative
  int calls;           // next() calls
  int batch;           // then one next_batch of this size (0 = none)
};

rc::Gen<Step> step_gen() {
  return rc::gen::build<Step>(
      rc::gen::set(&Step::clock_move,
                   rc::gen::weightedOneOf<int64_t>(
                       {{6, rc::gen::inRange<int64_t>(0, 3)},
                        {2, rc::gen::inRange<int64_t>(-6, 0)},
                        {1, rc::gen::element<int64_t>(-10'000, -1000, 2000, 10'000)}})),
      rc::gen::set(&Step::calls, rc::gen::inRange(0, 600)),
      rc::gen::set(&Step::batch, rc::gen::element(0, 0, 1, 500, 5000)));
}

void check_policy(RollbackPolicy policy) {
  constexpr bool auto_advance = true;
  const auto steps = *rc::gen::container<std::vector<Step>>(step_gen());
  const int64_t max_drift = *rc::gen::element<int64_t>(0, 1, 20, 1000);
  constexpr int64_t kStartMs = 1'700'000'000'000;
  ManualClock clock(kStartMs, auto_advance);
  SnowflakeOptions o;
  o.clock = &clock;
  o.policy = policy;
  o.max_drift_ms = max_drift;
  o.max_wait_ms = auto_advance ? 5 : 0;
  o.ring_ticks = 32;
  o.nodes = {{"datacenter", 9}, {"worker", 30}};
  auto gen = SnowflakeGenerator::create(o);
  RC_ASSERT(gen.ok());
  const Layout& layout = Layout::twitter();

  std::vector<uint64_t> seen;
  uint64_t last = 0;
  int64_t last_ms = 0;
  auto accept = [&](uint64_t id) {
    seen.push_back(id);
    DecodedId d = layout.decode(id).value();
    RC_ASSERT(d.get("datacenter") == 9u);
    RC_ASSERT(d.get("worker") == 30u);
    if (policy != RollbackPolicy::kRing) RC_ASSERT(id > last);
    // logical keeps the last tick when the clock is behind; a later tick is at most
    // max_drift_ms ahead of the clock.
    if (policy == RollbackPolicy::kLogical && d.unix_ms > last_ms) {
      RC_ASSERT(d.unix_ms - clock.now_ms() <= max_drift);
    }
    last = std::max(last, id);
    last_ms = std::max(last_ms, d.unix_ms);
  };
  for (const Step& s : steps) {
    clock.advance(s.clock_move);
    for (int i = 0; i < s.calls; ++i) {
      auto id = (*gen)->next();
      if (id.ok()) accept(*id);
    }
    if (s.batch > 0) {
      std::vector<uint64_t> batch(static_cast<size_t>(s.batch));
      if ((*gen)->next_batch(batch).ok()) {
        for (uint64_t id : batch) accept(id);
      }
    }
  }
  std::sort(seen.begin(), seen.end());
  RC_ASSERT(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
}

RC_GTEST_PROP(SnowflakeProperty, LogicalNeverRepeats, ()) {
  check_policy(RollbackPolicy::kLogical);
}
RC_GTEST_PROP(SnowflakeProperty, WaitNeverRepeats, ()) { check_policy(RollbackPolicy::kWait); }
RC_GTEST_PROP(SnowflakeProperty, RejectNeverRepeats, ()) { check_policy(RollbackPolicy::kReject); }
RC_GTEST_PROP(SnowflakeProperty, RingNeverRepeats, ()) { check_policy(RollbackPolicy::kRing); }

}  // namespace
}  // namespace idforge
