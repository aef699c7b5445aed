// LeaseKeeper against an in-memory registry whose renews we make fail, hang or say
// "lost": the generator is fenced strictly before the lease could expire, unfenced
// when a renew gets through again, fenced for good when the lease is lost, and kept
// fenced through a start delay. Timing runs on the real steady clock with a 2 s TTL:
// the keeper fences at 1.9 s (the TTL less max(ttl/20, 50 ms)), so a node issues for as
// long as its lease is provably valid and stops 100 ms before it could expire.
#include "coord/lease_keeper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "idforge/snowflake.h"
#include "log/log.h"
#include "support/text.h"

namespace idforge::coord {
namespace {

using test::ms_since;

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int64_t kTtlMs = 2000;
const int64_t kFenceMs = default_fence_after_ms(kTtlMs);

// A registry in memory. Renews succeed, fail with a set status, or hang until let go.
class FakeRegistry final : public WorkerRegistry {
 public:
  explicit FakeRegistry(int64_t high_water_ms = 0, int64_t start_delay_ms = 0)
      : high_water_ms_(high_water_ms), start_delay_ms_(start_delay_ms) {}

  Result<Lease> acquire(const std::string& identity) override {
    Lease lease;
    lease.slot = 37;
    lease.datacenter = 1;
    lease.worker = 5;
    lease.high_water_ms = high_water_ms_;
    lease.ttl_ms = kTtlMs;
    lease.start_delay_ms = start_delay_ms_;
    lease.token = "token-" + identity;
    return lease;
  }

  Status renew(const Lease& lease, int64_t high_water_ms) override {
    const auto entered = SteadyClock::now();
    std::unique_lock lock(mu_);
    ++renews_;
    cv_.wait(lock, [this] { return !hang_; });
    if (lease.token.rfind("token-", 0) != 0) return Status::Internal("foreign token");
    if (!fail_with_.ok()) return fail_with_;
    last_ok_entered_ = entered;
    ++successes_;
    if (high_water_ms > stored_mark_) stored_mark_ = high_water_ms;
    return Status::Ok();
  }

  Status release(const Lease&) override {
    std::lock_guard lock(mu_);
    ++releases_;
    return Status::Ok();
  }
  Result<std::vector<SlotStatus>> status() override { return std::vector<SlotStatus>{}; }
  Status force_release(uint64_t) override { return Status::Ok(); }
  std::string describe() const override { return "fake"; }

  void fail_with(Status status) {
    std::lock_guard lock(mu_);
    fail_with_ = std::move(status);
  }
  void succeed() { fail_with(Status::Ok()); }
  void hang(bool on) {
    {
      std::lock_guard lock(mu_);
      hang_ = on;
    }
    cv_.notify_all();
  }
  SteadyClock::time_point last_ok_entered() const {
    std::lock_guard lock(mu_);
    return last_ok_entered_;
  }
  int renews() const {
    std::lock_guard lock(mu_);
    return renews_;
  }
  int successes() const {
    std::lock_guard lock(mu_);
    return successes_;
  }
  int releases() const {
    std::lock_guard lock(mu_);
    return releases_;
  }
  int64_t stored_mark() const {
    std::lock_guard lock(mu_);
    return stored_mark_;
  }

