// The threads segment fetches run on (core/fetch_workers.h): reused while fetches keep
// coming, never a limit on fetches under way (one that hangs holds up no other), and
// gone once idle.
#include "core/fetch_workers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace idforge {
namespace {

using namespace std::chrono_literals;

// Fetches one after another, as a burst of first requests for many tags makes them, run
// on the same few threads rather than one new thread each.
TEST(FetchWorkersConcurrency, FetchesOneAfterAnotherReuseAThread) {
  const int before = fetch_workers_alive();
  for (int i = 0; i < 200; ++i) {
    // Shared: the worker may still be inside set_value when the wait returns.
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> over = done->get_future();
    ASSERT_TRUE(run_on_fetch_worker([done] { done->set_value(); }).ok());
    over.wait();
  }
  // A worker that has signalled its caller may not be idle again before the next fetch
  // (a slow or descheduled thread), so a few more may start; one a fetch would be 200.
  EXPECT_LE(fetch_workers_alive(), before + 50);
}

// A fetch that hangs (a store that does not answer) takes its worker; the next fetch
// gets another and finishes.
TEST(FetchWorkersConcurrency, AFetchThatHangsHoldsUpNoOther) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(run_on_fetch_worker([released] { released.wait(); }).ok());
  }
  auto other = std::make_shared<std::promise<void>>();
  std::future<void> other_done = other->get_future();
  ASSERT_TRUE(run_on_fetch_worker([other] { other->set_value(); }).ok());
  EXPECT_EQ(other_done.wait_for(10s), std::future_status::ready);
  EXPECT_GE(fetch_workers_alive(), 5);
  release.set_value();
}

TEST(FetchWorkersTest, IdleWorkersEnd) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> over = done->get_future();
  ASSERT_TRUE(run_on_fetch_worker([done] { done->set_value(); }).ok());
  over.wait();
  const auto deadline = std::chrono::steady_clock::now() + kFetchWorkerIdle + 5s;
  while (fetch_workers_alive() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(fetch_workers_alive(), 0);
}

}  // namespace
}  // namespace idforge
