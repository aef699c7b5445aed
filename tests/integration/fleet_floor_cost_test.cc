// What the fleet floor costs: segment ranges per second through IdService (SQLite store
// in the data directory, step 100 held fixed, so every 100 IDs is one range) with the
// floor recorded in each kind of registry, against the same with the floor off, in
// alternating rounds of one run. A benchmark, not a test: it asserts nothing about speed
// and runs only with IDFORGE_FLOOR_BENCH_MS set (`make bench-floor`, docs/benchmarks.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "integration/services.h"
#include "server/service/id_service.h"

namespace idforge::integration {
namespace fleet_floor_cost_test {

using server::IdService;
using server::ServiceConfig;
using Steady = std::chrono::steady_clock;

// IDs per second of one thread taking 100 at a time for `ms`.
double ids_per_second(const std::string& registry, bool floor, int64_t ms) {
  ServiceConfig config;
  config.data_dir = Services::get().make_dir("floor-cost");
  config.registry_url = registry;
  config.identity = "floor-cost";
  config.fleet_floor = floor;
  config.max_step = 100;  // one range per 100 IDs, whatever the traffic
  Result<std::unique_ptr<IdService>> started = IdService::start(config);
  EXPECT_TRUE(started.ok()) << started.status().to_string();
  if (!started.ok()) return 0;
  IdService& service = **started;
  TagSpec tag;
  tag.name = unique_tag("cost");
  tag.step = 100;
  EXPECT_TRUE(service.create_tag(tag).ok());
  std::vector<uint64_t> ids(100);
  uint64_t taken = 0;
  const auto start = Steady::now();
  const auto until = start + std::chrono::milliseconds(ms);
  while (Steady::now() < until) {
    if (service.segment(tag.name, ids).ok()) taken += ids.size();
  }
  const double seconds = std::chrono::duration<double>(Steady::now() - start).count();
  EXPECT_TRUE(service.stop().ok());
  return static_cast<double>(taken) / seconds;
}

TEST(FleetFloorCostTest, RangesPerSecondWithAndWithoutTheFloorPerRegistry) {
  const char* env = std::getenv("IDFORGE_FLOOR_BENCH_MS");
  if (env == nullptr) GTEST_SKIP() << "a benchmark: set IDFORGE_FLOOR_BENCH_MS (make bench-floor)";
  const int64_t ms = std::max<int64_t>(200, std::atoll(env));
  auto& sv = Services::get();
  struct Registry {
    std::string name, url;
  };
  std::vector<Registry> registries = {{"local", "local:" + sv.make_dir("floor-cost-local")}};
  for (auto [name, url] : {std::pair{"redis", sv.redis_url()}, std::pair{"etcd", sv.etcd_url()},
                           std::pair{"zookeeper", sv.zookeeper_url()}}) {
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    registries.push_back({name, *url + "?cluster=" + unique_tag("cost")});
  }
  std::printf(
      "| registry | ranges/s with the floor | without | ratio |\n| --- | ---: | ---: | ---: |\n");
  for (const Registry& r : registries) {
    std::vector<double> on, off;
    for (int round = 0; round < 3; ++round) {
      on.push_back(ids_per_second(r.url, true, ms) / 100);
      off.push_back(ids_per_second(r.url, false, ms) / 100);
    }
    std::sort(on.begin(), on.end());
    std::sort(off.begin(), off.end());
    std::printf("| %s | %.0f | %.0f | %.2f |\n", r.name.c_str(), on[1], off[1],
                off[1] > 0 ? on[1] / off[1] : 0.0);
  }
}

}  // namespace fleet_floor_cost_test
}  // namespace idforge::integration
