// The whole worker-id coordinator out for 5 s under a serving IdService: a private etcd,
// its only member frozen with SIGSTOP (connections stay open, nothing answers), so the
// lease cannot be renewed nor the time mark stored. The lease (8 s) is still valid
// throughout, and the mark was stored a whole fence window ahead, so not one Snowflake
// request may fail; afterwards the same lease is renewed and nothing was issued twice.
//
// With the generator's short reserve (a second ahead) the same outage fails requests
// from about a second in: that is what MarkReserve::kRideOutOutages is for.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "integration/services.h"
#include "server/service/id_service.h"

namespace idforge::integration {
namespace coordinator_outage_test {

using server::IdService;
using server::ServiceConfig;
using Steady = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr int64_t kTtlMs = 8000;
constexpr auto kOutage = Ms(5000);

int64_t ms_of(Steady::duration d) { return std::chrono::duration_cast<Ms>(d).count(); }

// A thread taking one Snowflake ID per call, about every millisecond, keeping what the
// test checks: failures (and the first one), and whether IDs went on increasing (one
// generator: any repeat would break that).
class Loader {
 public:
  explicit Loader(IdService& service) : service_(service), thread_([this] { run(); }) {}
  ~Loader() { stop(); }

  void stop() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  uint64_t issued = 0;
  int failed = 0;
  bool increasing = true;
  std::string first_error;
  int64_t first_failure_ms = -1;  // after the loader started

 private:
  void run() {
    const auto start = Steady::now();
    uint64_t last = 0;
    uint64_t one[1];
    while (!done_.load()) {
      Status s = service_.snowflake(one);
      if (s.ok()) {
        if (one[0] <= last) increasing = false;
        last = one[0];
        ++issued;
      } else {
        if (failed++ == 0) {
          first_error = s.to_string();
          first_failure_ms = ms_of(Steady::now() - start);
        }
      }
      std::this_thread::sleep_for(Ms(1));
    }
  }

