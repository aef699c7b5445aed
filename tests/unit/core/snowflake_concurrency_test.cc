// docs/architecture.md invariant 1 (strictly increasing) across threads, and invariant 4
// (no duplicate from the clock) while another thread moves the clock back and forth. Suites are
// named *Concurrency* so `make test` also runs them under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "idforge/snowflake.h"
#include "snowflake_test_util.h"

namespace idforge {
namespace {

using testing::kT0;

using testing::make_generator;

// Sorts all IDs and reports the first repeated one, or 0.
uint64_t first_duplicate(std::vector<std::vector<uint64_t>>& per_thread) {
  std::vector<uint64_t> all;
  for (auto& v : per_thread) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto dup = std::adjacent_find(all.begin(), all.end());
  return dup == all.end() ? 0 : *dup;
}

// 8 threads x 1,000,000 IDs from one generator on the real clock: all distinct, and
// each thread's IDs increasing.
TEST(SnowflakeConcurrency, EightThreadsMillionEachDistinctAndIncreasing) {
  constexpr int kThreads = 8;
  constexpr size_t kPerThread = 1'000'000;
  auto gen = make_generator(SnowflakeOptions{});
  ASSERT_NE(gen, nullptr);
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& mine = ids[static_cast<size_t>(t)];
      mine.reserve(kPerThread);
      while (mine.size() < kPerThread) {
        auto id = gen->next();
        if (id.ok()) {
          mine.push_back(*id);
        } else {
          errors.fetch_add(1);  // waiting out the drift budget can fail; never repeat
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& v : ids) {
    ASSERT_EQ(v.size(), kPerThread);
    ASSERT_TRUE(testing::strictly_increasing(v));
  }
  EXPECT_EQ(first_duplicate(ids), 0u);
  EXPECT_EQ(errors.load(), 0);
}

TEST(SnowflakeConcurrency, BatchesFromFourThreadsAreDisjoint) {
  auto gen = make_generator(SnowflakeOptions{});
  std::vector<std::vector<uint64_t>> ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint64_t> batch(1000);
      for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(gen->next_batch(batch).ok());
        ASSERT_TRUE(testing::strictly_increasing(batch));
        auto& mine = ids[static_cast<size_t>(t)];
        if (!mine.empty()) {
          ASSERT_GT(batch.front(), mine.back());
        }
        mine.insert(mine.end(), batch.begin(), batch.end());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(first_duplicate(ids), 0u);
}

// One thread drags a manual clock back and forth (steps back of 1 ms to 10 s) while
// four threads issue IDs. Every policy may fail calls; none may repeat an ID, and all
// but ring stay increasing per thread.
TEST(SnowflakeConcurrency, ClockChaosNeverRepeatsUnderAnyPolicy) {
  for (auto policy : {RollbackPolicy::kLogical, RollbackPolicy::kWait, RollbackPolicy::kReject,
                      RollbackPolicy::kRing}) {
    SCOPED_TRACE(std::string(policy_name(policy)));
    ManualClock clock(kT0, /*auto_advance=*/false);
    SnowflakeOptions o;
    o.clock = &clock;
    o.policy = policy;
    o.max_wait_ms = 1;
    o.max_drift_ms = 50;
    o.ring_ticks = 64;
    auto gen = make_generator(o);
    std::atomic<bool> stop{false};
    std::thread mover([&] {
      const int64_t steps[] = {1, 1, 1, 2, 3, -1, 1, 5, -5, 1, 10, -3, 20, -10'000, 10'000, 7};
      for (int round = 0; round < 400; ++round) {
        for (int64_t s : steps) {
          clock.advance(s);
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
      stop.store(true);
    });
    std::vector<std::vector<uint64_t>> ids(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto& mine = ids[static_cast<size_t>(t)];
        while (!stop.load() && mine.size() < 400'000) {
          auto id = gen->next();
          if (id.ok()) mine.push_back(*id);
        }
      });
    }
    mover.join();
    for (auto& th : threads) th.join();
    size_t total = 0;
    for (const auto& v : ids) {
      total += v.size();
      if (policy != RollbackPolicy::kRing) {
        EXPECT_TRUE(testing::strictly_increasing(v));
      }
    }
    EXPECT_GT(total, 1000u) << "the generator should issue most of the time";
    EXPECT_EQ(first_duplicate(ids), 0u);
    EXPECT_GT(gen->counters().rollbacks, 0u);
  }
}

}  // namespace
}  // namespace idforge
