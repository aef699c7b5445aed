// The ZooKeeper WorkerRegistry against a real server, where it is ZooKeeper's own: leases
// that live as long as their session, which ends closed, killed or expired; marks that
// follow an identity; a server that stops or hangs; and the nodes it leaves. The
// contract it shares with the other coordinators is in registry_contract_test.cc.
//
// Session expiry needs a server that stays up while it stops hearing from one client;
// a small TCP proxy between the two, cut on demand, gives exactly that.
#include "coord/zookeeper/zookeeper_registry.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coord/lease_keeper.h"
#include "coord/zookeeper/zk_session.h"
#include "core/worker_registry.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "integration/registry_backends.h"
#include "integration/services.h"
#include "integration/tcp_proxy.h"
#include "support/ports.h"
#include "support/process.h"

namespace idforge::integration {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// Polls `done` every 50 ms for up to max_ms.
bool eventually(const std::function<bool()>& done, int64_t max_ms) {
  const auto start = SteadyClock::now();
  while (!done()) {
    if (ms_since(start) > max_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

std::string port_of(const std::string& url) { return url.substr(url.rfind(':') + 1); }

std::unique_ptr<WorkerRegistry> open(const std::string& url, const std::string& cluster,
                                     int64_t ttl_ms = 4000) {
  return open_registry(RegistryKind::kZookeeper, url, registry_options(cluster, ttl_ms));
}

std::set<uint64_t> taken_slots(WorkerRegistry& registry) {
  std::set<uint64_t> out;
  auto st = registry.status();
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  if (st.ok()) {
    for (const SlotStatus& s : *st) out.insert(s.slot);
  }
  return out;
}

bool is_lost(const Status& s) {
  return s.code() == StatusCode::kLeaseLost && s.message().find("lost") != std::string::npos;
}

class ZookeeperRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> url = Services::get().zookeeper_url();
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
    cluster_ = unique_tag("zk");
  }
  std::unique_ptr<WorkerRegistry> registry(int64_t ttl_ms = 4000) {
    return open(url_, cluster_, ttl_ms);
  }
  // A raw session, to look at and tamper with the nodes.
  std::shared_ptr<coord::ZkSession> raw() {
    auto s = coord::ZkSession::open("127.0.0.1:" + port_of(url_), 4000, 5000, url_);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? *s : nullptr;
  }
  std::string node(const std::string& rest) const { return "/idforge/" + cluster_ + "/" + rest; }

  std::string url_;
  std::string cluster_;
};

TEST(ZookeeperRegistryUrlTest, UrlsAreCheckedAndDescribedWithoutConnecting) {
  RegistryOptions options;
  for (const char* bad :
       {"zookeeper://", "zookeeper:///idforge", "zookeeper://h:0", "zookeeper://h:99999",
        "zookeeper://h:x/p", "zookeeper://h1,,h2", "zookeeper://u:p@h:2181",
        "zookeeper://h:2181/a//b", "zookeeper://h:2181/a/../b"}) {
    auto r = coord::open_zookeeper_registry(bad, options);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto r = coord::open_zookeeper_registry("zookeeper://127.0.0.1:2181", options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->describe(), "zookeeper://127.0.0.1:2181/idforge cluster default");
  options.cluster = "blue";
  r = coord::open_zookeeper_registry("zookeeper://a,b:2182/ids/prod/", options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->describe(), "zookeeper://a:2181,b:2182/ids/prod cluster blue");
  options.cluster = "a/b";
  EXPECT_EQ(coord::open_zookeeper_registry("zookeeper://h:1", options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ZookeeperRegistryUrlTest, NoServerIsUnavailableWithinTheConnectWait) {
  const std::string url =
      "zookeeper://127.0.0.1:" + std::to_string(test_support::unused_loopback_port());
  auto registry = open(url, "default", 1000);
  ASSERT_NE(registry, nullptr);
  const auto start = SteadyClock::now();
  auto lease = registry->acquire("h:1");
  ASSERT_FALSE(lease.ok());
  EXPECT_EQ(lease.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lease.status().message().find(url), std::string::npos) << lease.status().message();
  EXPECT_LT(ms_since(start), 10'000);
}

TEST_F(ZookeeperRegistryTest, ManyRegistriesGetDistinctSlotsAndStatusListsThem) {
  constexpr int kHolders = 12;
  std::vector<std::unique_ptr<WorkerRegistry>> registries;
  std::vector<Lease> leases;
  std::set<uint64_t> slots;
  std::set<std::string> tokens;
  for (int i = 0; i < kHolders; ++i) {
    registries.push_back(registry());
    ASSERT_NE(registries.back(), nullptr);
    auto lease = registries.back()->acquire("host-" + std::to_string(i) + ":8080");
    ASSERT_TRUE(lease.ok()) << lease.status().to_string();
    EXPECT_EQ(lease->datacenter, lease->slot >> 5);
    EXPECT_EQ(lease->worker, lease->slot & 31);
    EXPECT_EQ(lease->start_delay_ms, 0);
    EXPECT_GT(lease->ttl_ms, 0);
    slots.insert(lease->slot);
    tokens.insert(lease->token);
    leases.push_back(*lease);
  }
  EXPECT_EQ(slots.size(), size_t{kHolders});
  EXPECT_EQ(tokens.size(), size_t{kHolders}) << "each registry has its own session";
  auto status = registries[0]->status();
  ASSERT_TRUE(status.ok()) << status.status().to_string();
  ASSERT_EQ(status->size(), size_t{kHolders});
  for (const SlotStatus& s : *status) {
    const auto it = std::find_if(leases.begin(), leases.end(),
                                 [&](const Lease& l) { return l.slot == s.slot; });
    ASSERT_NE(it, leases.end());
    EXPECT_EQ(s.holder, "host-" + std::to_string(it - leases.begin()) + ":8080");
    EXPECT_EQ(s.expires_in_ms, -1);
  }
  for (int i = 0; i < kHolders; ++i) EXPECT_TRUE(registries[i]->release(leases[i]).ok());
  EXPECT_TRUE(taken_slots(*registries[0]).empty());
}

TEST_F(ZookeeperRegistryTest, AReturningIdentityGetsItsOldSlotBack) {
  auto reg = registry();
  ASSERT_NE(reg, nullptr);
  std::vector<Lease> leases;
  for (const char* id : {"a:1", "b:1", "c:1"}) {
    auto lease = reg->acquire(id);
    ASSERT_TRUE(lease.ok()) << lease.status().to_string();
    leases.push_back(*lease);
  }
  EXPECT_EQ(leases[0].slot, 0u);
  EXPECT_EQ(leases[1].slot, 1u);
  EXPECT_EQ(leases[2].slot, 2u);
  ASSERT_TRUE(reg->release(leases[0]).ok());
  ASSERT_TRUE(reg->release(leases[1]).ok());
  auto again = registry();
  auto b = again->acquire("b:1");  // slot 0 is free and lower, but b held 1
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->slot, 1u);
  auto d = again->acquire("d:1");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->slot, 0u);
  // An identity whose slot is taken gets another one, never a shared one.
  auto b2 = again->acquire("b:1");
  ASSERT_TRUE(b2.ok()) << b2.status().to_string();
  EXPECT_EQ(b2->slot, 3u);
}

TEST_F(ZookeeperRegistryTest, DestroyingTheRegistryFreesItsSlotsAtOnce) {
  auto watcher = registry();
  auto holder = registry();
  ASSERT_TRUE(holder->acquire("gone:1").ok());
  EXPECT_EQ(taken_slots(*watcher).size(), 1u);
  holder.reset();  // no release: closing the session deletes its ephemeral nodes
  EXPECT_TRUE(taken_slots(*watcher).empty());
}

// Not a test: the process that TEST_F(..., AKilledHolder...) starts and SIGKILLs.
TEST(ZookeeperRegistryChild, DISABLED_HoldsALeaseUntilKilled) {
  const char* url = std::getenv("IDFORGE_ZK_CHILD_URL");
  const char* cluster = std::getenv("IDFORGE_ZK_CHILD_CLUSTER");
  if (url == nullptr || cluster == nullptr) GTEST_SKIP() << "run by the parent test only";
  auto reg = open(url, cluster, 2000);
  ASSERT_NE(reg, nullptr);
  auto lease = reg->acquire("child:1");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  std::printf("slot %llu ttl %lld\n", static_cast<unsigned long long>(lease->slot),
              static_cast<long long>(lease->ttl_ms));
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(60));
}

TEST_F(ZookeeperRegistryTest, AKilledHolderFreesItsSlotAfterTheSessionTimeout) {
  const std::string dir = Services::get().make_dir("zk-child");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const test_support::Child child = test_support::spawn(
      {self, "--gtest_filter=ZookeeperRegistryChild.DISABLED_HoldsALeaseUntilKilled",
       "--gtest_also_run_disabled_tests"},
      {.env = {"IDFORGE_ZK_CHILD_URL=" + url_, "IDFORGE_ZK_CHILD_CLUSTER=" + cluster_},
       .out_path = dir + "/out",
       .err_path = dir + "/err"});
  ASSERT_GT(child.pid, 0);
  std::string out;
  const bool printed = eventually(
      [&] {
        out = test_support::read_file(child.out_path);
        return out.find("slot ") != std::string::npos && out.find('\n') != std::string::npos;
      },
      30'000);
  if (!printed) ::kill(child.pid, SIGKILL);
  ASSERT_TRUE(printed) << out << test_support::read_file(child.err_path);
  unsigned long long slot = 0;
  long long ttl = 0;
  ASSERT_EQ(std::sscanf(out.c_str() + out.find("slot "), "slot %llu ttl %lld", &slot, &ttl), 2);
  auto reg = registry();
  auto status = reg->status();
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->size(), 1u);
  EXPECT_EQ((*status)[0].holder, "child:1");

  ::kill(child.pid, SIGKILL);
  const auto killed = SteadyClock::now();
  EXPECT_EQ(test_support::reap(child.pid).code, 128 + SIGKILL);
  EXPECT_EQ(taken_slots(*reg).count(slot), 1u) << "a silent holder keeps its slot a while";
  ASSERT_TRUE(eventually([&] { return taken_slots(*reg).count(slot) == 0; }, ttl + 3000));
  const int64_t freed_after = ms_since(killed);
  EXPECT_GE(freed_after, ttl / 2) << "freed by the session timeout, not at once";
  std::printf("slot freed %lld ms after SIGKILL (session timeout %lld ms)\n",
              static_cast<long long>(freed_after), ttl);
  auto back = reg->acquire("child:1");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->slot, slot);
}

TEST_F(ZookeeperRegistryTest, RenewStoresTheMarkAndNeverLowersIt) {
  auto reg = registry();
  auto lease = reg->acquire("a:1");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  EXPECT_EQ(lease->high_water_ms, 0);
  const int64_t mark = unix_ms() + 5000;
  ASSERT_TRUE(reg->renew(*lease, mark).ok());
  ASSERT_TRUE(reg->renew(*lease, mark - 3000).ok());
  auto status = reg->status();
  ASSERT_TRUE(status.ok() && status->size() == 1);
  EXPECT_EQ((*status)[0].high_water_ms, mark);
  ASSERT_TRUE(reg->release(*lease).ok());

  // The slot's mark goes to its next holder, whoever it is ...
  auto other = registry();
  auto b = other->acquire("b:1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->slot, lease->slot);
  EXPECT_EQ(b->high_water_ms, mark);
  // ... and the identity's own mark follows it to another slot (Leaf's clock check).
  auto a = reg->acquire("a:1");
  ASSERT_TRUE(a.ok());
  EXPECT_NE(a->slot, lease->slot);
  EXPECT_EQ(a->high_water_ms, mark);
  EXPECT_EQ(reg->renew(*a, -1).code(), StatusCode::kInvalidArgument);
  Lease forged = *a;
  forged.token = "nonsense";
  EXPECT_EQ(reg->renew(forged, mark).code(), StatusCode::kInvalidArgument);
}

TEST_F(ZookeeperRegistryTest, NodesAreLaidOutAsDocumented) {
  auto reg = registry();
  const std::string identity = "host/with space:1";
  auto lease = reg->acquire(identity);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  const int64_t mark = unix_ms();
  ASSERT_TRUE(reg->renew(*lease, mark).ok());
  auto zk = raw();
  ASSERT_NE(zk, nullptr);
  std::string data;
  coord::ZkNodeStat stat;
  const std::string slot = std::to_string(lease->slot);
  ASSERT_TRUE(zk->get(node("slots/" + slot), &data, &stat).ok());
  EXPECT_EQ(data, identity);
  EXPECT_EQ(coord::session_hex(stat.ephemeral_owner), lease->token);
  ASSERT_TRUE(zk->get(node("identities/host%2Fwith%20space:1"), &data, &stat).ok());
  EXPECT_EQ(data, slot + " " + std::to_string(mark));
  EXPECT_EQ(stat.ephemeral_owner, 0);
  ASSERT_TRUE(zk->get(node("marks/" + slot), &data, &stat).ok());
  EXPECT_EQ(data, std::to_string(mark));

  // A mark that cannot be read is an error, never read as 0.
  ASSERT_TRUE(zk->set(node("marks/" + slot), "soon", -1).ok());
  EXPECT_EQ(reg->renew(*lease, mark + 1).code(), StatusCode::kIoError);
  EXPECT_EQ(reg->status().status().code(), StatusCode::kIoError);
  ASSERT_TRUE(zk->set(node("identities/x:1"), "7", -1).code == coord::ZkCode::kNoNode);
  ASSERT_TRUE(zk->create(node("identities/x:1"), "7", false).ok());
  auto x = reg->acquire("x:1");
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.status().code(), StatusCode::kIoError);
  EXPECT_NE(x.status().message().find("identities/x:1"), std::string::npos);
}

TEST_F(ZookeeperRegistryTest, ForceReleaseFreesASlotAndItsHolderLearnsOnRenew) {
  auto holder = registry();
  auto admin = registry();
  auto lease = holder->acquire("a:1");
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(admin->force_release(lease->slot).ok());
  EXPECT_TRUE(taken_slots(*admin).empty());
  const Status renewed = holder->renew(*lease, unix_ms());
  EXPECT_TRUE(is_lost(renewed)) << renewed.to_string();
  auto taker = admin->acquire("b:1");
  ASSERT_TRUE(taker.ok());
  EXPECT_EQ(taker->slot, lease->slot);
  const Status again = holder->renew(*lease, unix_ms());
  EXPECT_TRUE(is_lost(again)) << again.to_string();
  EXPECT_NE(again.message().find("b:1"), std::string::npos) << again.message();
  // Releasing the lost lease leaves the new holder alone.
  EXPECT_TRUE(holder->release(*lease).ok());
  EXPECT_EQ(taken_slots(*admin).count(lease->slot), 1u);
  EXPECT_EQ(admin->force_release(lease->slot + 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(admin->force_release(1024).code(), StatusCode::kInvalidArgument);
}

TEST_F(ZookeeperRegistryTest, AnExpiredSessionLosesTheLeaseAndANewOneIsOpened) {
  TcpProxy proxy(std::stoi(port_of(url_)));
  const std::string via = "zookeeper://127.0.0.1:" + std::to_string(proxy.port());
  auto reg = open(via, cluster_, 2000);
  auto watcher = registry();
  auto lease = reg->acquire("a:1");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_TRUE(reg->renew(*lease, unix_ms()).ok());

  proxy.cut();
  // Disconnected: renew fails at once, but the lease is not lost yet.
  Status renewed;
  ASSERT_TRUE(eventually([&] { return !(renewed = reg->renew(*lease, unix_ms())).ok(); }, 2000));
  EXPECT_EQ(renewed.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(is_lost(renewed)) << renewed.to_string();
  // The server expires the silent session and deletes its node.
  ASSERT_TRUE(eventually([&] { return taken_slots(*watcher).empty(); }, lease->ttl_ms + 3000));
  proxy.heal();
  ASSERT_TRUE(eventually([&] { return is_lost(reg->renew(*lease, unix_ms())); }, 10'000))
      << reg->renew(*lease, unix_ms()).to_string();
  // The same registry opens a new session for the next acquire.
  auto again = reg->acquire("a:1");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->slot, lease->slot);
  EXPECT_NE(again->token, lease->token);
  EXPECT_TRUE(reg->renew(*again, unix_ms()).ok());
  EXPECT_TRUE(is_lost(reg->renew(*lease, unix_ms())));
}

// Fencing end to end (docs/architecture.md, invariant 3): a generator whose ZooKeeper
// goes silent stops issuing before the server can expire its session and hand the slot
// to someone else.
TEST_F(ZookeeperRegistryTest, ALeaseKeeperFencesItsGeneratorBeforeTheSlotIsFreed) {
  TcpProxy proxy(std::stoi(port_of(url_)));
  auto reg = open("zookeeper://127.0.0.1:" + std::to_string(proxy.port()), cluster_, 3000);
  auto watcher = registry();
  const auto asked = SteadyClock::now();
  auto lease = reg->acquire("gen:1");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  coord::KeeperOptions keeper_options;
  keeper_options.acquired_at = asked;
  coord::LeaseKeeper keeper(*reg, *lease, keeper_options);
  auto fields = coord::lease_node_fields(Layout::twitter());
  ASSERT_TRUE(fields.ok()) << fields.status().to_string();
  SnowflakeOptions options;
  options.nodes = coord::lease_node_values(*fields, *lease);
  options.high_water = &keeper.high_water();
  auto gen = SnowflakeGenerator::create(options);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  keeper.attach(gen->get());
  ASSERT_TRUE((*gen)->next().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(lease->ttl_ms / 2));
  ASSERT_TRUE((*gen)->next().ok()) << "renewed in time";

  proxy.cut();
  const auto cut = SteadyClock::now();
  int64_t fenced_at = -1;
  int64_t freed_at = -1;
  while ((fenced_at < 0 || freed_at < 0) && ms_since(cut) < lease->ttl_ms + 5000) {
    if (fenced_at < 0 && !(*gen)->next().ok()) fenced_at = ms_since(cut);
    if (freed_at < 0 && taken_slots(*watcher).count(lease->slot) == 0) freed_at = ms_since(cut);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("cut at 0: fenced at %lld ms, slot freed at %lld ms (ttl %lld)\n",
              static_cast<long long>(fenced_at), static_cast<long long>(freed_at),
              static_cast<long long>(lease->ttl_ms));
  ASSERT_GE(fenced_at, 0);
  ASSERT_GE(freed_at, 0);
  EXPECT_LT(fenced_at, freed_at);
  // The keeper fences the TTL less its margin after the last renew it sent, which was
  // before the cut.
  EXPECT_LE(fenced_at, coord::default_fence_after_ms(lease->ttl_ms) + 200);
  EXPECT_EQ((*gen)->next().status().code(), StatusCode::kUnavailable);
  // Someone else may take the slot now; the old generator stays fenced, and once it
  // hears that its session expired it knows the lease is lost for good.
  auto taker = watcher->acquire("other:1");
  ASSERT_TRUE(taker.ok()) << taker.status().to_string();
  EXPECT_EQ(taker->slot, lease->slot);
  proxy.heal();
  EXPECT_TRUE(eventually([&] { return keeper.state() == coord::LeaseState::kLost; }, 10'000))
      << coord::lease_state_name(keeper.state()) << ": " << keeper.status().last_error;
  EXPECT_FALSE((*gen)->next().ok());
  keeper.stop().ignore_error();  // its final store fails: the lease is gone
  EXPECT_EQ(taken_slots(*watcher).count(lease->slot), 1u) << "the new holder keeps the slot";
}

TEST(ZookeeperRegistryServerTest, AHungOrStoppedServerFailsRenewWithinTheTtl) {
  Result<Server> server = Services::get().start_private(ServerKind::kZookeeper, "zk-stop");
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto reg = open(server->url, "default", 3000);
  auto lease = reg->acquire("a:1");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  const int64_t ttl = lease->ttl_ms;
  ASSERT_TRUE(reg->renew(*lease, unix_ms()).ok());

  // Hung: the client gives up on the connection after 2/3 of the timeout.
  ASSERT_TRUE(Services::get().pause(*server).ok());
  auto start = SteadyClock::now();
  Status renewed;
  ASSERT_TRUE(eventually([&] { return !(renewed = reg->renew(*lease, unix_ms())).ok(); }, ttl));
  EXPECT_EQ(renewed.code(), StatusCode::kUnavailable) << renewed.to_string();
  EXPECT_LT(ms_since(start), ttl);
  std::printf("hung server: renew failed after %lld ms (ttl %lld)\n",
              static_cast<long long>(ms_since(start)), static_cast<long long>(ttl));
  ASSERT_TRUE(Services::get().resume(*server).ok());
  ASSERT_TRUE(eventually([&] { return reg->renew(*lease, unix_ms()).ok(); }, 10'000));

  // Stopped: the connection drops, and renew fails once it has waited a third of the
  // TTL for the client to reconnect (to another member, in an ensemble).
  ASSERT_TRUE(Services::get().stop(*server).ok());
  start = SteadyClock::now();
  ASSERT_TRUE(eventually([&] { return !(renewed = reg->renew(*lease, unix_ms())).ok(); }, ttl));
  EXPECT_EQ(renewed.code(), StatusCode::kUnavailable) << renewed.to_string();
  EXPECT_LT(ms_since(start), ttl / 3 + 500);
  // Back within the timeout, the server restores the session: the lease is intact.
  ASSERT_TRUE(Services::get().restart(*server).ok());
  ASSERT_TRUE(eventually([&] { return reg->renew(*lease, unix_ms()).ok(); }, 10'000))
      << reg->renew(*lease, unix_ms()).to_string();
  ASSERT_TRUE(Services::get().stop(*server).ok());
}

}  // namespace
}  // namespace idforge::integration
