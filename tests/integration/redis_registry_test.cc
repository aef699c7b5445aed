// The Redis WorkerRegistry against a real redis-server: slots handed out atomically,
// leases that expire, renew that never re-creates a lost lease, and the two faults of
// the seed's machine-id script (a counter wrapping onto live ids, slots never freed).
#include "coord/redis_registry.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coord/lease_keeper.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/worker_registry.h"
#include "integration/registry_harness.h"
#include "integration/services.h"

namespace idforge::integration {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

RegistryOptions options_for(const std::string& cluster, int64_t ttl_ms = 10'000,
                            SlotSpace space = {}, const std::string& layout = "twitter") {
  RegistryOptions o;
  o.space = space;
  o.layout_name = layout;
  o.cluster = cluster;
  o.ttl_ms = ttl_ms;
  return o;
}

class RedisRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Server> redis = Services::get().shared(ServerKind::kRedis);
    ASSERT_TRUE(redis.ok()) << redis.status().to_string();
    redis_ = *redis;
    // Its own namespace: tests share the server.
    cluster_ = unique_tag("rr");
  }

  std::unique_ptr<WorkerRegistry> open(int64_t ttl_ms = 10'000, SlotSpace space = {},
                                       const std::string& layout = "twitter") {
    auto r = coord::open_redis_registry(redis_.url, options_for(cluster_, ttl_ms, space, layout));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::string key(const std::string& kind, uint64_t slot) const {
    return "idforge:" + cluster_ + ":" + kind + ":" + std::to_string(slot);
  }
  std::string redis_cli(const std::vector<std::string>& args) {
    return trim(Services::get().client(redis_, args).out);
  }

  Server redis_;
  std::string cluster_;
};

TEST_F(RedisRegistryTest, ALeaseIsAKeyWithATokenAndATtl) {
  auto reg = open(5000);
  ASSERT_TRUE(reg);
  Result<Lease> lease = reg->acquire("host-a:8080");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_EQ(lease->slot, 0u);
  EXPECT_EQ(lease->datacenter, 0u);
  EXPECT_EQ(lease->worker, 0u);
  EXPECT_EQ(lease->high_water_ms, 0);
  EXPECT_EQ(lease->ttl_ms, 5000);
  // Redis may lose every lease; a new holder waits out the old one's fencing.
  EXPECT_EQ(lease->start_delay_ms, 5000);
  EXPECT_TRUE(lease->token.starts_with("host-a:8080#")) << lease->token;
  EXPECT_EQ(redis_cli({"GET", key("worker", 0)}), lease->token);
  const int64_t pttl = std::stoll(redis_cli({"PTTL", key("worker", 0)}));
  EXPECT_GT(pttl, 3000);
  EXPECT_LE(pttl, 5000);
  const std::string identity_key = "idforge:" + cluster_ + ":identity:host-a:8080";
  EXPECT_EQ(redis_cli({"GET", identity_key}), "0");
  EXPECT_EQ(redis_cli({"PTTL", identity_key}), "-1");
  EXPECT_NE(reg->describe().find(redis_.url), std::string::npos) << reg->describe();
  EXPECT_NE(reg->describe().find(cluster_), std::string::npos) << reg->describe();
  EXPECT_TRUE(reg->release(*lease).ok());
}

TEST_F(RedisRegistryTest, ManyThreadsAndRegistryObjectsGetDistinctSlots) {
  constexpr int kRegistries = 6;
  constexpr int kThreadsEach = 8;
  std::vector<std::unique_ptr<WorkerRegistry>> regs;
  for (int i = 0; i < kRegistries; ++i) {
    regs.push_back(open());
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
        for (int round = 0; round < 3; ++round) {
          const std::string id =
              "h" + std::to_string(r) + "-" + std::to_string(t) + "-" + std::to_string(round);
          Result<Lease> lease = regs[r]->acquire(id);
          std::lock_guard lock(mu);
          if (!lease.ok()) {
            errors.push_back(lease.status().to_string());
            continue;
          }
          leases.push_back(*lease);
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
  constexpr size_t kTotal = kRegistries * kThreadsEach * 3;
  EXPECT_EQ(slots.size(), kTotal);
  EXPECT_EQ(nodes.size(), kTotal);
  // First free: the lowest slots, no gaps.
  EXPECT_EQ(*slots.rbegin(), kTotal - 1);
  Result<std::vector<SlotStatus>> listed = regs[0]->status();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), kTotal);
}

