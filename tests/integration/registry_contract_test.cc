// The WorkerRegistry contract (worker_registry.h), checked the same way on every
// coordinator backend against its real server: Redis, etcd and ZooKeeper. What only one
// backend does (its key layout, its minimum TTL, its sessions, its server going away)
// is in <backend>_registry_test.cc; registry_backends.h says where the backends differ.
//
// Two suites, because leases come in two kinds. RegistryContractTest runs on all three.
// TtlRegistryContractTest runs on Redis and etcd, whose lease is a key with a TTL: it
// runs out unless renewed, renew() extends it, and any registry object holding its token
// may renew or release it. A ZooKeeper lease is an ephemeral node that lives exactly as
// long as its registry's session: it never runs out while the session lives, renew()
// extends nothing, and only its own registry object can release it
// (zookeeper_registry_test.cc checks that instead). ZooKeeper's renew() does not check
// that a slot is inside the layout either (it finds no node and says the lease is lost),
// which keeps it out of the 2^22-slot test too.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/lease_keeper.h"
#include "core/worker_registry.h"
#include "integration/registry_backends.h"
#include "integration/registry_harness.h"
#include "integration/services.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::has;

using Clock = std::chrono::steady_clock;

class RegistryContractTest : public ::testing::TestWithParam<RegistryKind> {
 protected:
  void SetUp() override {
    // Its own cluster: tests share the server.
    Result<std::unique_ptr<RegistryBackend>> backend =
        RegistryBackend::connect(GetParam(), unique_tag("rc"));
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    backend_ = std::move(backend).value();
  }

  std::unique_ptr<WorkerRegistry> open(int64_t ttl_ms = 10'000, SlotSpace space = {},
                                       const std::string& layout = "twitter") {
    return backend_->open(ttl_ms, space, layout);
  }
  RegistryBackend& backend() { return *backend_; }
  const RegistryTraits& traits() const { return backend_->traits(); }

  std::unique_ptr<RegistryBackend> backend_;
};

class TtlRegistryContractTest : public RegistryContractTest {};

INSTANTIATE_TEST_SUITE_P(Backends, RegistryContractTest,
                         ::testing::Values(RegistryKind::kRedis, RegistryKind::kEtcd,
                                           RegistryKind::kZookeeper),
                         RegistryKindName());
INSTANTIATE_TEST_SUITE_P(Backends, TtlRegistryContractTest,
                         ::testing::Values(RegistryKind::kRedis, RegistryKind::kEtcd),
                         RegistryKindName());

TEST_P(RegistryContractTest, TheFirstLeaseIsSlotZeroForTheTtlAskedFor) {
  auto reg = open(5000);
  ASSERT_TRUE(reg);
  Result<Lease> lease = reg->acquire("host-a:8080");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_EQ(lease->slot, 0u);
  EXPECT_EQ(lease->datacenter, 0u);
  EXPECT_EQ(lease->worker, 0u);
  EXPECT_EQ(lease->high_water_ms, 0);
  EXPECT_EQ(lease->ttl_ms, 5000);
  // What is left of the quarantine the acquire itself started: a few ms may have gone.
  const int64_t delay = traits().first_start_delay_ttls * 5000;
  EXPECT_LE(lease->start_delay_ms, delay);
  EXPECT_GE(lease->start_delay_ms, delay - (delay > 0 ? 500 : 0));
  EXPECT_TRUE(backend().held_by(*lease, "host-a:8080"));
  EXPECT_TRUE(has(reg->describe(), backend().url())) << reg->describe();
  EXPECT_TRUE(has(reg->describe(), backend().cluster())) << reg->describe();
  EXPECT_TRUE(reg->release(*lease).ok());
  EXPECT_FALSE(backend().taken(0));
}

