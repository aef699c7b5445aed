// A lease with a start delay holds up Snowflake only: `idforge serve` on a brand-new
// Redis registry listens at once and serves segments, UUIDs and ULIDs while its first
// lease waits out 2 x ttl, and /readyz?part=snowflake says why Snowflake waits; and
// `idforge worker init` records a registry as new so that its first leases wait for
// nothing (docs/operations.md, "Start delay"). Real `idforge serve` on a real Redis.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "integration/serve_node.h"
#include "integration/services.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::ms_since;

using Steady = std::chrono::steady_clock;
constexpr int64_t kTtlMs = 2500;

std::string registry_url() {
  Result<std::string> redis = Services::get().redis_url();
  EXPECT_TRUE(redis.ok()) << redis.status().to_string();
  return (redis.ok() ? *redis : "") + "?ttl_ms=" + std::to_string(kTtlMs) +
         "&cluster=" + unique_tag("sd");
}

TEST(StartDelayServeTest, OnlySnowflakeWaitsOutTheStartDelayOfANewRedisRegistry) {
  const std::string url = registry_url();
  const auto launched = Steady::now();
  Result<std::unique_ptr<ServeNode>> node =
      ServeNode::start(Services::get().make_dir("start-delay"), {"--registry", url});
  ASSERT_TRUE(node.ok()) << node.status().to_string();
  const int64_t listening_ms = ms_since(launched);
  HttpClient http((*node)->http_port());

  // Within the start delay: the other parts serve, Snowflake says why it waits.
  Result<HttpReply> uuid = http.get("/v1/uuid7", std::chrono::seconds(5));
  ASSERT_TRUE(uuid.ok()) << uuid.status().to_string();
  EXPECT_EQ(uuid->status, 200) << uuid->body;
  Result<HttpReply> snowflake = http.get("/v1/snowflake", std::chrono::seconds(5));
  ASSERT_TRUE(snowflake.ok());
  Result<HttpReply> ready = http.get("/readyz?part=snowflake", std::chrono::seconds(5));
  ASSERT_TRUE(ready.ok());
  const bool still_waiting = ms_since(launched) < 2 * kTtlMs - 500;
  if (still_waiting) {
    EXPECT_EQ(snowflake->status, 503) << snowflake->body;
    EXPECT_EQ(ready->status, 503) << ready->body;
    EXPECT_NE(ready->body.find("start delay"), std::string::npos) << ready->body;
  }
  Result<HttpReply> segments = http.get("/readyz?part=segments", std::chrono::seconds(5));
  ASSERT_TRUE(segments.ok());
  EXPECT_EQ(segments->status, 200) << segments->body;

  // After it, Snowflake serves.
  int status = 0;
  while (ms_since(launched) < 4 * kTtlMs + 5000) {
    Result<HttpReply> r = http.get("/v1/snowflake", std::chrono::seconds(5));
    if (r.ok() && r->status == 200) {
      status = 200;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 200) << "Snowflake never served after the start delay";
  std::printf("[ start delay ] listening after %lld ms, Snowflake after %lld ms\n",
              static_cast<long long>(listening_ms), static_cast<long long>(ms_since(launched)));
  // The listeners did not wait for the lease (which waits 2 x ttl = 5 s).
  EXPECT_LT(listening_ms, 2 * kTtlMs) << "the server listened only after the start delay";
  EXPECT_TRUE((*node)->stop().ok()) << (*node)->stderr_tail();
}

TEST(StartDelayServeTest, WorkerInitRecordsANewRegistrySoItsFirstLeaseIssuesAtOnce) {
  const std::string dir = Services::get().make_dir("worker-init");
  auto idforge = [&](std::vector<std::string> args) {
    args.insert(args.begin(), idforge_bin());
    args.insert(args.end(), {"--data-dir", dir});
    return test_support::run_command(args, dir + "/cli");
  };
  auto start_delay = [&](const std::string& url) -> int64_t {
    test_support::RunResult r =
        idforge({"worker", "acquire", "--registry", url, "--hold-ms", "0", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t brace = r.out.find('{');
    if (brace == std::string::npos) return -1;
    return nlohmann::json::parse(r.out.substr(brace))["start_delay_ms"].get<int64_t>();
  };
  // Without init, a new registry's first lease waits (it could be one that lost data).
  EXPECT_GT(start_delay(registry_url()), 0);

  const std::string fresh = registry_url();
  test_support::RunResult init = idforge({"worker", "init", "--registry", fresh});
  ASSERT_EQ(init.exit_code, 0) << init.err;
  EXPECT_NE(init.out.find("recorded as new"), std::string::npos) << init.out;
  EXPECT_EQ(start_delay(fresh), 0);
  // A registry that was used is never "new" again.
  test_support::RunResult again = idforge({"worker", "init", "--registry", fresh});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("is not new"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace idforge::integration