TEST_F(RedisRegistryTest, AnIdentityGetsItsPreviousSlotWhenFree) {
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
  // Another registry object (another process) remembers it too: it is in Redis.
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
}

TEST_F(RedisRegistryTest, AnExpiredLeaseFreesItsSlot) {
  auto reg = open(1000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("crashed");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->slot, 0u);
  Result<Lease> b = reg->acquire("other");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 1u);
  // Nobody renews: within about the TTL both are gone.
  const auto started = Clock::now();
  Result<std::vector<SlotStatus>> listed = reg->status();
  while (listed.ok() && !listed->empty() && ms_since(started) < 3000) {
    sleep_ms(25);
    listed = reg->status();
  }
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_TRUE(listed->empty());
  EXPECT_GE(ms_since(started), 800);
  Result<Lease> c = reg->acquire("newcomer");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slot, 0u);
}

TEST_F(RedisRegistryTest, RenewExtendsTheLeaseAndStoresTheHighWaterMark) {
  auto reg = open(1000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("renewer");
  ASSERT_TRUE(a.ok());
  // Renewed every 300 ms for twice the TTL: still held.
  int64_t mark = 1'700'000'000'000;
  for (int i = 0; i < 7; ++i) {
    sleep_ms(300);
    mark += 300;
    Status s = reg->renew(*a, mark);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  EXPECT_EQ(redis_cli({"GET", key("worker", 0)}), a->token);
  EXPECT_GT(std::stoll(redis_cli({"PTTL", key("worker", 0)})), 500);
  EXPECT_EQ(redis_cli({"GET", key("hw", 0)}), std::to_string(mark));
  // A lower mark never lowers the stored one; 0 means "none" and leaves it alone.
  ASSERT_TRUE(reg->renew(*a, mark - 5000).ok());
  ASSERT_TRUE(reg->renew(*a, 0).ok());
  EXPECT_EQ(redis_cli({"GET", key("hw", 0)}), std::to_string(mark));
  Result<std::vector<SlotStatus>> listed = reg->status();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].high_water_ms, mark);

  // The mark outlives the lease: the slot's next holder starts above it.
  ASSERT_TRUE(reg->release(*a).ok());
  EXPECT_EQ(redis_cli({"EXISTS", key("worker", 0)}), "0");
  Result<Lease> b = reg->acquire("successor");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, mark);
}

TEST_F(RedisRegistryTest, RenewFailsOnceTheLeaseIsLostAndNeverRecreatesIt) {
  auto reg = open(1000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("slow");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(reg->renew(*a, 100).ok());

  // Expired with nobody else on the slot: still lost, and not taken back silently.
  sleep_ms(1300);
  Status expired = reg->renew(*a, 200);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.code(), StatusCode::kUnavailable);
  EXPECT_NE(expired.message().find("lease on slot 0 lost"), std::string::npos) << expired.message();
  EXPECT_EQ(redis_cli({"EXISTS", key("worker", 0)}), "0");
  EXPECT_EQ(redis_cli({"GET", key("hw", 0)}), "100");

  // Taken by someone else meanwhile: the error names the new holder, whose lease and
  // mark stay as they are.
  Result<Lease> b = reg->acquire("fast");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, 100);
  Status stolen = reg->renew(*a, 999);
  ASSERT_FALSE(stolen.ok());
  EXPECT_EQ(stolen.code(), StatusCode::kUnavailable);
  EXPECT_NE(stolen.message().find("lease on slot 0 lost"), std::string::npos);
  EXPECT_NE(stolen.message().find("'fast'"), std::string::npos) << stolen.message();
  EXPECT_EQ(redis_cli({"GET", key("worker", 0)}), b->token);
  EXPECT_EQ(redis_cli({"GET", key("hw", 0)}), "100");
  // Nor may the old holder release what is no longer its own.
  Status release = reg->release(*a);
  EXPECT_FALSE(release.ok());
  EXPECT_EQ(redis_cli({"GET", key("worker", 0)}), b->token);
  EXPECT_TRUE(reg->renew(*b, 300).ok());
}

