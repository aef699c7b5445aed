// The Redis WorkerRegistry against a real redis-server, where it is Redis's own: its key
// layout, slots that stay inside the layout's space and come back when freed (a counter
// would wrap onto live ids and never free one), a frozen server and one that loses its
// data: the history record and the quarantine it sets, and `idforge serve` nodes that
// must never share a worker id through a flush or a restart without persistence. The
// contract it shares with the other coordinators is in registry_contract_test.cc.
#include "coord/redis/redis_registry.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/held_lease.h"
#include "coord/lease_keeper.h"
#include "core/snowflake_mark.h"
#include "core/worker_registry.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "integration/redis_sentinel.h"
#include "integration/redis_serve_nodes.h"
#include "integration/registry_backends.h"
#include "integration/services.h"
#include "integration/tcp_proxy.h"
#include "support/ports.h"
#include "support/process.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::has;
using test::trim;

using Clock = std::chrono::steady_clock;

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
    return open_registry(RegistryKind::kRedis, redis_.url,
                         registry_options(cluster_, ttl_ms, space, layout));
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
  EXPECT_TRUE(lease->token.starts_with("host-a:8080#")) << lease->token;
  EXPECT_EQ(redis_cli({"GET", key("worker", 0)}), lease->token);
  const int64_t pttl = std::stoll(redis_cli({"PTTL", key("worker", 0)}));
  EXPECT_GT(pttl, 3000);
  EXPECT_LE(pttl, 5000);
  const std::string identity_key = "idforge:" + cluster_ + ":identity:host-a:8080";
  EXPECT_EQ(redis_cli({"GET", identity_key}), "0");
  EXPECT_EQ(redis_cli({"PTTL", identity_key}), "-1");
  EXPECT_TRUE(reg->release(*lease).ok());
}

// The mark's layout sits in its own key beside the mark, written by the renew that
// carries it, left alone by one that does not, and handed to the slot's next holder.
TEST_F(RedisRegistryTest, TheMarksLayoutIsKeptBesideTheMark) {
  auto reg = open(5000);
  ASSERT_TRUE(reg);
  Result<Lease> lease = reg->acquire("host-a:8080");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_EQ(lease->high_water_layout, "");
  const std::string layout = mark_layout_key(Layout::twitter());
  Lease with_layout = *lease;
  with_layout.high_water_layout = layout;
  ASSERT_TRUE(reg->renew(with_layout, 1'700'000'000'000).ok());
  EXPECT_EQ(redis_cli({"GET", key("hw", 0)}), "1700000000000");
  EXPECT_EQ(redis_cli({"GET", key("hwlayout", 0)}), layout);
  ASSERT_TRUE(reg->renew(*lease, 1'700'000'001'000).ok());  // no layout: kept
  EXPECT_EQ(redis_cli({"GET", key("hwlayout", 0)}), layout);
  ASSERT_TRUE(reg->release(*lease).ok());

  Result<Lease> next = reg->acquire("host-b:8080");
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(next->slot, 0u);
  EXPECT_EQ(next->high_water_ms, 1'700'000'001'000);
  EXPECT_EQ(next->high_water_layout, layout);
  EXPECT_TRUE(reg->release(*next).ok());
}

// Redis can lose a lease, and then only the start delay keeps two holders apart: a TTL
// that leaves less than max_drift_ms between the old holder's fence and the expiry is
// refused before any ID is issued.
TEST_F(RedisRegistryTest, ATtlTooShortForTheDriftIsRefusedAtStart) {
  const std::string url = redis_.url + "?ttl_ms=1500&cluster=" + cluster_;
  const std::string dir = Services::get().make_dir("rr-drift");
  Result<coord::OpenedRegistry> opened =
      coord::open_worker_registry(url, Layout::twitter(), "twitter", dir);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto held = coord::HeldLease::acquire(std::move(opened).value(), "drift-node");
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  SnowflakeOptions o;
  o.max_drift_ms = 1000;
  Result<SnowflakeGenerator*> gen = (*held)->make_generator(o);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gen.status().message().find("ttl_ms 1500"), std::string::npos)
      << gen.status().message();
  EXPECT_NE(gen.status().message().find("max_drift_ms 1000"), std::string::npos);
  // The refused node let its slot go.
  held->reset();
  EXPECT_EQ(redis_cli({"EXISTS", key("worker", 0)}), "0");
}

