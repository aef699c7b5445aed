// The local (lock files) registry through the shared registry checks: the same ones
// every coordinator backend passes, with the local registry's stronger timing (a dead
// holder's slot is free at once, not after a TTL).
#include <gtest/gtest.h>

#include <string>

#include "integration/registry_harness.h"
#include "integration/services.h"

namespace idforge::integration {
namespace {

HarnessConfig local_config(const std::string& name) {
  HarnessConfig config;
  config.dir = Services::get().make_dir(name);
  config.registry = "local:" + config.dir + "/slots?ttl_ms=1500";
  config.ttl_ms = 1500;
  return config;
}

TEST(LocalRegistryProcessTest, TenProcessesAtOnceGetDistinctSlots) {
  RegistryHarness h(local_config("local-distinct"));
  EXPECT_TRUE(h.check_distinct_slots(10));
}

TEST(LocalRegistryProcessTest, KilledHolderFreesItsSlotAtOnce) {
  RegistryHarness h(local_config("local-kill"));
  int64_t freed_after_ms = -1;
  // The kernel drops the flock as the process dies: no TTL to wait out. 500 ms is
  // what one `worker status` run may take on a loaded machine.
  EXPECT_TRUE(h.check_kill_frees_slot(/*max_ms=*/500, &freed_after_ms));
  EXPECT_LT(freed_after_ms, 500);
}

TEST(LocalRegistryProcessTest, RestartedIdentityGetsItsOldSlot) {
  RegistryHarness h(local_config("local-restart"));
  EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/false));
}

TEST(LocalRegistryProcessTest, KilledIdentityGetsItsOldSlotBack) {
  RegistryHarness h(local_config("local-restart-kill"));
  EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/true));
}

TEST(LocalRegistryProcessTest, FullLayoutNamesTheLimitAndTheLayout) {
  RegistryHarness h(local_config("local-full"));
  EXPECT_TRUE(h.check_exhaustion());
}

TEST(LocalRegistryProcessTest, DatacenterAndWorkerFollowTheSlot) {
  HarnessConfig config = local_config("local-fields");
  config.layout = "time:41,datacenter:2,worker:3,sequence:12";
  RegistryHarness h(config);
  Result<std::vector<Holder>> holders =
      h.acquire_all({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"});
  ASSERT_TRUE(holders.ok()) << holders.status().to_string();
  for (const Holder& holder : *holders) {
    EXPECT_EQ(holder.datacenter, holder.slot >> 3) << holder.identity;
    EXPECT_EQ(holder.worker, holder.slot & 7) << holder.identity;
  }
}

}  // namespace
}  // namespace idforge::integration