TEST_F(RedisRegistryTest, ReleaseAndForceReleaseFreeTheSlot) {
  auto reg = open();
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("a");
  Result<Lease> b = reg->acquire("b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(reg->release(*a).ok());
  EXPECT_EQ(redis_cli({"EXISTS", key("worker", 0)}), "0");
  // Releasing twice is harmless.
  EXPECT_TRUE(reg->release(*a).ok());
  // Whatever holds slot 1, the operator frees it.
  ASSERT_TRUE(reg->force_release(1).ok());
  EXPECT_EQ(redis_cli({"EXISTS", key("worker", 1)}), "0");
  Status again = reg->force_release(1);
  EXPECT_EQ(again.code(), StatusCode::kNotFound) << again.to_string();
  Status outside = reg->force_release(1024);
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument) << outside.to_string();
  // b no longer holds it, and learns so at its next renew.
  EXPECT_EQ(reg->renew(*b, 1).code(), StatusCode::kUnavailable);
  Result<Lease> c = reg->acquire("c");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slot, 0u);
}

TEST_F(RedisRegistryTest, StatusListsHolderMarkAndTimeLeft) {
  auto reg = open(4000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("alpha:1");
  Result<Lease> b = reg->acquire("beta:2");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(reg->renew(*b, 1'234'567).ok());
  Result<std::vector<SlotStatus>> listed = reg->status();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].slot, 0u);
  EXPECT_EQ((*listed)[0].holder, "alpha:1");
  EXPECT_EQ((*listed)[0].high_water_ms, 0);
  EXPECT_EQ((*listed)[1].slot, 1u);
  EXPECT_EQ((*listed)[1].holder, "beta:2");
  EXPECT_EQ((*listed)[1].high_water_ms, 1'234'567);
  for (const SlotStatus& s : *listed) {
    EXPECT_GT(s.expires_in_ms, 2000);
    EXPECT_LE(s.expires_in_ms, 4000);
  }
  // Another cluster's slots are not ours.
  auto other = coord::open_redis_registry(redis_.url, options_for(cluster_ + "x"));
  ASSERT_TRUE(other.ok());
  Result<std::vector<SlotStatus>> none = (*other)->status();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(RedisRegistryTest, ExhaustionNamesTheLimitAndTheLayout) {
  // 4 slots: a custom layout with a 2-bit worker and no datacenter.
  auto reg = open(10'000, SlotSpace{0, 2}, "time:41,worker:2,sequence:12");
  ASSERT_TRUE(reg);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(reg->acquire("n" + std::to_string(i)).ok());
  Result<Lease> fifth = reg->acquire("n4");
  ASSERT_FALSE(fifth.ok());
  EXPECT_EQ(fifth.status().code(), StatusCode::kResourceExhausted);
  const std::string m = fifth.status().message();
  EXPECT_NE(m.find("all 4 worker slots"), std::string::npos) << m;
  EXPECT_NE(m.find("2^2"), std::string::npos) << m;
  EXPECT_NE(m.find("time:41,worker:2,sequence:12"), std::string::npos) << m;
}

// The seed's script kept a counter: INCR, and past 31 it wrapped to 0, onto ids that
// were still in use; and nothing ever gave a number back.
TEST_F(RedisRegistryTest, TheSeedsTwoFaultsCannotHappen) {
  const SlotSpace space{1, 2};  // 8 slots: datacenter 0-1, worker 0-3
  auto reg = open(10'000, space, "small");
  ASSERT_TRUE(reg);
  std::vector<Lease> held;
  for (int i = 0; i < 8; ++i) {
    Result<Lease> l = reg->acquire("w" + std::to_string(i));
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    held.push_back(*l);
  }
  std::set<uint64_t> slots;
  for (const Lease& l : held) {
    slots.insert(l.slot);
    EXPECT_LE(l.datacenter, 1u);
    EXPECT_LE(l.worker, 3u);
    EXPECT_EQ(l.datacenter * 4 + l.worker, l.slot);
  }
  // Exactly 2^3 slots: all of 0..7, nothing above.
  EXPECT_EQ(slots, (std::set<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(reg->acquire("w8").status().code(), StatusCode::kResourceExhausted);

  // Many more acquisitions than slots, each freeing one: every one gets a free slot in
  // range (a counter would have passed 7 long ago), never a held one.
  for (int round = 0; round < 40; ++round) {
    const size_t victim = static_cast<size_t>(round * 5) % held.size();
    const uint64_t freed = held[victim].slot;
    ASSERT_TRUE(reg->release(held[victim]).ok());
    Result<Lease> l = reg->acquire("r" + std::to_string(round));
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    EXPECT_EQ(l->slot, freed) << "round " << round;
    held[victim] = *l;
  }
  Result<std::vector<SlotStatus>> listed = reg->status();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 8u);
  for (const SlotStatus& s : *listed) EXPECT_LT(s.slot, 8u);

  // The twitter space: 33 holders get 33 distinct slots; the 33rd is datacenter 1,
  // worker 0, where the seed's counter had wrapped to machine 0 again.
  auto opened = coord::open_redis_registry(redis_.url, options_for(unique_tag("rr")));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto& wide = *opened;
  std::set<std::pair<uint64_t, uint64_t>> nodes;
  for (int i = 0; i < 33; ++i) {
    Result<Lease> l = wide->acquire("t" + std::to_string(i));
    ASSERT_TRUE(l.ok());
    nodes.insert({l->datacenter, l->worker});
    if (i == 32) {
      EXPECT_EQ(l->slot, 32u);
      EXPECT_EQ(l->datacenter, 1u);
      EXPECT_EQ(l->worker, 0u);
    }
  }
  EXPECT_EQ(nodes.size(), 33u);
}

TEST_F(RedisRegistryTest, TheBaiduSpaceOf2To22SlotsIsNumberedExactly) {
  const SlotSpace space{0, 22};
  auto reg = open(10'000, space, "baidu");
  ASSERT_TRUE(reg);
  // An identity whose previous slot is near the top gets it back, as a whole number.
  const uint64_t high = (uint64_t{1} << 22) - 1;
  redis_cli({"SET", "idforge:" + cluster_ + ":identity:old-node", std::to_string(high)});
  redis_cli({"SET", key("hw", high), "1700000000123"});
  Result<Lease> top = reg->acquire("old-node");
  ASSERT_TRUE(top.ok()) << top.status().to_string();
  EXPECT_EQ(top->slot, high);
  EXPECT_EQ(top->worker, high);
  EXPECT_EQ(top->high_water_ms, 1'700'000'000'123);
  EXPECT_EQ(redis_cli({"GET", key("worker", high)}), top->token);
  // A remembered slot outside the space (another layout) is not used.
  redis_cli({"SET", "idforge:" + cluster_ + ":identity:odd", std::to_string(high + 1)});
  Result<Lease> odd = reg->acquire("odd");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->slot, 0u);
  Lease beyond;
  beyond.slot = high + 1;
  Status outside = reg->renew(beyond, 1);
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument);
}

TEST_F(RedisRegistryTest, AHandEditedMarkIsAnErrorNotALowStart) {
  auto reg = open();
  ASSERT_TRUE(reg);
  redis_cli({"SET", key("hw", 0), "yesterday"});
  Result<Lease> a = reg->acquire("a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kIoError) << a.status().to_string();
  EXPECT_NE(a.status().message().find(key("hw", 0)), std::string::npos);
  // A holder whose mark is edited afterwards cannot store a new one either.
  Result<Lease> b = reg->acquire("b");
  ASSERT_TRUE(b.ok());
  redis_cli({"SET", key("hw", b->slot), "x"});
  EXPECT_EQ(reg->renew(*b, 5).code(), StatusCode::kIoError);
}

TEST(RedisRegistryOpenTest, BadUrlsAndAMissingServerFailClearlyAndFast) {
  RegistryOptions o;
  auto bad = coord::open_redis_registry("redis://:s3cret@127.0.0.1:notaport", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bad redis registry URL"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad.status().message().find("s3cret"), std::string::npos);

  const auto started = Clock::now();
  auto none = coord::open_redis_registry("redis://127.0.0.1:" + std::to_string(unused_port()), o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable) << none.status().to_string();
  EXPECT_LT(ms_since(started), 4000);

  RegistryOptions zero_ttl;
  zero_ttl.ttl_ms = 0;
  EXPECT_EQ(coord::open_redis_registry("redis://127.0.0.1:1", zero_ttl).status().code(),
            StatusCode::kInvalidArgument);
}

// A frozen server (SIGSTOP) must not hold a renew past the point where the lease is
// worth anything: the command timeout follows the TTL.
TEST(RedisRegistryServerTest, AFrozenServerFailsARenewWithinTheTtl) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "rr-frozen");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto reg = coord::open_redis_registry(redis->url, options_for("frozen", 1000));
  ASSERT_TRUE(reg.ok()) << reg.status().to_string();
  Result<Lease> a = (*reg)->acquire("a");
  ASSERT_TRUE(a.ok());
  const pid_t pid = std::stoi(read_file(redis->dir + "/redis.pid"));
  ASSERT_GT(pid, 1);
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const auto started = Clock::now();
  Status s = (*reg)->renew(*a, 1);
  const int64_t took = ms_since(started);
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
  EXPECT_LT(took, 1000);
  // Back to normal: the next renew works on a new connection.
  Status back = (*reg)->renew(*a, 2);
  EXPECT_TRUE(back.ok()) << back.to_string();
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

// Redis loses its data while a holder renews (FLUSHALL, then a restart with its files
// removed): the holder's renew fails instead of writing the lease back, and whoever
// takes the slot next is told to wait a whole TTL.
TEST(RedisRegistryServerTest, ARedisThatForgetsEverythingFailsTheHoldersRenew) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "rr-empty");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto& sv = Services::get();
  auto reg = coord::open_redis_registry(redis->url, options_for("empty", 1500));
  ASSERT_TRUE(reg.ok()) << reg.status().to_string();
  Result<Lease> a = (*reg)->acquire("holder");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*reg)->renew(*a, 1000).ok());

  ASSERT_EQ(trim(sv.client(*redis, {"FLUSHALL"}).out), "OK");
  Status lost = (*reg)->renew(*a, 2000);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), StatusCode::kUnavailable);
  EXPECT_NE(lost.message().find("lease on slot 0 lost"), std::string::npos) << lost.message();
  EXPECT_EQ(trim(sv.client(*redis, {"DBSIZE"}).out), "0");

  // Again, with the server stopped and its files removed.
  Result<Lease> b = (*reg)->acquire("holder");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, 0);  // the mark went with the data
  EXPECT_EQ(b->start_delay_ms, 1500);
  ASSERT_TRUE((*reg)->renew(*b, 3000).ok());
  ASSERT_TRUE(sv.stop(*redis).ok());
  std::error_code ec;
  for (const char* name : {"appendonlydir", "dump.rdb"}) {
    std::filesystem::remove_all(redis->dir + "/" + name, ec);
  }
  ASSERT_TRUE(sv.restart(*redis).ok());
  Status gone = (*reg)->renew(*b, 4000);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.message().find("lease on slot 0 lost"), std::string::npos) << gone.message();
  EXPECT_EQ(trim(sv.client(*redis, {"EXISTS", "idforge:empty:worker:0"}).out), "0");
  EXPECT_TRUE(sv.stop(*redis).ok());
}