// Slots come from the layout's space, never past its last one, and a freed slot is
// taken again: a counter (INCR) would pass the last id and wrap to 0, onto ids still in
// use, and never give a number back.
TEST_F(RedisRegistryTest, SlotsStayInsideTheSpaceAndAFreedSlotIsTakenAgain) {
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
  // worker 0, where a 5-bit worker counter would wrap to worker 0 again.
  auto opened = coord::open_redis_registry(redis_.url, registry_options(unique_tag("rr")));
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

TEST(RedisRegistryOpenTest, BadUrlsAndAMissingServerFailClearlyAndFast) {
  RegistryOptions o;
  auto bad = coord::open_redis_registry("redis://:s3cret@127.0.0.1:notaport", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bad redis registry URL"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad.status().message().find("s3cret"), std::string::npos);

  const auto started = Clock::now();
  auto none = coord::open_redis_registry(
      "redis://127.0.0.1:" + std::to_string(test_support::unused_loopback_port()), o);
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
  auto reg = coord::open_redis_registry(redis->url, registry_options("frozen", 1000));
  ASSERT_TRUE(reg.ok()) << reg.status().to_string();
  Result<Lease> a = (*reg)->acquire("a");
  ASSERT_TRUE(a.ok());
  const pid_t pid = std::stoi(test_support::read_file(redis->dir + "/redis.pid"));
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
// takes the slot next is quarantined: told to wait two TTLs.
TEST(RedisRegistryServerTest, ARedisThatForgetsEverythingFailsTheHoldersRenew) {
  Result<Server> redis = Services::get().start_private(ServerKind::kRedis, "rr-empty");
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto& sv = Services::get();
  auto reg = coord::open_redis_registry(redis->url, registry_options("empty", 1500));
  ASSERT_TRUE(reg.ok()) << reg.status().to_string();
  Result<Lease> a = (*reg)->acquire("holder");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*reg)->renew(*a, 1000).ok());

  ASSERT_EQ(trim(sv.client(*redis, {"FLUSHALL"}).out), "OK");
  Status lost = (*reg)->renew(*a, 2000);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), StatusCode::kLeaseLost);
  EXPECT_NE(lost.message().find("lease on slot 0 lost"), std::string::npos) << lost.message();
  EXPECT_EQ(trim(sv.client(*redis, {"DBSIZE"}).out), "0");

  // Again, with the server stopped and its files removed.
  Result<Lease> b = (*reg)->acquire("holder");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, 0u);
  EXPECT_EQ(b->high_water_ms, 0);  // the mark went with the data
  EXPECT_GT(b->start_delay_ms, 1500);
  EXPECT_LE(b->start_delay_ms, 2 * 1500);
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
  auto reg_a = coord::open_redis_registry(redis->url, registry_options("keeper", kTtlMs));
  auto reg_b = coord::open_redis_registry(redis->url, registry_options("keeper", kTtlMs));
  ASSERT_TRUE(reg_a.ok() && reg_b.ok());

  Result<std::unique_ptr<Issuer>> a = Issuer::start(**reg_a, "node-a");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  Issuer& first = **a;
  // A brand-new registry has no history recorded: as after a flush, its first lease is
  // quarantined for two TTLs.
  EXPECT_EQ(first.lease().start_delay_ms, 2 * kTtlMs);
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
  // Fenced before the TTL ran out (its next renew found the key gone).
  EXPECT_LT(last_a - flushed_at, std::chrono::milliseconds(kTtlMs));
  // The new holder waited its quarantine, by which time the old one had stopped.
  EXPECT_GE(first_b - second.asked_at(), std::chrono::milliseconds(2 * kTtlMs));
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

