// The server's IdService over a Redis registry that loses every lease (FLUSHALL): the
// service fences at once, takes a new lease in the background (waiting out its start
// delay), and issues again, with no ID issued twice and /readyz telling the truth on
// the way. And over a Redis that hangs: no request waits on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/services.h"
#include "server/service/id_service.h"
#include "support/text.h"

namespace idforge::integration {
namespace server_lease_test {

using test::trim;

using server::IdService;
using server::ServiceConfig;
using Steady = std::chrono::steady_clock;

// A service whose worker ids come from `redis` with the given TTL.
ServiceConfig config_on(const Server& redis, const std::string& name, int64_t ttl_ms) {
  ServiceConfig config;
  config.data_dir = Services::get().make_dir(name);
  config.registry_url = redis.url + "?ttl_ms=" + std::to_string(ttl_ms) + "&cluster=" + name;
  config.identity = name + "-node";
  // A Redis lease is kept apart from the next holder by timing: its holder fences
  // max_drift_ms early, which held_lease.cc allows while that leaves half the TTL.
  config.max_drift_ms = std::min<int64_t>(config.max_drift_ms, ttl_ms / 3 - 100);
  return config;
}

// Waits until the service issues Snowflake IDs: a Redis registry's new lease waits out its
// start delay (one or two TTLs) while the service already serves its other parts.
void await_snowflake(IdService& service, int64_t ttl_ms) {
  const auto deadline = Steady::now() + std::chrono::milliseconds(4 * ttl_ms + 5000);
  std::string why;
  while (!service.ready(&why) && Steady::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(service.ready(&why)) << why;
}

// Takes Snowflake IDs 100 at a time and keeps what a test checks: every ID seen (a
// repeat shows as seen.size() < issued), failures, and the longest call.
struct Puller {
  explicit Puller(IdService& s) : service(s) {}
  Status pull() {
    std::vector<uint64_t> ids(100);
    const auto start = Steady::now();
    Status s = service.snowflake(ids);
    longest = std::max(longest, Steady::now() - start);
    if (!s.ok()) {
      ++failed;
      return s;
    }
    seen.insert(ids.begin(), ids.end());
    issued += ids.size();
    return s;
  }

  IdService& service;
  std::set<uint64_t> seen;
  size_t issued = 0;
  int failed = 0;
  Steady::duration longest{};
};

TEST(ServerLeaseTest, ALostLeaseIsReplacedAndNoIdRepeats) {
  constexpr int64_t kTtlMs = 1200;
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "server-lease");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  Result<std::unique_ptr<IdService>> started =
      IdService::start(config_on(*redis, "server-lease", kTtlMs));
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  IdService& service = **started;
  await_snowflake(service, kTtlMs);
  std::string why;
  ASSERT_TRUE(service.ready(&why)) << why;
  Puller ids(service);
  auto pull = [&] { return ids.pull(); };
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pull().ok());

  ASSERT_EQ(trim(Services::get().client(*redis, {"FLUSHALL"}).out), "OK");
  // Fenced within the renew period plus a round trip, and not ready meanwhile.
  const auto flushed = Steady::now();
  bool fenced = false;
  while (Steady::now() - flushed < std::chrono::milliseconds(kTtlMs)) {
    if (!pull().ok()) {
      fenced = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(fenced) << "still issuing a TTL after the lease vanished";
  EXPECT_FALSE(service.ready(&why));
  EXPECT_FALSE(why.empty());

  // A new lease after its start delay (one TTL on Redis), then IDs again.
  bool back = false;
  while (Steady::now() - flushed < std::chrono::milliseconds(10 * kTtlMs)) {
    if (pull().ok()) {
      back = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(back) << "no new lease within 10 TTLs: " << service.status().keeper.last_error;
  EXPECT_GE(Steady::now() - flushed, std::chrono::milliseconds(kTtlMs)) << "waited the start delay";
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pull().ok());
  EXPECT_EQ(service.status().leases_taken, 2u);
  EXPECT_TRUE(service.ready(&why)) << why;
  EXPECT_EQ(ids.seen.size(), ids.issued) << "an ID was issued twice";

  EXPECT_TRUE(service.stop().ok());
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

// A coordinator that hangs (SIGSTOP) must not hold requests: the mark is written by
// the service's maintenance thread only, so a request past the stored reservation
// waits max_wait_ms (5 ms) and answers unavailable. (When requests wrote the mark
// themselves, the first one past the reservation waited for the keeper's fence
// deadline, most of the TTL, holding its event loop all that time.)
TEST(ServerLeaseTest, AHungCoordinatorHoldsNoRequest) {
  constexpr int64_t kTtlMs = 6000;
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "server-hung");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  Result<std::unique_ptr<IdService>> started =
      IdService::start(config_on(*redis, "server-hung", kTtlMs));
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  IdService& service = **started;
  await_snowflake(service, kTtlMs);
  Puller ids(service);
  auto pull = [&] { return ids.pull(); };
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pull().ok());
  // Segment IDs come from the SQLite store; their ranges are recorded in the fleet floor
  // in the coordinator, so a range is taken before the pause, and a step that lasts the
  // pause lets the buffer serve through it without waiting on the coordinator.
  TagSpec tag;
  tag.name = "hung";
  tag.step = 1'000'000;
  ASSERT_TRUE(service.create_tag(tag).ok());
  std::vector<uint64_t> first(10);
  ASSERT_TRUE(service.segment("hung", first).ok());

  ASSERT_TRUE(Services::get().pause(*redis).ok());
  // Until the stored reservation (kept a fence window ahead) runs out and requests start
  // failing: about 3 to 4 s, short of the 6 s TTL, so the same lease is renewed after.
  const auto paused = Steady::now();
  int segment_failures = 0;
  while (ids.failed == 0 && Steady::now() - paused < std::chrono::milliseconds(5000)) {
    Status s = pull();
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
    }
    std::vector<uint64_t> numbers(10);
    if (!service.segment("hung", numbers).ok()) ++segment_failures;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(segment_failures, 0) << "segment IDs depended on the hung coordinator";
  EXPECT_GT(ids.failed, 0) << "issued past the stored reservation with the coordinator hung";
  EXPECT_LT(ids.longest, std::chrono::milliseconds(1000)) << "a request waited on the coordinator";

  ASSERT_TRUE(Services::get().resume(*redis).ok());
  bool back = false;
  const auto resumed = Steady::now();
  while (Steady::now() - resumed < std::chrono::milliseconds(2 * kTtlMs)) {
    if (pull().ok()) {
      back = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(back) << "not issuing again after the coordinator came back: "
                    << service.status().keeper.last_error;
  EXPECT_EQ(service.status().leases_taken, 1u);  // the same lease, renewed in time
  EXPECT_EQ(ids.seen.size(), ids.issued) << "an ID was issued twice";

  EXPECT_TRUE(service.stop().ok());
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

}  // namespace server_lease_test
}  // namespace idforge::integration