  IdService& service_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// A service whose worker ids come from the private etcd `etcd`, named `name`.
ServiceConfig config_on(const Server& etcd, const std::string& name) {
  ServiceConfig config;
  config.data_dir = Services::get().make_dir(name);
  config.registry_url = etcd.url + "?ttl_ms=" + std::to_string(kTtlMs) + "&cluster=" + name;
  config.identity = name + "-node";
  return config;
}

TEST(CoordinatorOutageTest, FiveSecondsWithoutTheWholeCoordinatorFailNoRequest) {
  auto& sv = Services::get();
  Result<Server> etcd = sv.start_private(ServerKind::kEtcd, "outage-etcd");
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  ServiceConfig config = config_on(*etcd, "outage");
  Result<std::unique_ptr<IdService>> started = IdService::start(config);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  IdService& service = **started;
  const uint64_t slot = service.status().lease.slot;

  Loader loader(service);
  std::this_thread::sleep_for(Ms(1000));
  ASSERT_TRUE(sv.pause(*etcd).ok());
  const auto paused = Steady::now();
  std::this_thread::sleep_for(kOutage);
  const server::ServiceStatus during = service.status();
  ASSERT_TRUE(sv.resume(*etcd).ok());
  std::this_thread::sleep_for(Ms(1500));
  loader.stop();

  std::printf(
      "[ outage ] %lld ms frozen: %llu IDs, %d failed%s%s; %lld ms since the last renew "
      "at the end, mark %lld ms ahead\n",
      static_cast<long long>(ms_of(Steady::now() - paused) - 1500),
      static_cast<unsigned long long>(loader.issued), loader.failed,
      loader.failed > 0 ? ", first: " : "", loader.first_error.c_str(),
      static_cast<long long>(during.keeper.since_renew_ms),
      static_cast<long long>(during.reserved_ahead_ms));
  EXPECT_GE(during.keeper.since_renew_ms, ms_of(kOutage) - 100) << "the coordinator answered";
  EXPECT_EQ(loader.failed, 0) << "first failure " << loader.first_failure_ms
                              << " ms in: " << loader.first_error;
  EXPECT_TRUE(loader.increasing) << "an ID did not increase: one was issued twice";
  EXPECT_GT(loader.issued, 3000u);

  // The same lease, renewed again: nobody else could have taken the slot.
  const server::ServiceStatus after = service.status();
  EXPECT_EQ(after.lease.slot, slot);
  EXPECT_EQ(after.leases_taken, 1u);
  EXPECT_LT(after.keeper.since_renew_ms, kTtlMs / 2);
  std::string why;
  EXPECT_TRUE(service.ready(&why)) << why;
  EXPECT_TRUE(service.stop().ok());
  EXPECT_TRUE(sv.stop(*etcd).ok());
}

// The same 5 s outage for segment IDs: each range is recorded in the fleet floor in the
// registry before it is used, so while the registry is out no new range is taken. A tag
// whose buffers hold more than 5 s of its traffic (a step sized for the outage) serves
// every request; one whose step lasts milliseconds fails its requests until the registry
// is back (docs/stores.md, "The fleet floor": safety first).
TEST(CoordinatorOutageTest, SegmentsRideOutFiveSecondsOnlyWithAStepSizedForThem) {
  auto& sv = Services::get();
  Result<Server> etcd = sv.start_private(ServerKind::kEtcd, "outage-floor");
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  ServiceConfig config = config_on(*etcd, "outage-floor");
  // The small tag's step stays 100 whatever the traffic (it would grow, and its buffers
  // with it, on a fast machine far enough to ride out part of the outage).
  config.max_step = 100;
  Result<std::unique_ptr<IdService>> started = IdService::start(config);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  IdService& service = **started;
  struct Tag {
    std::string name;
    uint64_t step;
    uint64_t served = 0;
    int failed = 0;
  };
  // About 25,000 IDs a second each: a step of 100 lasts 4 ms, 400,000 lasts 16 s.
  Tag small{unique_tag("outage_small"), 100};
  Tag sized{unique_tag("outage_sized"), 400'000};
  for (Tag* t : {&small, &sized}) {
    TagSpec spec;
    spec.name = t->name;
    spec.step = t->step;
    ASSERT_TRUE(service.create_tag(spec).ok());
  }
  std::atomic<bool> paused{false}, done{false};
  // One thread per tag: a request of the small tag waiting out segment.wait_ms must not
  // slow the other tag's.
  auto load = [&](Tag* t) {
    std::vector<uint64_t> ids(50);
    while (!done.load()) {
      const bool during = paused.load();
      Status got = service.segment(t->name, ids);
      if (during && got.ok()) t->served += ids.size();
      if (during && !got.ok()) ++t->failed;
      std::this_thread::sleep_for(Ms(2));
    }
  };
  std::thread small_loader(load, &small);
  std::thread sized_loader(load, &sized);
  std::this_thread::sleep_for(Ms(1000));
  ASSERT_TRUE(sv.pause(*etcd).ok());
  paused.store(true);
  std::this_thread::sleep_for(kOutage);
  paused.store(false);
  ASSERT_TRUE(sv.resume(*etcd).ok());
  std::this_thread::sleep_for(Ms(500));
  done.store(true);
  small_loader.join();
  sized_loader.join();
  for (const Tag* t : {&small, &sized}) {
    std::printf("[ floor outage ] tag of step %llu: %llu IDs served, %d requests failed in 5 s\n",
                static_cast<unsigned long long>(t->step),
                static_cast<unsigned long long>(t->served), t->failed);
  }
  EXPECT_EQ(sized.failed, 0) << "a step sized for the outage should serve throughout";
  EXPECT_GT(small.failed, 0) << "a range was used that the registry never recorded";
  std::vector<uint64_t> after(10);
  EXPECT_TRUE(service.segment(small.name, after).ok()) << "IDs flow again after the outage";
  EXPECT_TRUE(service.stop().ok());
  EXPECT_TRUE(sv.stop(*etcd).ok());
}

}  // namespace coordinator_outage_test
}  // namespace idforge::integration
