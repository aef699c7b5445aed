// The etcd WorkerRegistry against a real etcd (3.4, through its JSON gateway): slots
// taken by transactions, leases that expire, marks that never go down, operator
// actions, and `idforge worker` processes sharing it. etcd_fencing_test.cc covers etcd
// going away under a holder.
#include "coord/etcd_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/etcd_client.h"
#include "coord/lease_keeper.h"
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

RegistryOptions options_for(const std::string& cluster, int64_t ttl_ms = 10'000,
                            SlotSpace space = {}, const std::string& layout = "twitter") {
  RegistryOptions o;
  o.space = space;
  o.layout_name = layout;
  o.cluster = cluster;
  o.ttl_ms = ttl_ms;
  return o;
}

std::unique_ptr<WorkerRegistry> open_at(const std::string& url, const RegistryOptions& options) {
  auto r = coord::open_etcd_registry(url, options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

class EtcdRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Server> etcd = Services::get().shared(ServerKind::kEtcd);
    ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
    etcd_ = *etcd;
    cluster_ = unique_tag("er");  // its own namespace: tests share the server
    auto raw = coord::EtcdClient::open(etcd_.url, {});
    ASSERT_TRUE(raw.ok()) << raw.status().to_string();
    raw_ = std::move(raw).value();
  }

  std::unique_ptr<WorkerRegistry> open(int64_t ttl_ms = 10'000, SlotSpace space = {},
                                       const std::string& layout = "twitter") {
    return open_at(etcd_.url, options_for(cluster_, ttl_ms, space, layout));
  }

  std::string key(const std::string& kind, const std::string& name) const {
    return "/idforge/" + cluster_ + "/" + kind + "/" + name;
  }
  std::string key(const std::string& kind, uint64_t slot) const {
    return key(kind, std::to_string(slot));
  }
  // The key as etcd holds it; nothing when absent.
  std::vector<coord::EtcdKeyValue> get(const std::string& k) {
    auto kvs = raw_->range(k);
    EXPECT_TRUE(kvs.ok()) << kvs.status().to_string();
    return kvs.ok() ? *kvs : std::vector<coord::EtcdKeyValue>{};
  }
  std::string value(const std::string& k) {
    auto kvs = get(k);
    return kvs.empty() ? "<absent>" : kvs.front().value;
  }
  void put(const std::string& k, const std::string& v) {
    auto done = raw_->txn({}, {coord::etcd_txn::put(k, v)}, {});
    ASSERT_TRUE(done.ok()) << done.status().to_string();
  }

  Server etcd_;
  std::string cluster_;
  std::unique_ptr<coord::EtcdClient> raw_;
};

TEST_F(EtcdRegistryTest, ALeaseIsAKeyAttachedToAnEtcdLease) {
  auto reg = open(5000);
  ASSERT_TRUE(reg);
  Result<Lease> lease = reg->acquire("host-a:8080");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_EQ(lease->slot, 0u);
  EXPECT_EQ(lease->datacenter, 0u);
  EXPECT_EQ(lease->worker, 0u);
  EXPECT_EQ(lease->high_water_ms, 0);
  EXPECT_EQ(lease->ttl_ms, 5000);
  // etcd drops the key only when the lease expires, which its holder outlives by
  // fencing first: no wait needed.
  EXPECT_EQ(lease->start_delay_ms, 0);
  const auto worker = get(key("workers", 0));
  ASSERT_EQ(worker.size(), 1u);
  EXPECT_EQ(worker[0].value, "host-a:8080");
  EXPECT_EQ(std::to_string(worker[0].lease), lease->token);
  Result<int64_t> left = raw_->lease_time_to_live(worker[0].lease);
  ASSERT_TRUE(left.ok());
  EXPECT_GE(*left, 3);
  EXPECT_LE(*left, 5);
  // The identity's slot and the mark live without a lease.
  const auto identity = get(key("identities", "host-a:8080"));
  ASSERT_EQ(identity.size(), 1u);
  EXPECT_EQ(identity[0].value, "0");
  EXPECT_EQ(identity[0].lease, 0);
  EXPECT_EQ(reg->describe(), etcd_.url + " cluster " + cluster_);
  EXPECT_TRUE(reg->release(*lease).ok());
  EXPECT_TRUE(get(key("workers", 0)).empty());
  EXPECT_EQ(value(key("identities", "host-a:8080")), "0");
}