TEST_P(RegistryContractTest, ManyThreadsAndRegistryObjectsGetDistinctSlots) {
  constexpr int kRegistries = 6;
  constexpr int kThreadsEach = 8;
  constexpr int kRounds = 3;
  std::vector<std::unique_ptr<WorkerRegistry>> regs;
  // Nothing renews these leases: with the default 10 s TTL, a walk that took 11 s under
  // load saw early leases expire and their slots granted again, which is right. The TTL
  // outlasts the test so every lease is still held when the slots are counted.
  for (int i = 0; i < kRegistries; ++i) {
    regs.push_back(open(120'000));
    ASSERT_TRUE(regs.back());
  }
  std::mutex mu;
  std::vector<Lease> leases;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int r = 0; r < kRegistries; ++r) {
    for (int t = 0; t < kThreadsEach; ++t) {
      threads.emplace_back([&, r, t] {
        // Each thread takes three slots as three identities, racing all the others.
        for (int round = 0; round < kRounds; ++round) {
          const std::string id =
              "h" + std::to_string(r) + "-" + std::to_string(t) + "-" + std::to_string(round);
          Result<Lease> lease = regs[r]->acquire(id);
          std::lock_guard lock(mu);
          if (lease.ok()) {
            leases.push_back(*lease);
          } else {
            errors.push_back(lease.status().to_string());
          }
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(errors.empty()) << errors.front();
  std::set<uint64_t> slots;
  std::set<std::pair<uint64_t, uint64_t>> nodes;
  for (const Lease& l : leases) {
    slots.insert(l.slot);
    nodes.insert({l.datacenter, l.worker});
    EXPECT_EQ(l.datacenter * 32 + l.worker, l.slot);
  }
  constexpr size_t kTotal = kRegistries * kThreadsEach * kRounds;
  EXPECT_EQ(slots.size(), kTotal);
  EXPECT_EQ(nodes.size(), kTotal);
  EXPECT_EQ(*slots.rbegin(), kTotal - 1);  // first free: the lowest slots, no gaps
  Result<std::vector<SlotStatus>> listed = regs[0]->status();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), kTotal);
}

TEST_P(RegistryContractTest, ReleaseAndForceReleaseFreeTheSlot) {
  auto reg = open();
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("a");
  Result<Lease> b = reg->acquire("b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(reg->release(*a).ok());
  EXPECT_FALSE(backend().taken(0));
  EXPECT_TRUE(reg->release(*a).ok());  // twice is harmless
  // Whatever holds slot 1, the operator frees it.
  ASSERT_TRUE(reg->force_release(1).ok());
  EXPECT_FALSE(backend().taken(1));
  Status again = reg->force_release(1);
  EXPECT_EQ(again.code(), StatusCode::kNotFound) << again.to_string();
  Status outside = reg->force_release(1024);
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument) << outside.to_string();
  // b no longer holds it, and learns so at its next renew.
  Status lost = reg->renew(*b, 1);
  EXPECT_EQ(lost.code(), StatusCode::kLeaseLost) << lost.to_string();
  EXPECT_TRUE(coord::is_lease_lost(lost)) << lost.to_string();
  Result<Lease> c = reg->acquire("c");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slot, 0u);
}

TEST_P(RegistryContractTest, ExhaustionNamesTheLimitAndTheLayoutAndKeepsNothing) {
  // 4 slots: a custom layout with a 2-bit worker and no datacenter.
  const SlotSpace space{0, 2};
  const std::string layout = "time:41,worker:2,sequence:12";
  // A registry object per holder: a process (ZooKeeper: a session) each.
  std::vector<std::unique_ptr<WorkerRegistry>> regs;
  for (int i = 0; i < 5; ++i) {
    regs.push_back(open(10'000, space, layout));
    ASSERT_TRUE(regs.back());
  }
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(regs[i]->acquire("n" + std::to_string(i)).ok());
  Result<Lease> fifth = regs[4]->acquire("n4");
  ASSERT_FALSE(fifth.ok());
  EXPECT_EQ(fifth.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(fifth.status(), all_slots_taken(space, layout));
  const std::string m = fifth.status().message();
  EXPECT_TRUE(has(m, "all 4 worker slots")) << m;
  EXPECT_TRUE(has(m, "2^2")) << m;
  EXPECT_TRUE(has(m, layout)) << m;
  EXPECT_EQ(backend().remembered("n4"), kAbsent);
}

TEST_P(RegistryContractTest, AHandEditedMarkIsAnErrorNotALowStart) {
  auto reg = open();
  ASSERT_TRUE(reg);
  backend().set_mark(0, "yesterday");
  Result<Lease> a = reg->acquire("a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kIoError) << a.status().to_string();
  EXPECT_TRUE(has(a.status().message(), backend().mark_key(0))) << a.status().message();
  // etcd and ZooKeeper give the slot back at once; Redis keeps it until its TTL runs out.
  EXPECT_EQ(backend().taken(0), traits().bad_mark_keeps_slot);
  // A mark fixed by hand is what the slot's next holder starts from.
  backend().set_mark(0, "5");
  Result<Lease> b = reg->acquire("b");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->slot, traits().bad_mark_keeps_slot ? 1u : 0u);
  EXPECT_EQ(b->high_water_ms, b->slot == 0 ? 5 : 0);
  // A holder whose mark is edited afterwards cannot store a new one either.
  backend().set_mark(b->slot, "x");
  EXPECT_EQ(reg->renew(*b, 6).code(), StatusCode::kIoError);
}

// The checks every backend passes, through `idforge worker` processes as an operator
// runs them. A cluster per check: a SIGKILLed holder's slot stays taken for the TTL,
// which the next check on the same cluster would trip over.
TEST_P(RegistryContractTest, WorkerProcessesShareTheRegistry) {
  const RegistryTraits& t = traits();
  auto config = [&] {
    HarnessConfig c;
    c.registry = backend().url() + "?ttl_ms=" + std::to_string(t.harness_ttl_ms) +
                 "&cluster=" + unique_tag("harness");
    c.dir = Services::get().make_dir(registry_kind_name(GetParam()) + "-workers");
    c.ttl_ms = t.harness_ttl_ms;
    return c;
  };
  {
    RegistryHarness h(config());
    EXPECT_TRUE(h.check_distinct_slots(10));
    int64_t freed_after_ms = 0;
    EXPECT_TRUE(h.check_kill_frees_slot(t.harness_kill_max_ms, &freed_after_ms));
    // The slot outlives its killed holder by about the TTL, not much less.
    EXPECT_GE(freed_after_ms, t.harness_kill_min_ms);
  }
  {
    RegistryHarness h(config());
    EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/false));
  }
  {
    RegistryHarness h(config());
    EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/true));
  }
  {
    RegistryHarness h(config());
    EXPECT_TRUE(h.check_exhaustion());
  }
}

TEST_P(TtlRegistryContractTest, AnIdentityGetsItsPreviousSlotWhenFree) {
  auto reg = open();
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("a:1");
  Result<Lease> b = reg->acquire("b:1");
  Result<Lease> c = reg->acquire("c:1");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(b->slot, 1u);
  ASSERT_TRUE(reg->release(*b).ok());
  ASSERT_TRUE(reg->release(*a).ok());
  // Slot 0 is free and lower, but b's old slot 1 is free too.
  Result<Lease> b2 = reg->acquire("b:1");
  ASSERT_TRUE(b2.ok()) << b2.status().to_string();
  EXPECT_EQ(b2->slot, 1u);
  EXPECT_NE(b2->token, b->token);
  // Another registry object (another process) knows it too: it is in the coordinator.
  auto other = open();
  ASSERT_TRUE(other);
  ASSERT_TRUE(other->release(*c).ok());
  Result<Lease> c2 = other->acquire("c:1");
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->slot, 2u);
  // When the previous slot is taken, the first free one.
  Result<Lease> thief = reg->acquire("thief");
  ASSERT_TRUE(thief.ok());
  EXPECT_EQ(thief->slot, 0u);
  // A slot freed by the operator counts as free too.
  ASSERT_TRUE(reg->force_release(2).ok());
  Result<Lease> c3 = reg->acquire("c:1");
  ASSERT_TRUE(c3.ok());
  EXPECT_EQ(c3->slot, 2u);
  Result<Lease> c4 = reg->acquire("c:1");  // c:1 is still alive on slot 2
  ASSERT_TRUE(c4.ok());
  EXPECT_EQ(c4->slot, 3u);
}

TEST_P(TtlRegistryContractTest, AnExpiredLeaseFreesItsSlot) {
  const int64_t ttl = traits().short_ttl_ms;
  auto reg = open(ttl);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("crashed");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->slot, 0u);
  EXPECT_EQ(a->ttl_ms, ttl);
  Result<Lease> b = reg->acquire("other");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 1u);
  // Nobody renews: within about the TTL both are gone.
  const auto started = Clock::now();
  Result<std::vector<SlotStatus>> listed = reg->status();
  while (listed.ok() && !listed->empty() && ms_since(started) < traits().expires_after_max_ms) {
    sleep_ms(25);
    listed = reg->status();
  }
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_TRUE(listed->empty());
  EXPECT_GE(ms_since(started), traits().expires_after_min_ms);
  Result<Lease> c = reg->acquire("newcomer");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slot, 0u);
}

