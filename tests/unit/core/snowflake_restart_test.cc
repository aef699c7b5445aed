// docs/architecture.md invariant 2: no reuse across restarts, even when the clock was set back
// while the process was down. The generator keeps a high-water mark ahead of itself and a new
// generator starts strictly above it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/snowflake_impl.h"
#include "idforge/snowflake.h"
#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::kT0;

using testing::make_generator;
using testing::manual_options;
using testing::parts;
using testing::take;

class FailingStore final : public HighWaterStore {
 public:
  Result<int64_t> load() override { return int64_t{0}; }
  Status store(int64_t) override { return fail_ ? Status::IoError("disk full") : Status::Ok(); }
  bool fail_ = false;
};

TEST(SnowflakeRestartTest, MarkIsStoredAheadBeforeTheFirstId) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = store.get();
  o.reserve_ms = 1000;
  auto gen = make_generator(o);
  EXPECT_EQ(store->stores(), 1);
  EXPECT_GE(store->load().value(), kT0 + 1000);
  EXPECT_EQ(gen->reserved_until_ms(), store->load().value());
}

TEST(SnowflakeRestartTest, MarkIsRenewedBeforeItRunsOut) {
  ManualClock clock(kT0);
  auto store = MemoryHighWaterStore::create();
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = store.get();
  o.reserve_ms = 100;
  auto gen = make_generator(o);
  for (int ms = 0; ms < 1000; ++ms) {
    auto id = gen->next();
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    // Never an ID above what is durable.
    ASSERT_LE(parts(*id).unix_ms, store->load().value());
    clock.advance(1);
  }
  // About one store per half reserve.
  EXPECT_GE(store->stores(), 15);
  EXPECT_LE(store->stores(), 25);
}

// The case the seeds warn about: the clock is set back while the process is down.
TEST(SnowflakeRestartTest, RestartAfterClockSetBackRepeatsNothing) {
  for (auto policy : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                      RollbackPolicy::kRing}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    ManualClock clock(kT0);
    auto store = MemoryHighWaterStore::create();
    std::set<uint64_t> seen;
    {
      SnowflakeOptions o = manual_options(&clock, policy);
      o.high_water = store.get();
      auto gen = make_generator(o);
      for (int ms = 0; ms < 300; ++ms) {
        for (uint64_t id : take(*gen, 50)) ASSERT_TRUE(seen.insert(id).second);
        clock.advance(1);
      }
    }                     // crash: nothing but the store survives
    clock.advance(-200);  // set back while down; a generator without the mark repeats IDs
    SnowflakeOptions o = manual_options(&clock, policy);
    o.high_water = store.get();
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
  auto store =
      MemoryHighWaterStore::create(kT0 + 60'000);  // an earlier run reserved a minute ahead
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kReject);
  o.high_water = store.get();
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
  auto store = MemoryHighWaterStore::create(kT0 + 400);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = store.get();
  auto gen = make_generator(o);
  auto id = gen->next();
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(parts(*id).unix_ms, kT0 + 401);
}

TEST(SnowflakeRestartTest, WaitPolicyWaitsAtStartForTheClockToPassTheMark) {
  ManualClock clock(kT0);  // auto-advance
  auto store = MemoryHighWaterStore::create(kT0 + 400);
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kWait);
  o.high_water = store.get();
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