TEST_F(EtcdRegistryTest, ManyThreadsAndRegistryObjectsGetDistinctSlots) {
  constexpr int kRegistries = 6;
  constexpr int kThreadsEach = 6;
  constexpr int kRounds = 3;
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
  EXPECT_EQ(*slots.rbegin(), kTotal - 1);  // first free: no gaps
  Result<std::vector<SlotStatus>> listed = regs[0]->status();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), kTotal);
}

TEST_F(EtcdRegistryTest, AnIdentityGetsItsPreviousSlotWhenFree) {
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
  // Another registry object (another process) knows it too: it is in etcd.
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
  Result<Lease> c3 = reg->acquire("c:1");  // c:1 is still alive on slot 2
  ASSERT_TRUE(c3.ok());
  EXPECT_EQ(c3->slot, 3u);
}

TEST_F(EtcdRegistryTest, AnExpiredLeaseFreesItsSlot) {
  auto reg = open(2000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("crashed");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->slot, 0u);
  EXPECT_EQ(a->ttl_ms, 2000);
  const auto started = Clock::now();
  Result<std::vector<SlotStatus>> listed = reg->status();
  while (listed.ok() && !listed->empty() && ms_since(started) < 5000) {
    sleep_ms(50);
    listed = reg->status();
  }
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_TRUE(listed->empty());
  // etcd expires leases on whole seconds and checks about every 500 ms.
  EXPECT_GE(ms_since(started), 1000);
  Result<Lease> b = reg->acquire("newcomer");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 0u);
}

TEST_F(EtcdRegistryTest, ATtlBelowEtcdsMinimumIsRaisedAndReported) {
  // etcd counts whole seconds and, with its default election timeout, grants at least
  // 2 s; the lease says what etcd granted, which is what its holder's fencing follows.
  auto reg = open(500);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("short");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->ttl_ms, 2000);
  auto reg3 = open(2500);
  ASSERT_TRUE(reg3);
  Result<Lease> b = reg3->acquire("rounded");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ttl_ms, 3000);
}

TEST_F(EtcdRegistryTest, RenewKeepsTheLeaseAndStoresTheMarkNeverLowering) {
  auto reg = open(2000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("renewer");
  ASSERT_TRUE(a.ok());
  // Renewed every 500 ms for twice the TTL: still held.
  int64_t mark = 1'700'000'000'000;
  for (int i = 0; i < 9; ++i) {
    sleep_ms(500);
    mark += 500;
    Status s = reg->renew(*a, mark);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  EXPECT_EQ(value(key("workers", 0)), "renewer");
  EXPECT_EQ(value(key("hw", 0)), std::to_string(mark));
  EXPECT_EQ(get(key("hw", 0)).front().lease, 0);
  // A lower mark never lowers the stored one; 0 means "none" and leaves it alone.
  ASSERT_TRUE(reg->renew(*a, mark - 5000).ok());
  ASSERT_TRUE(reg->renew(*a, 0).ok());
  EXPECT_EQ(value(key("hw", 0)), std::to_string(mark));
  Result<std::vector<SlotStatus>> listed = reg->status();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].high_water_ms, mark);

  // The mark outlives the lease: the slot's next holder starts above it.
  ASSERT_TRUE(reg->release(*a).ok());
  EXPECT_TRUE(get(key("workers", 0)).empty());
  Result<Lease> b = reg->acquire("successor");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, mark);
}