// One generator issuing under a LeaseKeeper: its IDs with the steady time each came.
class Issuer {
 public:
  static Result<std::unique_ptr<Issuer>> start(WorkerRegistry& registry,
                                               const std::string& identity) {
    auto issuer = std::unique_ptr<Issuer>(new Issuer());
    const auto asked = Clock::now();
    Result<Lease> lease = registry.acquire(identity);
    if (!lease.ok()) return lease.status();
    issuer->asked_at_ = asked;
    issuer->lease_ = *lease;
    coord::KeeperOptions ko;
    ko.acquired_at = asked;
    issuer->keeper_ = std::make_unique<coord::LeaseKeeper>(registry, *lease, ko);
    Result<coord::LeaseNodeFields> fields = coord::lease_node_fields(Layout::twitter());
    if (!fields.ok()) return fields.status();
    SnowflakeOptions so;
    so.nodes = coord::lease_node_values(*fields, *lease);
    so.high_water = &issuer->keeper_->high_water();
    Result<std::unique_ptr<SnowflakeGenerator>> gen = SnowflakeGenerator::create(so);
    if (!gen.ok()) return gen.status();
    issuer->gen_ = std::move(gen).value();
    issuer->keeper_->attach(issuer->gen_.get());
    issuer->thread_ = std::thread([raw = issuer.get()] { raw->run(); });
    return issuer;
  }

