// LeaseKeeper::last_round(), which the systemd watchdog (src/server/app/systemd_notify.h)
// reads to restart a server whose keeper thread is stuck: it must stay fresh while the
// keeper is healthy, idle for a long TTL, or failing against a coordinator that is
// down, and go stale only when the renew thread itself does not come back.
//
// Without the periodic round (the waits in renew_loop not capped at kRoundEvery),
// IdleKeeperWithALongTtlStillComesRound fails: the keeper then sleeps ttl/3 = 20 s and
// last_round() ages past 2 s. Without the stamp at the top of each round, every test
// but the stuck one fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coord/lease_keeper.h"
#include "core/worker_registry.h"

namespace idforge::coord {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A registry whose renew answers at once (ok or failing), or blocks until released:
// a renew call that never returns is what a stuck keeper thread looks like.
class ScriptedRegistry final : public WorkerRegistry {
 public:
  enum class Renew { kOk, kUnavailable, kHang };
  explicit ScriptedRegistry(Renew mode) : mode_(mode) {}
  ~ScriptedRegistry() override { unblock(); }

  void unblock() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  int renews() const { return renews_.load(); }

  Result<Lease> acquire(const std::string&) override { return Lease{}; }
  Status renew(const Lease&, int64_t) override {
    renews_.fetch_add(1);
    if (mode_ == Renew::kUnavailable) return Status::Unavailable("coordinator down");
    if (mode_ == Renew::kHang) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return released_; });
    }
    return Status::Ok();
  }
  Status release(const Lease&) override { return Status::Ok(); }
  Result<std::vector<SlotStatus>> status() override { return std::vector<SlotStatus>{}; }
  Status force_release(uint64_t) override { return Status::Ok(); }
  std::string describe() const override { return "scripted"; }

 private:
  const Renew mode_;
  std::atomic<int> renews_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

Lease lease_with_ttl(int64_t ttl_ms) {
  Lease lease;
  lease.ttl_ms = ttl_ms;
  return lease;
}

// The oldest last_round() seen over `duration`, sampled every 20 ms.
milliseconds oldest_round_over(const LeaseKeeper& keeper, milliseconds duration) {
  milliseconds oldest{0};
  const Steady::time_point end = Steady::now() + duration;
  while (Steady::now() < end) {
    const auto age = std::chrono::duration_cast<milliseconds>(Steady::now() - keeper.last_round());
    oldest = std::max(oldest, age);
    std::this_thread::sleep_for(milliseconds(20));
  }
  return oldest;
}

// Generous against a loaded test machine, and still well below what a stuck thread
// shows in StuckRenewThreadStopsComingRound.
const milliseconds kFresh = LeaseKeeper::kRoundEvery + milliseconds(700);

TEST(LeaseKeeperRoundTest, IdleKeeperWithALongTtlStillComesRound) {
  ScriptedRegistry registry(ScriptedRegistry::Renew::kOk);
  LeaseKeeper keeper(registry, lease_with_ttl(60'000));  // renews every 20 s
  const milliseconds oldest = oldest_round_over(keeper, milliseconds(2'500));
  EXPECT_LT(oldest, kFresh) << "an idle keeper's last round aged " << oldest.count() << " ms";
  EXPECT_EQ(registry.renews(), 0);  // the rounds are no extra renews
  EXPECT_TRUE(keeper.stop().ok());
}

TEST(LeaseKeeperRoundTest, KeeperFailingAgainstADownCoordinatorStillComesRound) {
  ScriptedRegistry registry(ScriptedRegistry::Renew::kUnavailable);
  LeaseKeeper keeper(registry, lease_with_ttl(300));  // renews every 100 ms, retries every 30
  const milliseconds oldest = oldest_round_over(keeper, milliseconds(1'500));
  EXPECT_LT(oldest, kFresh) << "a failing keeper's last round aged " << oldest.count() << " ms";
  EXPECT_GT(registry.renews(), 5);
  EXPECT_EQ(keeper.state(), LeaseState::kOverdue);  // failing, fenced, and alive
  keeper.stop().ignore_error();
}

TEST(LeaseKeeperRoundTest, KeeperWithALostLeaseStillComesRound) {
  // A lost lease leaves the renew thread waiting for stop(); it must still come round.
  class LostRegistry final : public WorkerRegistry {
   public:
    Result<Lease> acquire(const std::string&) override { return Lease{}; }
    Status renew(const Lease&, int64_t) override { return Status::LeaseLost("gone"); }
    Status release(const Lease&) override { return Status::Ok(); }
    Result<std::vector<SlotStatus>> status() override { return std::vector<SlotStatus>{}; }
    Status force_release(uint64_t) override { return Status::Ok(); }
    std::string describe() const override { return "lost"; }
  } registry;
  LeaseKeeper keeper(registry, lease_with_ttl(300));
  const Steady::time_point until = Steady::now() + milliseconds(2'000);
  while (keeper.state() != LeaseState::kLost && Steady::now() < until) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(keeper.state(), LeaseState::kLost);
  const milliseconds oldest = oldest_round_over(keeper, milliseconds(2'500));
  EXPECT_LT(oldest, kFresh) << "a lost keeper's last round aged " << oldest.count() << " ms";
  keeper.stop().ignore_error();
}

TEST(LeaseKeeperRoundTest, StuckRenewThreadStopsComingRound) {
  ScriptedRegistry registry(ScriptedRegistry::Renew::kHang);
  LeaseKeeper keeper(registry, lease_with_ttl(300));  // the first renew, at 100 ms, hangs
  const Steady::time_point until = Steady::now() + milliseconds(2'000);
  while (registry.renews() == 0 && Steady::now() < until) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(registry.renews(), 1);
  std::this_thread::sleep_for(milliseconds(2'500));
  const auto age = std::chrono::duration_cast<milliseconds>(Steady::now() - keeper.last_round());
  EXPECT_GE(age, milliseconds(2'400)) << "a stuck renew thread still looks alive";
  registry.unblock();  // lets stop() join the thread
  keeper.stop().ignore_error();
}

}  // namespace
}  // namespace idforge::coord
