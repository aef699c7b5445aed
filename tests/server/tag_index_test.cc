// TagIndex (server/service/tag_index.h): the lock-free tag lookup of the segment part. Names
// found after growth, cleared and set again; readers on other threads while one writer
// adds thousands of names see each name either absent or with its value, never a torn
// one (named *Concurrency* for the TSan run); the memory it holds grows with the names,
// not with their square.
#include "server/service/tag_index.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace idforge::server {
namespace {

TEST(TagIndexTest, FindsEveryNameAcrossGrowthAndClearsAndSetsAgain) {
  TagIndex<int> index;
  std::vector<int> values(5000);
  for (int i = 0; i < 5000; ++i) {
    values[static_cast<size_t>(i)] = i;
    index.set("t" + std::to_string(i), &values[static_cast<size_t>(i)]);
  }
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(index.find("t" + std::to_string(i)), &values[static_cast<size_t>(i)]) << i;
  }
  EXPECT_EQ(index.find("t5000"), nullptr);
  EXPECT_EQ(index.find(""), nullptr);
  index.set("t7", nullptr);
  EXPECT_EQ(index.find("t7"), nullptr);
  int other = -1;
  index.set("t7", &other);
  EXPECT_EQ(index.find("t7"), &other);
  index.set("never", nullptr);  // clearing a name it never had adds nothing
  size_t seen = 0;
  index.for_each([&](const std::string& name, int* value) {
    ++seen;
    EXPECT_EQ(index.find(name), value);
  });
  EXPECT_EQ(seen, 5000u);
  EXPECT_EQ(index.names(), 5000u);
}

TEST(TagIndexTest, HoldsNodesInProportionToTheNames) {
  TagIndex<int> index;
  int v = 0;
  for (int i = 0; i < 50'000; ++i) index.set("t" + std::to_string(i), &v);
  // The current table a node per name, the older ones at most twice that together: at
  // most three nodes a name. A map copied on every insert (what it replaced) held 1.25
  // billion here.
  EXPECT_LE(index.nodes(), 3 * index.names());
}

TEST(TagIndexConcurrency, ReadersSeeNamesAppearWhileOneWriterGrowsIt) {
  TagIndex<int> index;
  constexpr int kNames = 20'000;
  std::vector<int> values(kNames);
  std::atomic<int> published{0};
  std::atomic<bool> wrong{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      while (published.load(std::memory_order_acquire) < kNames) {
        const int upto = published.load(std::memory_order_acquire);
        for (int i = r; i < upto; i += 97) {
          if (index.find("t" + std::to_string(i)) != &values[static_cast<size_t>(i)]) wrong = true;
        }
      }
    });
  }
  for (int i = 0; i < kNames; ++i) {
    values[static_cast<size_t>(i)] = i;
    index.set("t" + std::to_string(i), &values[static_cast<size_t>(i)]);
    published.store(i + 1, std::memory_order_release);
  }
  for (std::thread& t : readers) t.join();
  EXPECT_FALSE(wrong.load());
}

}  // namespace
}  // namespace idforge::server