TEST_P(TtlRegistryContractTest, RenewKeepsTheLeaseAndStoresTheMarkNeverLowering) {
  const int64_t ttl = traits().short_ttl_ms;
  auto reg = open(ttl);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("renewer");
  ASSERT_TRUE(a.ok());
  // Renewed every quarter of the TTL for over twice the TTL: still held.
  int64_t mark = 1'700'000'000'000;
  for (int i = 0; i < 9; ++i) {
    sleep_ms(ttl / 4);
    mark += ttl / 4;
    Status s = reg->renew(*a, mark);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  EXPECT_TRUE(backend().held_by(*a, "renewer"));
  EXPECT_EQ(backend().mark(0), std::to_string(mark));
  // A lower mark never lowers the stored one; 0 means "none" and leaves it alone.
  ASSERT_TRUE(reg->renew(*a, mark - 5000).ok());
  ASSERT_TRUE(reg->renew(*a, 0).ok());
  EXPECT_EQ(backend().mark(0), std::to_string(mark));
  Result<std::vector<SlotStatus>> listed = reg->status();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].high_water_ms, mark);
  // Each renew gave the lease its TTL again.
  EXPECT_GE((*listed)[0].expires_in_ms, ttl / 2);

  // The mark outlives the lease: the slot's next holder starts above it.
  ASSERT_TRUE(reg->release(*a).ok());
  EXPECT_FALSE(backend().taken(0));
  Result<Lease> b = reg->acquire("successor");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, mark);
}