TEST_F(EtcdRegistryTest, ConcurrentRenewsOfOneLeaseKeepTheHighestMark) {
  // Four registry objects (four connections) renew one lease at once: the mark must
  // end at the highest, whatever the interleaving (a compare-and-swap, retried).
  std::vector<std::unique_ptr<WorkerRegistry>> regs;
  for (int i = 0; i < 4; ++i) {
    regs.push_back(open());
    ASSERT_TRUE(regs.back());
  }
  Result<Lease> a = regs[0]->acquire("busy");
  ASSERT_TRUE(a.ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        if (!regs[t]->renew(*a, 1000 + i * 4 + t).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(value(key("hw", 0)), std::to_string(1000 + 24 * 4 + 3));
}

TEST_F(EtcdRegistryTest, RenewFailsOnceTheLeaseIsLostAndNeverTakesTheSlotBack) {
  auto reg = open(2000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("slow");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(reg->renew(*a, 100).ok());

  // Expired with nobody else on the slot: lost, and not taken back.
  const auto started = Clock::now();
  while (!get(key("workers", 0)).empty() && ms_since(started) < 5000) sleep_ms(50);
  Status expired = reg->renew(*a, 200);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.code(), StatusCode::kUnavailable);
  EXPECT_NE(expired.message().find("lease on slot 0 lost"), std::string::npos) << expired.message();
  EXPECT_TRUE(coord::is_lease_lost(expired));
  EXPECT_TRUE(get(key("workers", 0)).empty());
  EXPECT_EQ(value(key("hw", 0)), "100");

  // Taken by someone else: the error names the new holder, whose key and mark stay.
  Result<Lease> b = reg->acquire("fast");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, 100);
  Status stolen = reg->renew(*a, 999);
  ASSERT_FALSE(stolen.ok());
  EXPECT_NE(stolen.message().find("lease on slot 0 lost"), std::string::npos);
  // A live lease whose key was deleted (force_release) is lost too, with the holder named.
  auto other = open(2000);
  Result<Lease> c = other->acquire("victim");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(reg->force_release(c->slot).ok());
  Result<Lease> d = reg->acquire("fast2");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->slot, c->slot);
  Status taken = other->renew(*c, 5000);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.message().find("'fast2' holds it now"), std::string::npos) << taken.message();
  EXPECT_EQ(value(key("hw", c->slot)), "<absent>");
  // Releasing a lost lease leaves the new holder alone.
  EXPECT_TRUE(reg->release(*a).ok());
  EXPECT_TRUE(other->release(*c).ok());
  EXPECT_EQ(value(key("workers", 0)), "fast");
  EXPECT_EQ(value(key("workers", d->slot)), "fast2");
  EXPECT_TRUE(reg->renew(*b, 300).ok());
}

TEST_F(EtcdRegistryTest, ReleaseAndForceReleaseFreeTheSlot) {
  auto reg = open();
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("a");
  Result<Lease> b = reg->acquire("b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(reg->release(*a).ok());
  EXPECT_TRUE(get(key("workers", 0)).empty());
  EXPECT_TRUE(reg->release(*a).ok());  // twice is harmless
  ASSERT_TRUE(reg->force_release(1).ok());
  EXPECT_TRUE(get(key("workers", 1)).empty());
  EXPECT_EQ(reg->force_release(1).code(), StatusCode::kNotFound);
  EXPECT_EQ(reg->force_release(1024).code(), StatusCode::kInvalidArgument);
  // b no longer holds it, and learns so at its next renew.
  Status lost = reg->renew(*b, 1);
  EXPECT_EQ(lost.code(), StatusCode::kUnavailable) << lost.to_string();
  EXPECT_TRUE(coord::is_lease_lost(lost));
  Result<Lease> c = reg->acquire("c");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slot, 0u);
  Lease foreign = *c;
  foreign.token = "host#abc";
  EXPECT_EQ(reg->renew(foreign, 1).code(), StatusCode::kInvalidArgument);
}