// A store that hangs while closed (a coordinator that does not answer) and counts calls.
class GatedStore final : public HighWaterStore {
 public:
  Result<int64_t> load() override { return int64_t{0}; }
  Status store(int64_t) override {
    std::unique_lock lock(mu_);
    ++calls_;
    cv_.wait(lock, [this] { return open_; });
    return Status::Ok();
  }
  void set_open(bool open) {
    {
      std::lock_guard lock(mu_);
      open_ = open;
    }
    cv_.notify_all();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int calls_ = 0;
};

// The server's mode: requests never write the mark, so a hung coordinator costs a
// request at most max_wait_ms, and still no ID goes past what is stored.
TEST(SnowflakeRestartTest, WithoutStoreOnNextAHungStoreHoldsNoCallerAndIssuesNothingUnreserved) {
  using Steady = std::chrono::steady_clock;
  ManualClock clock(kT0);
  GatedStore store;
  std::atomic<int> asked{0};
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  o.reserve_ms = 100;
  o.max_wait_ms = 20;
  SnowflakeInternals internals;
  internals.store_on_next = false;
  internals.reservation_wanted = [&] { asked.fetch_add(1); };
  auto gen = make_generator(o, std::move(internals));
  ASSERT_NE(gen, nullptr);
  ASSERT_EQ(store.calls(), 1);  // the first mark, at creation
  store.set_open(false);        // the coordinator hangs from here on

  clock.advance(60);  // past the renew point (half the reserve), still covered
  Result<uint64_t> covered = gen->next();
  ASSERT_TRUE(covered.ok()) << covered.status().to_string();
  EXPECT_EQ(asked.load(), 1);
  EXPECT_EQ(store.calls(), 1);  // asked for a renewal, did not write one

  clock.advance(100);  // past the reservation
  const auto start = Steady::now();
  Result<uint64_t> past = gen->next();
  const auto took = Steady::now() - start;
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(past.status().message().find("high-water mark"), std::string::npos)
      << past.status().message();
  EXPECT_GE(took, std::chrono::milliseconds(20));  // it waited max_wait_ms for a renewal
  EXPECT_LT(took, std::chrono::seconds(2));        // and not for the hung store
  EXPECT_EQ(asked.load(), 1);                      // once until a store succeeds
  EXPECT_EQ(store.calls(), 1);

  // The background renewal hangs in the store; callers still get errors, not IDs.
  std::thread renewer([&] { EXPECT_TRUE(gen->renew_reservation().ok()); });
  while (store.calls() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(gen->next().ok());
  std::vector<uint64_t> batch(10);
  EXPECT_FALSE(gen->next_batch(batch).ok());

  store.set_open(true);  // the coordinator answers: the renewal lands
  renewer.join();
  Result<uint64_t> id = gen->next();
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  EXPECT_GT(*id, *covered);
  EXPECT_LE(parts(*id).unix_ms, gen->reserved_until_ms());
  EXPECT_EQ(asked.load(), 1);  // the new reservation has room: nothing asked
}

// The server's generator over `store`: a reserve of 100 ms, requests never writing the
// mark (the part's thread renews it).
std::unique_ptr<SnowflakeGenerator> server_generator(ManualClock& clock, HighWaterStore& store) {
  SnowflakeOptions o = manual_options(&clock, RollbackPolicy::kLogical);
  o.high_water = &store;
  o.reserve_ms = 100;
  SnowflakeInternals internals;
  internals.store_on_next = false;
  return make_generator(o, std::move(internals));
}

// A logical generator that runs ahead of a stalled clock uses its reservation up
// faster than the clock moves; the background renewal must notice.
TEST(SnowflakeRestartTest, RenewalCountsFromTheLastIdWhenItRunsAheadOfTheClock) {
  ManualClock clock(kT0);  // never moves in this test
  auto store = MemoryHighWaterStore::create();
  auto gen = server_generator(clock, *store);
  ASSERT_NE(gen, nullptr);
  ASSERT_EQ(store->stores(), 1);
  // 60 ms of sequences in one go: the IDs run 60 ms ahead of the clock.
  std::vector<uint64_t> ids(60 * 4096);
  ASSERT_TRUE(gen->next_batch(ids).ok());
  const int64_t last_ms = parts(ids.back()).unix_ms;
  ASSERT_GE(last_ms, kT0 + 55);
  EXPECT_EQ(store->stores(), 1);
  // Measured from the clock, 100 ms are left; from the last ID, under half.
  ASSERT_TRUE(gen->renew_reservation().ok());
  EXPECT_EQ(store->stores(), 2);
  EXPECT_GE(gen->reserved_until_ms(), last_ms + 100);
  ASSERT_TRUE(gen->renew_reservation().ok());
  EXPECT_EQ(store->stores(), 2);  // and not again while half is left
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

// A fenced generator answers at once even while a mark write hangs on the coordinator:
// the request path never takes the lock a write holds (it used to wait for the write,
// up to the keeper's fence deadline), and the keeper can fence and unfence meanwhile.
TEST(SnowflakeRestartTest, AFencedRequestNeverWaitsOnAHungMarkWrite) {
  ManualClock clock(kT0);
  GatedStore store;
  auto gen = server_generator(clock, store);
  ASSERT_NE(gen, nullptr);
  store.set_open(false);  // the coordinator hangs from here on
  clock.advance(80);      // less than half the reserve is left: a renewal writes
  std::thread renewing([&] { gen->renew_reservation().ignore_error(); });
  while (store.calls() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // The write is under way and hangs. Fencing and a fenced request must not wait for it.
  auto fenced = std::async(std::launch::async, [&] {
    gen->fence("lease not renewed");
    return gen->next();
  });
  const bool answered = fenced.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  store.set_open(true);  // let the write finish either way, so the test ends
  renewing.join();
  ASSERT_TRUE(answered) << "a fenced request waited on the hung mark write";
  Result<uint64_t> r = fenced.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "lease not renewed");
}

}  // namespace
}  // namespace idforge
