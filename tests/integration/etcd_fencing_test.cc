// etcd going away under a holder of the etcd WorkerRegistry: a frozen, stopped and
// restarted etcd, and a node cut off from etcd that fences itself before a second node
// takes its slot, with no ID issued twice (docs/architecture.md, invariant 3).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

#include "coord/etcd/etcd_registry.h"
#include "coord/lease_keeper.h"
#include "core/worker_registry.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "integration/registry_backends.h"
#include "integration/services.h"
#include "integration/tcp_proxy.h"

namespace idforge::integration {
namespace etcd_fencing_test {

using Clock = std::chrono::steady_clock;

int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

int port_of(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

// A frozen etcd (SIGSTOP: connections open, no answers) fails a renew well within the
// TTL, and a stopped and restarted one is used again without reopening the registry.
// Before that, a registry opened while etcd is frozen for longer than one request's
// timeout still opens once etcd answers: at open no lease is at stake, so the member
// gets the call's time (a loaded CI machine's fresh etcd once took over 400 ms).
TEST(EtcdRegistryServerTest, AFrozenOrRestartedEtcdFailsRenewInTimeThenRecovers) {
  auto& sv = Services::get();
  Result<Server> etcd = sv.start_private(ServerKind::kEtcd, "er-frozen");
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  {
    // TTL 4 s: a request may take 800 ms, the open check 400 + 2000 ms; frozen 1500 ms.
    ASSERT_TRUE(sv.pause(*etcd).ok());
    std::thread thaw([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      EXPECT_TRUE(sv.resume(*etcd).ok());
    });
    const auto opening = Clock::now();
    auto late = open_registry(RegistryKind::kEtcd, etcd->url, registry_options("late", 4000));
    const int64_t took = ms_since(opening);
    thaw.join();
    EXPECT_TRUE(late) << "a registry opened on an etcd frozen for 1500 ms";
    EXPECT_GE(took, 1400) << "the open did not wait for the frozen etcd";
  }
  auto reg = open_registry(RegistryKind::kEtcd, etcd->url, registry_options("frozen", 2000));
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("a");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(sv.pause(*etcd).ok());
  auto started = Clock::now();
  Status s = reg->renew(*a, 1);
  int64_t took = ms_since(started);
  ASSERT_TRUE(sv.resume(*etcd).ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
  EXPECT_FALSE(coord::is_lease_lost(s)) << s.to_string();
  EXPECT_LT(took, 1500);  // well before the keeper fences (1900 ms of the 2000 ms TTL)
  Status back = reg->renew(*a, 2);
  EXPECT_TRUE(back.ok()) << back.to_string();

  ASSERT_TRUE(sv.stop(*etcd).ok());
  started = Clock::now();
  Status down = reg->renew(*a, 3);
  EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.to_string();
  EXPECT_FALSE(coord::is_lease_lost(down));
  EXPECT_LT(ms_since(started), 1500);
  ASSERT_TRUE(sv.restart(*etcd).ok());
  // The data and the lease survive a restart (etcd gives leases a full TTL again).
  Status again = reg->renew(*a, 4);
  EXPECT_TRUE(again.ok()) << again.to_string();
  EXPECT_TRUE(reg->release(*a).ok());
  EXPECT_TRUE(sv.stop(*etcd).ok());
}

// A node issuing IDs while etcd goes away: it stops before the TTL; once etcd is back,
// a second node takes the same slot after the first one's lease expired, and the two
// never issued the same ID. Node A reaches etcd through a proxy that is cut together
// with stopping etcd and stays cut after the restart (a node partitioned away), so A
// is alive but can no longer renew; when the cut heals, A learns its lease is lost.
TEST(EtcdRegistryFencingTest, ACutOffNodeStopsBeforeTheTtlAndASecondNodeNeverRepeatsItsIds) {
  constexpr int64_t kTtlMs = 2000;
  auto& sv = Services::get();
  Result<Server> etcd = sv.start_private(ServerKind::kEtcd, "er-fence");
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  TcpProxy proxy(port_of(etcd->url));
  const std::string via_proxy = "etcd://127.0.0.1:" + std::to_string(proxy.port());
  const RegistryOptions options = registry_options("fence", kTtlMs);
  const Layout layout = Layout::twitter();
  Result<coord::LeaseNodeFields> fields = coord::lease_node_fields(layout);
  ASSERT_TRUE(fields.ok());

  struct Node {
    std::unique_ptr<WorkerRegistry> registry;
    std::unique_ptr<coord::LeaseKeeper> keeper;
    std::unique_ptr<SnowflakeGenerator> generator;
    Lease lease;
    std::mutex mu;
    std::vector<uint64_t> ids;
    Clock::time_point first_ok{};
    Clock::time_point last_ok{};
    std::atomic<bool> done{false};
    std::thread issuer;

    Status start(const std::string& url, const RegistryOptions& o, const std::string& identity,
                 const coord::LeaseNodeFields& f, const Layout& l) {
      Result<std::unique_ptr<WorkerRegistry>> r = coord::open_etcd_registry(url, o);
      if (!r.ok()) return r.status();
      registry = std::move(r).value();
      const auto asked = Clock::now();
      Result<Lease> got = registry->acquire(identity);
      if (!got.ok()) return got.status();
      lease = *got;
      coord::KeeperOptions ko;
      ko.acquired_at = asked;
      keeper = std::make_unique<coord::LeaseKeeper>(*registry, lease, ko);
      SnowflakeOptions so;
      so.layout = l;
      so.nodes = coord::lease_node_values(f, lease);
      so.high_water = &keeper->high_water();
      Result<std::unique_ptr<SnowflakeGenerator>> g = SnowflakeGenerator::create(so);
      if (!g.ok()) return g.status();
      generator = std::move(g).value();
      keeper->attach(generator.get());
      issuer = std::thread([this] {
        while (!done) {
          for (int i = 0; i < 20; ++i) {
            Result<uint64_t> id = generator->next();
            if (!id.ok()) break;
            const auto now = Clock::now();
            std::lock_guard lock(mu);
            if (ids.empty()) first_ok = now;
            last_ok = now;
            ids.push_back(*id);
          }
          sleep_ms(1);
        }
      });
      return Status::Ok();
    }
    void finish() {
      done = true;
      if (issuer.joinable()) issuer.join();
      if (keeper) keeper->stop().ignore_error();
    }
    Clock::time_point last() {
      std::lock_guard lock(mu);
      return last_ok;
    }
  };

  Node a;
  Status started = a.start(via_proxy, options, "node-a:1", *fields, layout);
  ASSERT_TRUE(started.ok()) << started.to_string();
  sleep_ms(1000);
  ASSERT_FALSE(a.generator->fenced());

  // etcd goes away for A (cut) and for everyone (stopped).
  const auto cut_at = Clock::now();
  proxy.cut();
  ASSERT_TRUE(sv.stop(*etcd).ok());
  while (!a.generator->fenced() && ms_since(cut_at) < 5000) sleep_ms(10);
  ASSERT_TRUE(a.generator->fenced())
      << "node A still issues " << ms_since(cut_at) << " ms after losing etcd";
  sleep_ms(100);  // a call in flight at the fence finishes
  const auto a_last = a.last();
  EXPECT_LT(ms_between(cut_at, a_last), kTtlMs) << "node A issued past its TTL";

  // etcd back with its data; A stays cut off. The slot frees when A's lease expires, a
  // full TTL after etcd came back.
  const auto restart_at = Clock::now();
  ASSERT_TRUE(sv.restart(*etcd).ok());
  auto watcher = open_registry(RegistryKind::kEtcd, etcd->url, options);
  ASSERT_TRUE(watcher);
  for (;;) {
    Result<std::vector<SlotStatus>> listed = watcher->status();
    if (!listed.ok()) {  // a restarted etcd may not answer at once on a loaded machine
      ASSERT_LT(ms_since(restart_at), 10'000) << listed.status().to_string();
      sleep_ms(50);
      continue;
    }
    const bool held = std::any_of(listed->begin(), listed->end(),
                                  [&](const SlotStatus& s) { return s.slot == a.lease.slot; });
    if (!held) break;
    ASSERT_LT(ms_since(restart_at), 10'000) << "A's slot was never freed";
    sleep_ms(50);
  }
  EXPECT_GE(ms_since(restart_at), kTtlMs - 100);

  Node b;
  started = b.start(etcd->url, options, "node-b:1", *fields, layout);
  ASSERT_TRUE(started.ok()) << started.to_string();
  EXPECT_EQ(b.lease.slot, a.lease.slot);  // the same worker id: only time keeps IDs apart
  EXPECT_GT(b.lease.high_water_ms, 0);
  sleep_ms(1000);

  // The cut heals: A's next renew finds its lease gone and A stays fenced for good.
  proxy.heal();
  const auto healed_at = Clock::now();
  while (a.keeper->state() != coord::LeaseState::kLost && ms_since(healed_at) < 5000) {
    sleep_ms(20);
  }
  EXPECT_EQ(a.keeper->state(), coord::LeaseState::kLost) << a.keeper->status().last_error;
  sleep_ms(500);
  EXPECT_TRUE(a.generator->fenced());
  EXPECT_FALSE(b.generator->fenced());
  a.finish();
  b.finish();

  EXPECT_EQ(a.last(), a_last) << "node A issued again after it fenced";
  ASSERT_FALSE(a.ids.empty());
  ASSERT_FALSE(b.ids.empty());
  EXPECT_LT(a_last, b.first_ok);
  // B starts above A's stored mark, so all of B's IDs sort after all of A's.
  EXPECT_LT(*std::max_element(a.ids.begin(), a.ids.end()),
            *std::min_element(b.ids.begin(), b.ids.end()));
  std::set<uint64_t> all(a.ids.begin(), a.ids.end());
  all.insert(b.ids.begin(), b.ids.end());
  EXPECT_EQ(all.size(), a.ids.size() + b.ids.size()) << "duplicate IDs";
  EXPECT_TRUE(sv.stop(*etcd).ok());
}

}  // namespace etcd_fencing_test
}  // namespace idforge::integration