// What the history record decides: a brand-new registry, a restarted server (even one
// that kept its data) and a flushed one quarantine the next slot taken; a slot taken
// again on an unchanged history, after the quarantine ran out, starts at once.
TEST(RedisRegistryServerTest, OnlyAChangedHistoryQuarantinesASlot) {
  constexpr int64_t kTtlMs = 300;
  Result<Server> redis = redis_ha::start_redis("rr-history", /*persistence=*/true);
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  auto& sv = Services::get();
  auto reg = coord::open_redis_registry(redis->url, registry_options("history", kTtlMs));
  ASSERT_TRUE(reg.ok()) << reg.status().to_string();
  auto quarantine_after = [&](const char* what) -> int64_t {
    Result<Lease> l = (*reg)->acquire("node");
    EXPECT_TRUE(l.ok()) << what << ": " << l.status().to_string();
    if (!l.ok()) return -1;
    EXPECT_TRUE((*reg)->release(*l).ok()) << what;
    return l->start_delay_ms;
  };
  EXPECT_EQ(quarantine_after("a new registry"), 2 * kTtlMs);
  const std::string history = trim(sv.client(*redis, {"GET", "idforge:history:history"}).out);
  EXPECT_NE(history.find('/'), std::string::npos) << history;  // "<replid>/<run id>"
  // Within the quarantine a slot gets what is left of it.
  const int64_t within = quarantine_after("inside the quarantine");
  EXPECT_GT(within, 0);
  EXPECT_LE(within, 2 * kTtlMs);
  sleep_ms(2 * kTtlMs + 50);
  EXPECT_EQ(quarantine_after("an unchanged history"), 0);

  // Restarted with its data (AOF): a new run id, so a new history.
  ASSERT_TRUE(sv.stop(*redis).ok());
  ASSERT_TRUE(sv.restart(*redis).ok());
  EXPECT_EQ(quarantine_after("a restart"), 2 * kTtlMs);
  EXPECT_NE(trim(sv.client(*redis, {"GET", "idforge:history:history"}).out), history);
  sleep_ms(2 * kTtlMs + 50);
  EXPECT_EQ(quarantine_after("after the restart's quarantine"), 0);

  ASSERT_EQ(trim(sv.client(*redis, {"FLUSHALL"}).out), "OK");
  EXPECT_EQ(quarantine_after("a flush"), 2 * kTtlMs);
  EXPECT_TRUE(sv.stop(*redis).ok());
}