TEST_P(TtlRegistryContractTest, RenewFailsOnceTheLeaseIsLostAndNeverTakesTheSlotBack) {
  const int64_t ttl = traits().short_ttl_ms;
  auto reg = open(ttl);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("slow");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(reg->renew(*a, 100).ok());

  // Expired with nobody else on the slot: lost, and not taken back.
  const auto started = Clock::now();
  while (backend().taken(0) && ms_since(started) < traits().expires_after_max_ms) sleep_ms(50);
  Status expired = reg->renew(*a, 200);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.code(), StatusCode::kLeaseLost) << expired.to_string();
  EXPECT_TRUE(has(expired.message(), "lease on slot 0 lost")) << expired.message();
  EXPECT_TRUE(coord::is_lease_lost(expired));
  EXPECT_FALSE(backend().taken(0));
  EXPECT_EQ(backend().mark(0), "100");

  // Taken by someone else meanwhile: the renew fails, and the new holder's lease and
  // mark stay as they are.
  Result<Lease> b = reg->acquire("fast");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, 100);
  Status stolen = reg->renew(*a, 999);
  ASSERT_FALSE(stolen.ok());
  EXPECT_EQ(stolen.code(), StatusCode::kLeaseLost) << stolen.to_string();
  EXPECT_TRUE(coord::is_lease_lost(stolen));
  EXPECT_TRUE(has(stolen.message(), "lease on slot 0 lost")) << stolen.message();
  if (traits().renew_names_holder_after_expiry) {
    EXPECT_TRUE(has(stolen.message(), "'fast'")) << stolen.message();
  }
  EXPECT_TRUE(backend().held_by(*b, "fast"));
  EXPECT_EQ(backend().mark(0), "100");
  // A live lease whose key was deleted (force_release) is lost too, with the holder named.
  auto other = open(ttl);
  ASSERT_TRUE(other);
  Result<Lease> c = other->acquire("victim");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(reg->force_release(c->slot).ok());
  Result<Lease> d = reg->acquire("fast2");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->slot, c->slot);
  Status taken = other->renew(*c, 5000);
  ASSERT_FALSE(taken.ok());
  EXPECT_TRUE(has(taken.message(), "'fast2' holds it now")) << taken.message();
  EXPECT_EQ(backend().mark(c->slot), kAbsent);
  // Releasing a lost lease leaves the new holder alone. Redis says so with an error;
  // etcd revokes the old lease, which holds nothing any more, and succeeds.
  EXPECT_EQ(reg->release(*a).ok(), !traits().release_of_a_lost_lease_fails);
  EXPECT_EQ(other->release(*c).ok(), !traits().release_of_a_lost_lease_fails);
  EXPECT_TRUE(backend().held_by(*b, "fast"));
  EXPECT_TRUE(backend().held_by(*d, "fast2"));
  EXPECT_TRUE(reg->renew(*b, 300).ok());
}

