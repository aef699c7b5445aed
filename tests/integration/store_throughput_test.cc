// Sustained allocations per second against each real store, with one and four threads.
// Prints figures for docs/stores.md and asserts nothing about speed (a loaded CI machine
// must not fail it); it only checks that every allocation succeeded.
// IDFORGE_THROUGHPUT_MS sets how long each measurement runs (default 1000).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idforge/segment_store.h"
#include "integration/store_fixture.h"
#include "store/store_factory.h"

namespace idforge::integration {
namespace store_throughput_test {

int64_t measure_ms() {
  const char* env = std::getenv("IDFORGE_THROUGHPUT_MS");
  const int64_t ms = env ? std::atoll(env) : 1000;
  return ms > 0 ? ms : 1000;
}

class StoreThroughputTest : public ::testing::TestWithParam<StoreKind> {};

// Allocations per second with `threads` threads, thread t on tags[t % tags.size()].
double measure(SegmentStore& store, const std::vector<std::string>& tags, int threads) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> failed{0};
  std::vector<std::thread> workers;
  const auto started = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::string& tag = tags[static_cast<size_t>(t) % tags.size()];
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (store.allocate(tag, 0).ok()) {
          ++n;
        } else {
          failed.fetch_add(1, std::memory_order_relaxed);
        }
      }
      done.fetch_add(n, std::memory_order_relaxed);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(measure_ms()));
  stop.store(true);
  for (std::thread& w : workers) w.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(failed.load(), 0u);
  return static_cast<double>(done.load()) / secs;
}

TEST_P(StoreThroughputTest, AllocationsPerSecond) {
  Result<std::string> url = store_url(GetParam());
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  auto s = store::open_store(*url);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  SegmentStore& store = **s;
  std::vector<std::string> tags;
  for (int i = 0; i < 4; ++i) {
    TagSpec spec;
    spec.name = unique_tag("speed");
    ASSERT_TRUE(store.create_tag(spec).ok());
    tags.push_back(spec.name);
  }
  const std::string name = store_kind_name(GetParam());
  const double one = measure(store, {tags[0]}, 1);
  const double four_one_tag = measure(store, {tags[0]}, 4);
  const double four_tags = measure(store, tags, 4);
  std::printf(
      "[ throughput ] %-8s allocations/s: 1 thread %7.0f | 4 threads, 1 tag %7.0f | "
      "4 threads, 4 tags %7.0f\n",
      name.c_str(), one, four_one_tag, four_tags);
  // Every allocation of step 1000 moved max_id by exactly 1000.
  for (const std::string& tag : tags) {
    Result<TagInfo> info = store.get_tag(tag);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->max_id % 1000, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreThroughputTest,
                         ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres,
                                           StoreKind::kRedis, StoreKind::kMysql),
                         StoreKindName());

}  // namespace store_throughput_test
}  // namespace idforge::integration