TEST_F(EtcdRegistryTest, StatusListsHolderMarkAndTimeLeft) {
  auto reg = open(4000);
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("alpha:1");
  Result<Lease> b = reg->acquire("beta:2");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(reg->renew(*b, 1'234'567).ok());
  // A key made by hand, without a lease, is listed as never expiring.
  put(key("workers", 7), "by-hand");
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
  EXPECT_EQ((*listed)[2].expires_in_ms, -1);
  // It is taken, so acquire skips it; a longer cluster name's keys are not ours.
  for (int i = 2; i < 7; ++i) ASSERT_TRUE(reg->acquire("n" + std::to_string(i)).ok());
  Result<Lease> eighth = reg->acquire("n7");
  ASSERT_TRUE(eighth.ok());
  EXPECT_EQ(eighth->slot, 8u);
  auto other = open_at(etcd_.url, options_for(cluster_ + "x"));
  ASSERT_TRUE(other);
  Result<std::vector<SlotStatus>> none = other->status();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(EtcdRegistryTest, ExhaustionNamesTheLimitAndTheLayoutAndKeepsNothing) {
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
  EXPECT_EQ(value(key("identities", "n4")), "<absent>");
}

TEST_F(EtcdRegistryTest, TheBaiduSpaceOf2To22SlotsIsNumberedExactly) {
  auto reg = open(10'000, SlotSpace{0, 22}, "baidu");
  ASSERT_TRUE(reg);
  const uint64_t high = (uint64_t{1} << 22) - 1;
  put(key("identities", "old-node"), std::to_string(high));
  put(key("hw", high), "1700000000123");
  Result<Lease> top = reg->acquire("old-node");
  ASSERT_TRUE(top.ok()) << top.status().to_string();
  EXPECT_EQ(top->slot, high);
  EXPECT_EQ(top->worker, high);
  EXPECT_EQ(top->high_water_ms, 1'700'000'000'123);
  // A remembered slot outside the space (another layout) is not used.
  put(key("identities", "odd"), std::to_string(high + 1));
  Result<Lease> odd = reg->acquire("odd");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->slot, 0u);
  Lease beyond = *odd;
  beyond.slot = high + 1;
  EXPECT_EQ(reg->renew(beyond, 1).code(), StatusCode::kInvalidArgument);
}

TEST_F(EtcdRegistryTest, AHandEditedMarkIsAnErrorNotALowStart) {
  auto reg = open();
  ASSERT_TRUE(reg);
  put(key("hw", 0), "yesterday");
  Result<Lease> a = reg->acquire("a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kIoError) << a.status().to_string();
  EXPECT_NE(a.status().message().find(key("hw", 0)), std::string::npos);
  EXPECT_TRUE(get(key("workers", 0)).empty());  // its lease was given back
  put(key("hw", 0), "5");
  Result<Lease> b = reg->acquire("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->high_water_ms, 5);
  put(key("hw", b->slot), "x");
  EXPECT_EQ(reg->renew(*b, 6).code(), StatusCode::kIoError);
}

TEST(EtcdRegistryOpenTest, BadUrlsAndAMissingServerFailClearlyAndFast) {
  RegistryOptions o;
  for (const char* bad :
       {"etcd://", "etcd://127.0.0.1", "etcd://h:0", "etcd://h:99999", "etcd://h:x",
        "etcd://h:2379/path", "etcd://u:p@h:2379", "etcd://:2379"}) {
    auto r = coord::open_etcd_registry(bad, o);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("etcd://HOST:PORT"), std::string::npos)
        << r.status().message();
  }
  const auto started = Clock::now();
  auto none = coord::open_etcd_registry("etcd://127.0.0.1:" + std::to_string(unused_port()), o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable) << none.status().to_string();
  EXPECT_LT(ms_since(started), 4000);
  RegistryOptions zero_ttl;
  zero_ttl.ttl_ms = 0;
  EXPECT_EQ(coord::open_etcd_registry("etcd://127.0.0.1:1", zero_ttl).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(EtcdClientTest, Base64AndPrefixEnds) {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    std::string back;
    ASSERT_TRUE(coord::base64_decode(coord::base64_encode(s), &back)) << s;
    EXPECT_EQ(back, s);
  }
  EXPECT_EQ(coord::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(coord::base64_encode("fo"), "Zm8=");
  std::string out;
  EXPECT_FALSE(coord::base64_decode("Zm8", &out));
  EXPECT_FALSE(coord::base64_decode("Zm=v", &out));
  EXPECT_FALSE(coord::base64_decode("Z!8=", &out));
  EXPECT_EQ(coord::prefix_range_end("/a/"), "/a0");
  EXPECT_EQ(coord::prefix_range_end("a\xff"), "b");
}

// The checks every backend passes, through `idforge worker` processes as an operator
// runs them.
TEST(EtcdRegistryHarnessTest, WorkerProcessesShareTheEtcdRegistry) {
  Result<std::string> url = Services::get().etcd_url();
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  HarnessConfig config;
  config.registry = *url + "?ttl_ms=2000&cluster=" + unique_tag("harness");
  config.dir = Services::get().make_dir("etcd-workers");
  config.ttl_ms = 2000;
  RegistryHarness h(config);
  EXPECT_TRUE(h.check_distinct_slots(10));
  int64_t freed_after_ms = 0;
  // etcd expires leases on its own schedule (checked about every 500 ms).
  EXPECT_TRUE(h.check_kill_frees_slot(/*max_ms=*/2000 + 1500, &freed_after_ms));
  EXPECT_GE(freed_after_ms, 1000);
  EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/false));
  EXPECT_TRUE(h.check_restart_gets_old_slot(/*after_kill=*/true));
  // A cluster of its own: the holders SIGKILLed above keep their slots for a TTL (an
  // etcd lease needs no start delay, so nothing else waits that long in between).
  config.registry = *url + "?ttl_ms=2000&cluster=" + unique_tag("harness");
  config.dir = Services::get().make_dir("etcd-workers");
  RegistryHarness full(config);
  EXPECT_TRUE(full.check_exhaustion());
}

}  // namespace
}  // namespace idforge::integration