TEST_P(TtlRegistryContractTest, StatusListsHolderMarkAndTimeLeft) {
  auto reg = open(4000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("alpha:1");
  Result<Lease> b = reg->acquire("beta:2");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(reg->renew(*b, 1'234'567).ok());
  // A key made by hand, without a TTL, is listed as never expiring.
  backend().take_by_hand(7, "by-hand");
  Result<std::vector<SlotStatus>> listed = reg->status();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].slot, 0u);
  EXPECT_EQ((*listed)[0].holder, "alpha:1");
  EXPECT_EQ((*listed)[0].high_water_ms, 0);
  EXPECT_EQ((*listed)[1].slot, 1u);
  EXPECT_EQ((*listed)[1].holder, "beta:2");
  EXPECT_EQ((*listed)[1].high_water_ms, 1'234'567);
  for (int i : {0, 1}) {
    EXPECT_GE((*listed)[i].expires_in_ms, 2000);
    EXPECT_LE((*listed)[i].expires_in_ms, 4000);
  }
  EXPECT_EQ((*listed)[2].slot, 7u);
  EXPECT_EQ((*listed)[2].holder, "by-hand");
  EXPECT_EQ((*listed)[2].expires_in_ms, -1);
  // It is taken, so acquire skips it.
  for (int i = 2; i < 7; ++i) ASSERT_TRUE(reg->acquire("n" + std::to_string(i)).ok());
  Result<Lease> eighth = reg->acquire("n7");
  ASSERT_TRUE(eighth.ok());
  EXPECT_EQ(eighth->slot, 8u);
  // Another cluster's slots are not ours, even one whose name starts like ours.
  auto other =
      open_registry(GetParam(), backend().url(), registry_options(backend().cluster() + "x"));
  ASSERT_TRUE(other);
  Result<std::vector<SlotStatus>> none = other->status();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(TtlRegistryContractTest, TheBaiduSpaceOf2To22SlotsIsNumberedExactly) {
  const SlotSpace space{0, 22};
  auto reg = open(10'000, space, "baidu");
  ASSERT_TRUE(reg);
  // An identity whose previous slot is near the top gets it back, as a whole number.
  const uint64_t high = (uint64_t{1} << 22) - 1;
  backend().remember("old-node", high);
  backend().set_mark(high, "1700000000123");
  Result<Lease> top = reg->acquire("old-node");
  ASSERT_TRUE(top.ok()) << top.status().to_string();
  EXPECT_EQ(top->slot, high);
  EXPECT_EQ(top->worker, high);
  EXPECT_EQ(top->high_water_ms, 1'700'000'000'123);
  EXPECT_TRUE(backend().held_by(*top, "old-node"));
  // A remembered slot outside the space (another layout) is not used.
  backend().remember("odd", high + 1);
  Result<Lease> odd = reg->acquire("odd");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->slot, 0u);
  // Nor is a slot outside the space renewed, with a live lease's token or none.
  // (ZooKeeper looks for the node and reports the lease lost instead.)
  Lease beyond = *odd;
  beyond.slot = high + 1;
  EXPECT_EQ(reg->renew(beyond, 1).code(), StatusCode::kInvalidArgument);
  Lease blank;
  blank.slot = high + 1;
  EXPECT_EQ(reg->renew(blank, 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idforge::integration