  ~Issuer() {
    stop_issuing();
    // The keeper first: it fences and may touch the generator until it has stopped.
    if (keeper_) keeper_->stop().ignore_error();
    keeper_.reset();
    gen_.reset();
  }

  void stop_issuing() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  const Lease& lease() const { return lease_; }
  Clock::time_point asked_at() const { return asked_at_; }
  coord::LeaseKeeper& keeper() { return *keeper_; }
  SnowflakeGenerator& generator() { return *gen_; }
  // After stop_issuing().
  const std::vector<std::pair<uint64_t, Clock::time_point>>& issued() const { return issued_; }

 private:
  Issuer() = default;

  void run() {
    while (!stop_.load()) {
      Result<uint64_t> id = gen_->next();
      if (id.ok()) issued_.emplace_back(*id, Clock::now());
      // About ten IDs per ms: never so many that the generator runs ahead of the clock,
      // which would take from the margin the start delay leaves (redis_registry.cc).
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  Lease lease_;
  Clock::time_point asked_at_;
  std::unique_ptr<coord::LeaseKeeper> keeper_;
  std::unique_ptr<SnowflakeGenerator> gen_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::pair<uint64_t, Clock::time_point>> issued_;
};

// Redis forgets every lease (FLUSHALL) while a generator issues under one. Its keeper's
// next renew fails, so it stops issuing before the TTL would have freed the slot; a
// second node that takes the same slot after the flush issues only after its start
// delay, which is after the first one's last ID; and no ID comes from both.
TEST(RedisRegistryServerTest, AfterDataLossTheOldHolderIsFencedBeforeTheNewOneIssues) {
  constexpr int64_t kTtlMs = 1500;
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "rr-keeper");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  // Two registry objects: two processes, as far as Redis can tell.
  auto reg_a = coord::open_redis_registry(redis->url, options_for("keeper", kTtlMs));
  auto reg_b = coord::open_redis_registry(redis->url, options_for("keeper", kTtlMs));
  ASSERT_TRUE(reg_a.ok() && reg_b.ok());

  Result<std::unique_ptr<Issuer>> a = Issuer::start(**reg_a, "node-a");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  Issuer& first = **a;
  EXPECT_EQ(first.lease().start_delay_ms, kTtlMs);
  // In its start delay it is fenced; then it issues.
  EXPECT_EQ(first.generator().next().status().code(), StatusCode::kUnavailable);
  const auto wait_from = Clock::now();
  while (first.keeper().state() != coord::LeaseState::kHeld && ms_since(wait_from) < 5000) {
    sleep_ms(10);
  }
  ASSERT_EQ(first.keeper().state(), coord::LeaseState::kHeld);
  sleep_ms(300);

  const auto flushed_at = Clock::now();
  ASSERT_EQ(trim(Services::get().client(*redis, {"FLUSHALL"}).out), "OK");
  Result<std::unique_ptr<Issuer>> b = Issuer::start(**reg_b, "node-b");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  Issuer& second = **b;
  // The same slot: Redis no longer knows anyone holds it.
  EXPECT_EQ(second.lease().slot, first.lease().slot);
  EXPECT_EQ(second.lease().high_water_ms, 0);
  while (second.keeper().state() != coord::LeaseState::kHeld && ms_since(flushed_at) < 6000) {
    sleep_ms(10);
  }
  ASSERT_EQ(second.keeper().state(), coord::LeaseState::kHeld);
  sleep_ms(300);
  first.stop_issuing();
  second.stop_issuing();

  EXPECT_EQ(first.keeper().state(), coord::LeaseState::kLost);
  EXPECT_NE(first.keeper().status().last_error.find("lost"), std::string::npos)
      << first.keeper().status().last_error;
  EXPECT_EQ(first.generator().counters().borrowed_ms, 0u);
  const auto& from_a = first.issued();
  const auto& from_b = second.issued();
  ASSERT_FALSE(from_a.empty());
  ASSERT_FALSE(from_b.empty());
  const auto last_a = from_a.back().second;
  const auto first_b = from_b.front().second;
  // Fenced before the TTL ran out (at 2/3 of it after the last good renew).
  EXPECT_LT(last_a - flushed_at, std::chrono::milliseconds(kTtlMs));
  // The new holder waited its start delay, by which time the old one had stopped.
  EXPECT_GE(first_b - second.asked_at(), std::chrono::milliseconds(kTtlMs));
  EXPECT_LT(last_a, first_b);
  std::set<uint64_t> ids;
  for (const auto& [id, when] : from_a) ids.insert(id);
  for (const auto& [id, when] : from_b) ids.insert(id);
  EXPECT_EQ(ids.size(), from_a.size() + from_b.size());

  EXPECT_TRUE(second.keeper().stop().ok());
  a->reset();
  b->reset();
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

// The checks every backend passes, through `idforge worker` processes as an operator
// runs them.
TEST(RedisRegistryHarnessTest, WorkerProcessesShareTheRedisRegistry) {
  Result<std::string> url = Services::get().redis_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  // A namespace per check: a SIGKILLed holder's slot stays taken for the TTL, which
  // the next check on the same namespace would trip over.
  auto config = [&] {
    HarnessConfig c;
    c.registry = *url + "?ttl_ms=1500&cluster=" + unique_tag("harness");
    c.dir = Services::get().make_dir("redis-workers");
    c.ttl_ms = 1500;
    return c;
  };
  {
    RegistryHarness h(config());
    EXPECT_TRUE(h.check_distinct_slots(10));
    int64_t freed_after_ms = 0;
    EXPECT_TRUE(h.check_kill_frees_slot(/*max_ms=*/1500 + 1000, &freed_after_ms));
    // The slot outlives its killed holder by about the TTL, not much less.
    EXPECT_GE(freed_after_ms, 1000);
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

}  // namespace
}  // namespace idforge::integration
