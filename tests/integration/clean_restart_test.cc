// A clean stop on a coordinator lease leaves the real mark: `idforge serve` stopped with
// SIGTERM stores its last ID's time as the slot's high-water mark, not the reservation
// it kept a whole fence window ahead, so a restart at once serves its first Snowflake
// ID without waiting that window out (docs/operations.md, "Restarts"). Real `idforge
// serve` processes on real etcd, Redis and ZooKeeper.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "integration/registry_backends.h"
#include "integration/serve_node.h"
#include "integration/services.h"

namespace idforge::integration {
namespace {

using Steady = std::chrono::steady_clock;

// The twitter layout's time field: ms since its epoch, above 22 bits of node and sequence.
int64_t unix_ms_of(uint64_t id) { return static_cast<int64_t>(id >> 22) + 1288834974657; }

class CleanRestartTest : public ::testing::TestWithParam<RegistryKind> {};

INSTANTIATE_TEST_SUITE_P(Backends, CleanRestartTest,
                         ::testing::Values(RegistryKind::kEtcd, RegistryKind::kRedis,
                                           RegistryKind::kZookeeper),
                         RegistryKindName());

// The last of `count` Snowflake IDs from the node, or 0 with a failure.
uint64_t last_snowflake(ServeNode& node, int count) {
  HttpClient http(node.http_port());
  Result<HttpReply> r =
      http.get("/v1/snowflake?count=" + std::to_string(count), std::chrono::seconds(10));
  EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().to_string());
  if (!r.ok() || r->status != 200) return 0;
  const auto json = nlohmann::json::parse(r->body);
  return std::stoull(json["ids"].back().get<std::string>());
}

TEST_P(CleanRestartTest, ASigtermLeavesTheLastIdsTimeAndARestartServesAtOnce) {
  Result<std::unique_ptr<RegistryBackend>> backend =
      RegistryBackend::connect(GetParam(), unique_tag("cr"));
  ASSERT_TRUE(backend.ok()) << backend.status().to_string();
  // Redis holds the first leases of a brand-new registry for 2 x ttl: a short one.
  const std::string url = (*backend)->url() + "?cluster=" + (*backend)->cluster() +
                          (GetParam() == RegistryKind::kRedis ? "&ttl_ms=2500" : "");
  const std::string dir = Services::get().make_dir("clean-restart");
  const std::vector<std::string> args = {"--registry", url, "--identity", "restarting-node"};

  Result<std::unique_ptr<ServeNode>> first = ServeNode::start(dir, args);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  // A brand-new Redis registry's first lease waits out its start delay.
  ASSERT_TRUE((*first)->await_ready("snowflake", std::chrono::seconds(20)).ok());
  const uint64_t last = last_snowflake(**first, 100);
  ASSERT_NE(last, 0u);
  ASSERT_TRUE((*first)->stop().ok()) << (*first)->stderr_tail();

  // The stored mark is the last ID's time; the reservation ahead of it was not kept.
  const std::string mark = (*backend)->mark(0);
  ASSERT_NE(mark, kAbsent);
  EXPECT_EQ(std::stoll(mark), unix_ms_of(last))
      << "the slot's mark after a clean stop should be the last ID's time";

  const auto restarted = Steady::now();
  Result<std::unique_ptr<ServeNode>> second = ServeNode::start(dir, args);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  ASSERT_TRUE((*second)->await_ready("snowflake", std::chrono::seconds(20)).ok());
  const uint64_t next = last_snowflake(**second, 1);
  const auto took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - restarted).count();
  std::printf("[ %s ] restart to first Snowflake ID: %lld ms\n",
              registry_kind_name(GetParam()).c_str(), static_cast<long long>(took_ms));
  EXPECT_GT(next, last);
  // Before, the restart waited out the reservation: 8 s and more with a 10 s TTL. The
  // mark above is the real check; this bound only catches a wait of that size.
  EXPECT_LT(took_ms, 6000);
  EXPECT_TRUE((*second)->stop().ok()) << (*second)->stderr_tail();
}

}  // namespace
}  // namespace idforge::integration
