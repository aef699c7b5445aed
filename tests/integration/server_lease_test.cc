// The server's IdService over a Redis registry that loses every lease (FLUSHALL): the
// service fences at once, takes a new lease in the background (waiting out its start
// delay), and issues again, with no ID issued twice and /readyz telling the truth on
// the way.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/services.h"
#include "server/id_service.h"

namespace idforge::integration {
namespace {

using server::IdService;
using server::ServiceConfig;
using Steady = std::chrono::steady_clock;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(ServerLeaseTest, ALostLeaseIsReplacedAndNoIdRepeats) {
  constexpr int64_t kTtlMs = 1200;
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "server-lease");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  ServiceConfig config;
  config.data_dir = Services::get().make_dir("server-lease");
  config.registry_url = redis->url + "?ttl_ms=" + std::to_string(kTtlMs) + "&cluster=lease";
  config.identity = "node-a";
  Result<std::unique_ptr<IdService>> started = IdService::start(config);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  IdService& service = **started;
  std::string why;
  ASSERT_TRUE(service.ready(&why)) << why;

  std::set<uint64_t> seen;
  size_t issued = 0;
  auto pull = [&]() -> Status {
    std::vector<uint64_t> ids(100);
    Status s = service.snowflake(ids);
    if (!s.ok()) return s;
    for (uint64_t id : ids) seen.insert(id);
    issued += ids.size();
    return s;
  };
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
  EXPECT_EQ(seen.size(), issued) << "an ID was issued twice";

  EXPECT_TRUE(service.stop().ok());
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

}  // namespace
}  // namespace idforge::integration
