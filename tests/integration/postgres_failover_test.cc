// "Several databases, no single point of failure": one tag striped over two PostgreSQL
// servers; one of them is stopped while threads keep pulling IDs, then started again.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idforge/segment_buffer.h"
#include "idforge/segment_store.h"
#include "idforge/striped_source.h"
#include "integration/services.h"
#include "store/store_factory.h"

namespace idforge::integration {
namespace postgres_failover_test {

using Clock = std::chrono::steady_clock;

// What one pulling thread saw.
struct Pulled {
  std::vector<uint64_t> ids;
  uint64_t errors = 0;
  int64_t longest_gap_ms = 0;  // longest time between two IDs
  std::string last_error;
};

TEST(PostgresFailoverTest, StoppingOneOfTwoServersMidRunKeepsIdsFlowingAndDistinct) {
  Result<Server> pg1 = Services::get().start_private(ServerKind::kPostgres, "pg1");
  ASSERT_TRUE(pg1.ok()) << pg1.status().to_string();
  Result<Server> pg2 = Services::get().shared(ServerKind::kPostgres);
  ASSERT_TRUE(pg2.ok()) << pg2.status().to_string();
  auto s1 = store::open_store(pg1->url);
  auto s2 = store::open_store(pg2->url);
  ASSERT_TRUE(s1.ok()) << s1.status().to_string();
  ASSERT_TRUE(s2.ok()) << s2.status().to_string();
  const std::string tag = unique_tag("striped");
  TagSpec spec;
  spec.name = tag;
  spec.step = 500;
  ASSERT_TRUE((*s1)->create_tag(spec).ok());
  ASSERT_TRUE((*s2)->create_tag(spec).ok());

  // Store 0 (pg1) owns the even IDs, store 1 (pg2) the odd ones.
  StripedSource striped({s1->get(), s2->get()});
  SegmentBufferOptions options;
  options.tag = tag;
  options.min_step = 500;
  options.max_step = 4000;  // small segments: many fetches while pg1 is down
  options.wait_ms = 2000;
  auto buffer = SegmentBuffer::create(&striped, options);
  ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();

  // Paced pullers (about 100,000 IDs/s each) so the run is long in fetches, not in memory.
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> issued{0};
  std::vector<Pulled> pulled(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Pulled& p = pulled[t];
      p.ids.reserve(1'000'000);
      auto last_ok = Clock::now();
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 100; ++i) {
          Result<uint64_t> id = (*buffer)->next();
          const auto now = Clock::now();
          if (!id.ok()) {
            ++p.errors;
            p.last_error = id.status().to_string();
            continue;
          }
          p.longest_gap_ms = std::max<int64_t>(
              p.longest_gap_ms,
              std::chrono::duration_cast<std::chrono::milliseconds>(now - last_ok).count());
          last_ok = now;
          p.ids.push_back(*id);
        }
        issued.fetch_add(100, std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  auto max_id_of = [&](SegmentStore& s) {
    Result<TagInfo> info = s.get_tag(tag);
    EXPECT_TRUE(info.ok()) << info.status().to_string();
    return info.ok() ? info->max_id : 0;
  };

  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  const uint64_t pg1_used_before = max_id_of(**s1);
  EXPECT_GT(pg1_used_before, 0u) << "both servers are used while both are up";

  ASSERT_TRUE(Services::get().stop(*pg1).ok());
  const uint64_t issued_at_stop = issued.load();
  const uint64_t pg2_at_stop = max_id_of(**s2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  const uint64_t issued_while_down = issued.load() - issued_at_stop;
  const uint64_t pg2_while_down = max_id_of(**s2) - pg2_at_stop;

  ASSERT_TRUE(Services::get().restart(*pg1).ok());
  const uint64_t pg1_at_restart = max_id_of(**s1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  stop.store(true);
  for (std::thread& th : threads) th.join();

  // The buffer kept issuing from pg2 while pg1 was down.
  EXPECT_GT(issued_while_down, 100'000u);
  EXPECT_GT(pg2_while_down, 10'000u);
  // And went back to pg1 once it was up.
  EXPECT_GT(max_id_of(**s1), pg1_at_restart);

  // No caller saw more than brief trouble.
  std::vector<uint64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    // The failover happens inside one allocate() call, so in practice there are none.
    EXPECT_LE(pulled[t].errors, 10u) << "thread " << t << ": " << pulled[t].last_error;
    EXPECT_LT(pulled[t].longest_gap_ms, 1500) << "thread " << t;
    std::printf("[ failover ] thread %d: %zu IDs, %llu errors, longest gap %lld ms\n", t,
                pulled[t].ids.size(), static_cast<unsigned long long>(pulled[t].errors),
                static_cast<long long>(pulled[t].longest_gap_ms));
    all.insert(all.end(), pulled[t].ids.begin(), pulled[t].ids.end());
  }

  // All distinct, and each ID is of the store its residue names, inside that store's
  // committed numbers.
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a duplicate ID";
  const uint64_t max1 = max_id_of(**s1);
  const uint64_t max2 = max_id_of(**s2);
  uint64_t evens = 0;
  uint64_t odds = 0;
  for (const uint64_t id : all) {
    if (id % 2 == 0) {
      ++evens;
      ASSERT_LE(id / 2, max1) << id;
    } else {
      ++odds;
      ASSERT_LE(id / 2, max2) << id;
    }
  }
  EXPECT_GT(evens, 0u);
  EXPECT_GT(odds, 0u);
  std::printf(
      "[ failover ] %zu IDs: %llu even (pg1), %llu odd (pg2); %llu issued while pg1 was down\n",
      all.size(), static_cast<unsigned long long>(evens), static_cast<unsigned long long>(odds),
      static_cast<unsigned long long>(issued_while_down));
  EXPECT_TRUE(Services::get().stop(*pg1).ok());
}

}  // namespace postgres_failover_test
}  // namespace idforge::integration
