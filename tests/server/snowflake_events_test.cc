// SnowflakeEvents (server/service/snowflake_events.h) on a generator whose counters and gauges the
// test sets: each change of state gives one line, repeats are counted, and nothing is
// written while nothing changes.
#include "server/service/snowflake_events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "log/log.h"

namespace idforge::server {
namespace {

// Only what SnowflakeEvents reads; issuing is not needed.
class FakeGenerator final : public SnowflakeGenerator {
 public:
  Result<uint64_t> next() override { return Status::Unavailable("fake"); }
  Status next_batch(std::span<uint64_t>) override { return Status::Unavailable("fake"); }
  void fence(std::string) override {}
  void unfence() override {}
  bool fenced() const override { return false; }
  Status renew_reservation() override { return Status::Ok(); }
  const Layout& layout() const override { return layout_; }
  RollbackPolicy policy() const override { return RollbackPolicy::kLogical; }
  uint64_t node_bits() const override { return 0; }
  int64_t last_unix_ms() const override { return last_unix_ms_; }
  int64_t drift_ms() const override { return drift_ms_; }
  int64_t reserved_until_ms() const override { return reserved_until_ms_; }
  int64_t clock_ahead_ms() const override { return clock_ahead_ms_; }
  SnowflakeCounters counters() const override { return counters_; }

  Layout layout_ = Layout::twitter();
  int64_t last_unix_ms_ = 0;
  int64_t drift_ms_ = 0;
  int64_t reserved_until_ms_ = 0;  // 0: no store, no reservation to run out
  int64_t clock_ahead_ms_ = 0;
  SnowflakeCounters counters_;
};

int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SnowflakeEventsTest : public ::testing::Test {
 protected:
  SnowflakeEventsTest() {
    log::set_writer_for_testing(
        [this](log::Level, std::string_view line) { lines_.emplace_back(line); });
  }
  ~SnowflakeEventsTest() override { log::set_writer_for_testing(nullptr); }

  // The events written since the last call, as "level event".
  std::vector<std::string> taken() {
    std::vector<std::string> out;
    for (const std::string& line : lines_) {
      const size_t level = line.find(' ') + 1;
      const size_t event_end = line.find(' ', line.find(' ', level) + 1);
      out.push_back(
          line.substr(level, event_end == std::string::npos ? event_end : event_end - level));
    }
    all_.insert(all_.end(), lines_.begin(), lines_.end());
    lines_.clear();
    return out;
  }
  bool written(std::string_view text) const {
    for (const std::string& line : all_) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  using Lines = std::vector<std::string>;
  ServiceConfig config_;
  FakeGenerator gen_;
  Lines lines_;
  Lines all_;
};

TEST_F(SnowflakeEventsTest, AClockSetBackIsOneLineAndItsCatchUpAnotherWithWhatThePolicyDid) {
  SnowflakeEvents events(config_);
  events.started(gen_);
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});

  gen_.counters_.rollbacks = 1;
  gen_.drift_ms_ = 3000;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{"warn clock.set_back"});
  EXPECT_TRUE(written("policy=logical behind_ms=3000 max_drift_ms=1000 max_wait_ms=5 action="));
  // More steps and refusals while behind: no more lines.
  gen_.counters_.rollbacks = 3;
  gen_.counters_.failures = 7;
  gen_.counters_.borrowed_ms = 40;
  events.observe(gen_, true);
  gen_.drift_ms_ = 10;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});

  gen_.drift_ms_ = 0;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{"info clock.caught_up"});
  EXPECT_TRUE(written("policy=logical steps=3 took_ms="));
  EXPECT_TRUE(written("failed_requests=7 waited_ms=0 borrowed_ms=40 ring_revisits=0"));
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});
}

TEST_F(SnowflakeEventsTest, AJumpIsOneLineAndItsEndAnother) {
  SnowflakeEvents events(config_);
  events.started(gen_);
  gen_.counters_.clock_jumps = 1;
  gen_.clock_ahead_ms_ = 60'000;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{"warn clock.jumped"});
  EXPECT_TRUE(written("ahead_ms=60000 max_clock_step_ms=10000 action="));
  gen_.counters_.clock_jumps = 2;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});
  gen_.clock_ahead_ms_ = 0;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{"info clock.jump_ended"});
  EXPECT_TRUE(written("jumps=2"));
}

