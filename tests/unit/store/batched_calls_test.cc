// Calls run together by one of their callers (store/batched_calls.h): every call is run
// exactly once and its caller gets its own result; calls made at the same time share
// batches; one caller alone runs alone.
#include "store/batched_calls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace idforge::store {
namespace {

struct Square {
  int in = 0;
  int out = -1;
  int runs = 0;
};

TEST(BatchedCallsConcurrency, EveryCallRunsOnceAndCallsAtOnceShareBatches) {
  BatchedCalls<Square> calls(16);
  std::atomic<int> batches{0};
  std::atomic<int> largest{0};
  constexpr int kThreads = 8;
  constexpr int kEach = 300;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Square call{t * kEach + i};
        calls.run(call, [&](std::span<Square* const> batch) {
          ++batches;
          int seen = largest.load();
          while (static_cast<int>(batch.size()) > seen &&
                 !largest.compare_exchange_weak(seen, static_cast<int>(batch.size()))) {
          }
          for (Square* s : batch) {
            s->out = s->in * s->in;
            ++s->runs;
          }
          std::this_thread::yield();  // a commit takes a while: let others queue
        });
        if (call.out != call.in * call.in || call.runs != 1) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LT(batches.load(), kThreads * kEach);
  EXPECT_GT(largest.load(), 1);
  EXPECT_LE(largest.load(), 16);
}

TEST(BatchedCallsConcurrency, OneCallerAloneRunsEachCallByItself) {
  BatchedCalls<Square> calls(16);
  for (int i = 0; i < 10; ++i) {
    Square call{i};
    size_t size = 0;
    calls.run(call, [&](std::span<Square* const> batch) {
      size = batch.size();
      batch[0]->out = i;
    });
    EXPECT_EQ(size, 1u);
    EXPECT_EQ(call.out, i);
  }
}

}  // namespace
}  // namespace idforge::store