 private:
  const int64_t high_water_ms_;
  const int64_t start_delay_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Status fail_with_;
  bool hang_ = false;
  SteadyClock::time_point last_ok_entered_ = SteadyClock::now();
  int renews_ = 0;
  int successes_ = 0;
  int releases_ = 0;
  int64_t stored_mark_ = 0;
};

// A keeper with its generator, built as the CLI and the server do.
struct Rig {
  explicit Rig(FakeRegistry& fake, KeeperOptions options = {}) : registry(&fake) {
    options.acquired_at = SteadyClock::now();
    Lease lease = fake.acquire("me").value();
    keeper = std::make_unique<LeaseKeeper>(fake, lease, std::move(options));
    SnowflakeOptions o;
    o.high_water = &keeper->high_water();
    o.nodes = {{"datacenter", lease.datacenter}, {"worker", lease.worker}};
    o.max_drift_ms = 10'000;
    auto made = SnowflakeGenerator::create(o);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    if (made.ok()) generator = std::move(made).value();
    keeper->attach(generator.get());
  }
  ~Rig() {
    // A test that failed half-way may leave renews hanging; stop() waits for them.
    registry->hang(false);
    if (keeper) keeper->stop().ignore_error();
  }
  // Polls until fenced() == want; the ms waited, or -1 after max_ms.
  int64_t wait_fenced(bool want, int64_t max_ms) const {
    const auto start = SteadyClock::now();
    while (generator->fenced() != want) {
      if (ms_since(start) > max_ms) return -1;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return ms_since(start);
  }

  FakeRegistry* registry;
  std::unique_ptr<SnowflakeGenerator> generator;  // outlives the keeper
  std::unique_ptr<LeaseKeeper> keeper;
};

TEST(LeaseKeeperTest, RenewsAboutEveryThirdOfTheTtl) {
  FakeRegistry registry;
  Rig rig(registry);
  ASSERT_TRUE(rig.generator->next().ok());
  const int before = registry.successes();
  std::this_thread::sleep_for(milliseconds(kTtlMs * 2));
  // Every 667 ms: about 6 in 4000 ms; at least 4 even on a slow machine.
  EXPECT_GE(registry.successes() - before, 4);
  EXPECT_LE(registry.successes() - before, 10);
  EXPECT_FALSE(rig.generator->fenced());
  EXPECT_EQ(rig.keeper->state(), LeaseState::kHeld);
}

TEST(LeaseKeeperTest, FailingRenewsFenceBeforeTheLeaseCanExpire) {
  FakeRegistry registry;
  Rig rig(registry);
  ASSERT_TRUE(rig.generator->next().ok());
  registry.fail_with(Status::Unavailable("coordinator unreachable"));
  ASSERT_GE(rig.wait_fenced(true, 3 * kTtlMs), 0) << "never fenced";
  const int64_t fenced_after = ms_since(registry.last_ok_entered());
  // The coordinator drops the lease kTtlMs after the last renew reached it.
  EXPECT_LT(fenced_after, kTtlMs);
  // ... and not much earlier: failed renews are retried, and the node keeps issuing for
  // as long as the lease is provably valid (at 2/3 of the TTL this fails).
  EXPECT_GE(fenced_after, kFenceMs - 50);
  EXPECT_EQ(kFenceMs, kTtlMs - 100);
  Result<uint64_t> id = rig.generator->next();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(id.status().message().find("worker lease for slot 37 not renewed for"),
            std::string::npos)
      << id.status().message();
  EXPECT_NE(id.status().message().find("coordinator unreachable"), std::string::npos);
  EXPECT_EQ(rig.keeper->state(), LeaseState::kOverdue);
  EXPECT_GE(rig.keeper->status().failures, 1u);
}

TEST(LeaseKeeperTest, ASuccessfulRenewUnfences) {
  FakeRegistry registry;
  Rig rig(registry);
  registry.fail_with(Status::Unavailable("coordinator unreachable"));
  ASSERT_GE(rig.wait_fenced(true, 3 * kTtlMs), 0);
  registry.succeed();
  // Failed renews are retried every ttl/10.
  EXPECT_GE(rig.wait_fenced(false, kTtlMs), 0) << "still fenced after renews succeed again";
  EXPECT_TRUE(rig.generator->next().ok());
  EXPECT_EQ(rig.keeper->state(), LeaseState::kHeld);
}

TEST(LeaseKeeperTest, AHangingRenewStillFencesOnTime) {
  FakeRegistry registry;
  Rig rig(registry);
  ASSERT_TRUE(rig.generator->next().ok());
  registry.hang(true);
  ASSERT_GE(rig.wait_fenced(true, 3 * kTtlMs), 0) << "never fenced";
  EXPECT_LT(ms_since(registry.last_ok_entered()), kTtlMs);
  registry.fail_with(Status::Unavailable("timed out"));
  registry.hang(false);
}

TEST(LeaseKeeperTest, AMarkStoreDuringAnOutageGivesUpByTheFenceDeadline) {
  FakeRegistry registry;
  Rig rig(registry);
  registry.hang(true);
  const auto start = SteadyClock::now();
  Status st = rig.keeper->high_water().store(rig.generator->reserved_until_ms() + 60'000);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  // Never past the fence deadline, counted from the last success (before `start`).
  EXPECT_LE(ms_since(start), kFenceMs + 100);
  registry.fail_with(Status::Unavailable("timed out"));
  registry.hang(false);
}

TEST(LeaseKeeperTest, ALostLeaseStaysFencedAndIsReported) {
  FakeRegistry registry;
  std::atomic<int> lost_calls{0};
  KeeperOptions options;
  options.on_lost = [&](const Status& st) {
    EXPECT_NE(st.message().find("lost"), std::string::npos);
    lost_calls.fetch_add(1);
  };
  Rig rig(registry, options);
  ASSERT_TRUE(rig.generator->next().ok());
  registry.fail_with(Status::LeaseLost("worker lease for slot 37 lost: held by other:1"));
  ASSERT_GE(rig.wait_fenced(true, kTtlMs), 0);
  EXPECT_EQ(rig.keeper->state(), LeaseState::kLost);
  registry.succeed();  // the coordinator answers again, but the slot is someone else's
  std::this_thread::sleep_for(milliseconds(kTtlMs / 2));
  EXPECT_TRUE(rig.generator->fenced());
  EXPECT_EQ(lost_calls.load(), 1);
  Result<uint64_t> id = rig.generator->next();
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("held by other:1"), std::string::npos);
  // Nothing to release: it may be the new holder's by now.
  EXPECT_TRUE(rig.keeper->stop().ok());
  EXPECT_EQ(registry.releases(), 0);
}

TEST(LeaseKeeperTest, StartDelayKeepsTheGeneratorFencedThenUnfences) {
  constexpr int64_t kDelayMs = 300;
  FakeRegistry registry(/*high_water_ms=*/0, kDelayMs);
  const auto start = SteadyClock::now();
  Rig rig(registry);
  ASSERT_TRUE(rig.generator->fenced());
  EXPECT_EQ(rig.keeper->state(), LeaseState::kWaiting);
  Result<uint64_t> id = rig.generator->next();
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("waiting 300 ms after acquiring the worker lease"),
            std::string::npos)
      << id.status().message();
  ASSERT_GE(rig.wait_fenced(false, 3 * kDelayMs), 0) << "never unfenced";
  EXPECT_GE(ms_since(start), kDelayMs);
  EXPECT_TRUE(rig.generator->next().ok());
}

TEST(LeaseKeeperTest, TheMarkTravelsWithTheLease) {
  const int64_t now = default_clock().now_ms();
  // The slot's previous holder reserved up to 5 s from now.
  FakeRegistry registry(/*high_water_ms=*/now + 5000);
  Rig rig(registry);
  Result<uint64_t> id = rig.generator->next();
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  const DecodedId decoded = Layout::twitter().decode(*id).value();
  EXPECT_GT(decoded.unix_ms, now + 5000);
  EXPECT_EQ(decoded.get("datacenter"), 1u);
  EXPECT_EQ(decoded.get("worker"), 5u);
  // create() reserved ahead through a renew carrying the mark.
  EXPECT_GE(registry.stored_mark(), decoded.unix_ms);
}

TEST(LeaseKeeperTest, StopFencesStoresTheMarkAndReleases) {
  FakeRegistry registry;
  Rig rig(registry);
  ASSERT_TRUE(rig.generator->next().ok());
  EXPECT_TRUE(rig.keeper->stop().ok());
  EXPECT_TRUE(rig.generator->fenced());
  EXPECT_FALSE(rig.generator->next().ok());
  EXPECT_EQ(registry.releases(), 1);
  EXPECT_GE(registry.stored_mark(), rig.generator->reserved_until_ms());
  EXPECT_TRUE(rig.keeper->stop().ok());  // idempotent
  EXPECT_EQ(registry.releases(), 1);
}

// The log (docs/operations.md, "Logs"): a run of failing renews is one line and a count,
// the fence and the unfence one line each, written by the renew thread (the watchdog
// does no I/O), and the release one more.
TEST(LeaseKeeperTest, FailingRenewsAreLoggedOnceThenFencedRecoveredAndReleased) {
  std::mutex mu;
  std::vector<std::string> lines;
  log::set_writer_for_testing([&](log::Level, std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  auto events = [&] {
    std::lock_guard lock(mu);
    std::vector<std::string> out;
    for (const std::string& line : lines) {
      const size_t start = line.find(' ', line.find(' ') + 1) + 1;
      const size_t end = line.find(' ', start);
      out.push_back(line.substr(start, end - start) +
                    (line.find(" repeats=") != std::string::npos ? " (count)" : ""));
    }
    return out;
  };
  auto has_line = [&](std::string_view event) {
    const std::vector<std::string> now = events();
    return std::find(now.begin(), now.end(), event) != now.end();
  };
  {
    FakeRegistry registry;
    Rig rig(registry);
    registry.fail_with(Status::Unavailable("coordinator unreachable"));
    ASSERT_GE(rig.wait_fenced(true, 3 * kTtlMs), 0);
    for (int i = 0; i < 1000 && !has_line("lease.fenced"); ++i) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    EXPECT_GE(registry.renews() - registry.successes(), 5) << "retried every ttl/10";
    registry.succeed();
    ASSERT_GE(rig.wait_fenced(false, kTtlMs), 0);
    for (int i = 0; i < 1000 && !has_line("lease.unfenced"); ++i) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    EXPECT_TRUE(rig.keeper->stop().ok());
  }
  log::set_writer_for_testing(nullptr);
  EXPECT_EQ(events(), (std::vector<std::string>{"lease.renew_failed", "lease.fenced",
                                                "lease.renew_failed (count)", "lease.renewed",
                                                "lease.unfenced", "lease.released"}));
  std::lock_guard lock(mu);
  ASSERT_EQ(lines.size(), 6U);
  EXPECT_NE(lines[0].find(" warn lease.renew_failed slot=37 registry=fake "
                          "error=\"coordinator unreachable\" since_renew_ms="),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find(" error lease.fenced slot=37 registry=fake reason=\"worker lease for "
                          "slot 37 not renewed for "),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[3].find(" info lease.renewed slot=37 registry=fake failures="), std::string::npos)
      << lines[3];
}

TEST(LeaseKeeperTest, FenceAfterAtOrPastTheTtlFallsBackToTheDefault) {
  FakeRegistry registry;
  KeeperOptions options;
  options.fence_after_ms = kTtlMs;  // would let the lease expire while issuing
  Rig rig(registry, options);
  registry.fail_with(Status::Unavailable("down"));
  ASSERT_GE(rig.wait_fenced(true, 3 * kTtlMs), 0);
  EXPECT_LT(ms_since(registry.last_ok_entered()), kTtlMs);
}

TEST(LeaseKeeperTest, IdsRunningAheadOfTheClockFenceThatMuchEarlier) {
  FakeRegistry registry;
  Rig rig(registry);
  ASSERT_TRUE(rig.keeper->reserve_issue_ahead(400).ok());
  EXPECT_EQ(rig.keeper->fence_after_ms(), kFenceMs - 400);
  ASSERT_TRUE(rig.generator->next().ok());
  registry.fail_with(Status::Unavailable("down"));
  ASSERT_GE(rig.wait_fenced(true, 3 * kTtlMs), 0);
  // Fenced by the TTL less the margin less the 400 ms the IDs may run ahead.
  EXPECT_LT(ms_since(registry.last_ok_entered()), kFenceMs - 400 + 60);

  // More than leaves half the TTL is refused, naming both numbers; nothing changes.
  Status too_much = rig.keeper->reserve_issue_ahead(kTtlMs / 2);
  EXPECT_EQ(too_much.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_much.message().find("ttl_ms 2000"), std::string::npos) << too_much.message();
  EXPECT_EQ(rig.keeper->fence_after_ms(), kFenceMs - 400);
}

TEST(LeaseKeeperTest, TheDefaultFenceLeavesAMarginOfATwentiethOfTheTtl) {
  EXPECT_EQ(default_fence_after_ms(10'000), 9'500);
  EXPECT_EQ(default_fence_after_ms(2'000), 1'900);
  EXPECT_EQ(default_fence_after_ms(600), 550);  // at least 50 ms
  EXPECT_EQ(default_fence_after_ms(100), 50);
}

TEST(LeaseNodeFieldsTest, NamesWinThenPositions) {
  auto fields = lease_node_fields(Layout::twitter()).value();
  EXPECT_EQ(fields.worker_field, "worker");
  EXPECT_EQ(fields.datacenter_field, "datacenter");
  EXPECT_EQ(fields.space.worker_bits, 5);
  EXPECT_EQ(fields.space.datacenter_bits, 5);

  fields = lease_node_fields(Layout::preset("discord").value()).value();
  EXPECT_EQ(fields.worker_field, "worker");
  EXPECT_EQ(fields.datacenter_field, "process");

  fields = lease_node_fields(Layout::preset("instagram").value()).value();
  EXPECT_EQ(fields.worker_field, "shard");
  EXPECT_EQ(fields.datacenter_field, "");
  EXPECT_EQ(fields.space.worker_bits, 13);
  EXPECT_EQ(fields.space.datacenter_bits, 0);

  fields = lease_node_fields(Layout::preset("sonyflake").value()).value();
  EXPECT_EQ(fields.worker_field, "machine");
  EXPECT_EQ(fields.space.slots(), 65536u);

  fields = lease_node_fields(Layout::parse("time:41,region:3,host:7,sequence:12").value()).value();
  EXPECT_EQ(fields.worker_field, "region");
  EXPECT_EQ(fields.datacenter_field, "host");

  Lease lease;
  lease.datacenter = 2;
  lease.worker = 9;
  const auto values = lease_node_values(fields, lease);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], (std::pair<std::string, uint64_t>{"region", 9}));
  EXPECT_EQ(values[1], (std::pair<std::string, uint64_t>{"host", 2}));
}

TEST(LeaseNodeFieldsTest, ThreeNodeFieldsOrNoneAreRefused) {
  auto three = lease_node_fields(Layout::parse("time:41,a:3,b:3,c:4,sequence:12").value());
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("3 node fields"), std::string::npos);
  auto none = lease_node_fields(Layout::parse("time:41,sequence:22").value());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no node field"), std::string::npos);
}

TEST(LeaseNodeFieldsTest, LostIsDecidedByTheCodeAlone) {
  EXPECT_TRUE(is_lease_lost(Status::LeaseLost("lease on slot 12 lost: 'x' holds it now")));
  EXPECT_TRUE(is_lease_lost(Status::LeaseLost("")));
  EXPECT_TRUE(is_lease_lost(Status::NotFound("no such lease")));
  // A transport error that reads like a verdict is not one: the keeper must keep trying.
  EXPECT_FALSE(is_lease_lost(Status::Unavailable("worker lease for slot 3 lost: expired")));
  EXPECT_FALSE(is_lease_lost(Status::Unavailable("renewing slot 3: connection lost: EOF")));
  EXPECT_FALSE(is_lease_lost(Status::Unavailable("connection refused")));
  EXPECT_FALSE(is_lease_lost(Status::IoError("timeout")));
  EXPECT_FALSE(is_lease_lost(Status::DeadlineExceeded("slot 3 lost: no answer in 2 s")));
}

}  // namespace
}  // namespace idforge::coord