TEST_F(SnowflakeEventsTest, FailingAndSlowMarkWritesAreCountedAndTheirEndLoggedOnce) {
  SnowflakeEvents events(config_);
  events.started(gen_);
  for (int i = 0; i < 5; ++i) {
    events.renewal(gen_, Status::Unavailable("worker lease for slot 0 not renewed"), 900, 0);
  }
  EXPECT_EQ(taken(), Lines{"warn reservation.failed"});
  events.renewal(gen_, Status::Ok(), 3, 0);  // nothing was written (the counter did not move)
  EXPECT_EQ(taken(), (Lines{"warn reservation.failed", "info reservation.renewed"}));
  EXPECT_TRUE(written("repeats=4 window_s=1"));
  EXPECT_TRUE(written("failures=5 down_ms="));

  // A write that took slow_store_ms (500) or more; a renewal with nothing to write is
  // not timed.
  gen_.counters_.high_water_stores = 1;
  events.renewal(gen_, Status::Ok(), 700, 0);
  gen_.counters_.high_water_stores = 2;
  events.renewal(gen_, Status::Ok(), 650, 1);
  events.renewal(gen_, Status::Ok(), 1, 2);
  EXPECT_EQ(taken(), Lines{"warn reservation.slow"});
  EXPECT_TRUE(written("took_ms=700 slow_store_ms=500"));
  gen_.counters_.high_water_stores = 3;
  events.renewal(gen_, Status::Ok(), 20, 2);
  EXPECT_EQ(taken(), (Lines{"warn reservation.slow", "info reservation.fast"}));
}

TEST_F(SnowflakeEventsTest, AReservationThatRanOutIsAnErrorOnceUntilItIsAheadAgain) {
  SnowflakeEvents events(config_);
  events.started(gen_);
  const int64_t now = unix_now_ms();
  gen_.reserved_until_ms_ = now + 5'000;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});
  gen_.reserved_until_ms_ = now - 2'000;
  events.observe(gen_, true);
  events.observe(gen_, true);
  // Not held (fenced, lost): the reservation is not kept then, so not judged.
  events.observe(gen_, false);
  // During a jump the wall clock runs ahead of the IDs' time: not judged either.
  gen_.clock_ahead_ms_ = 30'000;
  gen_.counters_.clock_jumps = 1;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), (Lines{"error reservation.ran_out", "warn clock.jumped"}));
  gen_.clock_ahead_ms_ = 0;
  gen_.reserved_until_ms_ = unix_now_ms() + 5'000;
  events.observe(gen_, true);
  EXPECT_EQ(taken(), (Lines{"info clock.jump_ended", "error reservation.ran_out",
                            "info reservation.restored"}));
  EXPECT_TRUE(written("repeats=1 window_s=1"));
}

TEST_F(SnowflakeEventsTest, ALayoutNearItsEndIsLoggedAtStartAndWhenItRunsOut) {
  // 2^35 ms is about 398 days: an epoch 100 days ago leaves about 298.
  const int64_t day = 24 * 3600 * 1000;
  const std::string spec = "time:35,datacenter:5,worker:5,sequence:18";
  Result<Layout> layout = Layout::parse(spec, unix_now_ms() - 100 * day);
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  config_.layout = *layout;
  config_.layout_label = "short";
  SnowflakeEvents events(config_);
  events.started(gen_);
  EXPECT_EQ(taken(), Lines{"warn layout.exhausting"});
  EXPECT_TRUE(written("layout=short time_left_days=297 ")) << all_.back();
  events.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});

  // Plenty left: nothing.
  config_.layout = Layout::twitter();
  SnowflakeEvents twitter(config_);
  twitter.started(gen_);
  twitter.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{});

  // Ran out already.
  Result<Layout> old = Layout::parse(spec, unix_now_ms() - 500 * day);
  ASSERT_TRUE(old.ok()) << old.status().to_string();
  config_.layout = *old;
  SnowflakeEvents over(config_);
  over.started(gen_);
  over.observe(gen_, true);
  EXPECT_EQ(taken(), Lines{"error layout.exhausted"});
}

TEST_F(SnowflakeEventsTest, AReplacedLeaseIsOneLineAndFailedTriesAreCounted) {
  SnowflakeEvents events(config_);
  events.replaced(0, 3, 2);
  EXPECT_EQ(taken(), Lines{"info lease.replaced"});
  EXPECT_TRUE(written("old_slot=0 slot=3 leases_taken=2"));
  events.replace_failed(3, Status::Unavailable("all 1024 worker slots are taken"));
  events.replace_failed(3, Status::Unavailable("all 1024 worker slots are taken"));
  events.replaced(3, 4, 3);
  EXPECT_EQ(taken(), (Lines{"warn lease.acquire_failed", "warn lease.acquire_failed",
                            "info lease.replaced"}));
  EXPECT_TRUE(written("old_slot=3 slot=4 leases_taken=3 failures=2 down_ms="));
}

}  // namespace
}  // namespace idforge::server