// Three `idforge serve` nodes on one Redis that loses its data (`lose`) while the first
// two issue, cut off from it (a proxy between them and Redis drops their connections)
// so that they cannot learn of it until their fence deadline has passed; the third
// starts right after the loss, straight on Redis, and is given one of the forgotten
// slots. Their IDs, asked for without pause, must never repeat, and no slot may issue
// on two nodes at once: the forgotten holders fence at ttl less a margin after their
// last good renew, and every slot taken after the loss waits out the quarantine. The
// refusals meanwhile say why.
void expect_no_shared_worker_id(const std::string& label, bool persistence,
                                const std::function<Status(const Server&)>& lose) {
  constexpr int64_t kTtlMs = 1500;
  Result<Server> redis = redis_ha::start_redis(label, persistence);
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  TcpProxy proxy(redis_ha::port_of(*redis));
  const std::string cluster = unique_tag(label);
  auto launch = [&](const std::string& name, int port) {
    // A logical node's IDs may run max_drift_ms ahead: it must fit the TTL (held_lease.cc).
    const std::vector<std::string> args = {"--registry",
                                           "redis://127.0.0.1:" + std::to_string(port) +
                                               "?ttl_ms=" + std::to_string(kTtlMs) +
                                               "&cluster=" + cluster,
                                           "--identity",
                                           name,
                                           "--max-drift-ms",
                                           "200"};
    return redis_ha::PullingNode::launch(name, Services::get().make_dir(label + "-" + name), args);
  };
  using std::chrono::milliseconds;
  auto a = launch("node-a", proxy.port());
  auto b = launch("node-b", proxy.port());
  ASSERT_TRUE(a.ok() && b.ok());
  // A new registry: both wait out its quarantine before they listen.
  for (auto* n : {&a, &b}) {
    Status up = (**n)->await(milliseconds(20'000));
    ASSERT_TRUE(up.ok()) << up.to_string();
  }
  (*a)->start_pulling();
  (*b)->start_pulling();
  sleep_ms(1000);

  proxy.cut();
  const auto lost_at = redis_ha::Steady::now();
  Status lost = lose(*redis);
  ASSERT_TRUE(lost.ok()) << lost.to_string();
  auto c = launch("node-c", redis_ha::port_of(*redis));
  ASSERT_TRUE(c.ok());
  // The new node is asked for IDs as soon as it listens; the two cut off hear from Redis
  // again once past their fence deadline (ttl less the margin and the drift).
  bool healed = false;
  for (;;) {
    if (!healed && ms_since(lost_at) >= kTtlMs) {
      proxy.heal();
      healed = true;
    }
    Status listening = (*c)->await(milliseconds(10));
    if (listening.ok()) break;
    ASSERT_EQ(listening.code(), StatusCode::kDeadlineExceeded) << listening.to_string();
    ASSERT_LT(ms_since(lost_at), 20'000) << listening.to_string();
  }
  (*c)->start_pulling();
  if (!healed) {
    sleep_ms(std::max<int64_t>(kTtlMs - ms_since(lost_at), 0));
    proxy.heal();
  }
  std::vector<redis_ha::PullingNode*> nodes = {a->get(), b->get(), c->get()};
  ASSERT_TRUE(
      redis_ha::all_issue_after(nodes, lost_at + milliseconds(kTtlMs), milliseconds(15'000)))
      << "not every node issued again; a: " << (*a)->stderr_text();
  const double back_s = ms_since(lost_at) / 1000.0;
  sleep_ms(700);
  for (auto* n : nodes) n->stop_pulling();

  const redis_ha::IssueReport report = redis_ha::check_issued(nodes);
  std::printf("[ %s ] %s; all three issuing %.1f s after the loss\n", label.c_str(),
              report.summary().c_str(), back_s);
  for (auto* n : nodes) {
    std::printf("[ %s ] %s: %zu batches, %llu refused; first refusal: %s\n", label.c_str(),
                n->name().c_str(), n->batches().size(),
                static_cast<unsigned long long>(n->refused()),
                n->refusals().empty() ? "-" : n->refusals().front().c_str());
  }
  EXPECT_EQ(report.repeated, 0u);
  EXPECT_TRUE(report.overlaps.empty()) << report.summary();
  EXPECT_EQ(report.slot_mismatches, 0u);
  // The forgotten holders were refused in words that say what happened, and each node
  // wrote once to stderr why its new lease waits.
  bool said_lost = false;
  for (auto* n : {a->get(), b->get()}) {
    for (const std::string& r : n->refusals()) {
      said_lost = said_lost || (has(r, "lost") && has(r, "cluster " + cluster));
    }
  }
  EXPECT_TRUE(said_lost) << "a: " << ::testing::PrintToString((*a)->refusals());
  for (auto* n : nodes) {
    EXPECT_TRUE(has(n->stderr_text(), " ms before issuing: no server history was recorded"))
        << n->name() << ": " << n->stderr_text();
  }
  for (auto* n : nodes) EXPECT_TRUE(n->stop().ok()) << n->name();
  EXPECT_TRUE(Services::get().stop(*redis).ok());
}

TEST(RedisRegistryServeTest, AFlushUnderLiveNodesLetsNoTwoShareAWorkerId) {
  expect_no_shared_worker_id("rr-flush", /*persistence=*/true, [](const Server& redis) {
    const std::string out = trim(Services::get().client(redis, {"FLUSHALL"}).out);
    return out == "OK" ? Status::Ok() : Status::IoError("FLUSHALL: " + out);
  });
}

TEST(RedisRegistryServeTest, ARestartWithoutPersistenceLetsNoTwoShareAWorkerId) {
  expect_no_shared_worker_id("rr-empty-restart", /*persistence=*/false, [](const Server& redis) {
    IDFORGE_RETURN_IF_ERROR(Services::get().kill(redis));
    return Services::get().restart(redis);
  });
}

}  // namespace
}  // namespace idforge::integration
