// The etcd WorkerRegistry against a real etcd (3.4, through its JSON gateway), where it
// is etcd's own: its key layout, etcd's minimum TTL, concurrent renews of one lease, and
// its URLs. The contract it shares with the other coordinators is in
// registry_contract_test.cc; etcd_fencing_test.cc covers etcd going away under a holder.
#include "coord/etcd/etcd_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/etcd/etcd_client.h"
#include "core/worker_registry.h"
#include "integration/lease_revoking_proxy.h"
#include "integration/registry_backends.h"
#include "integration/services.h"
#include "support/ports.h"

namespace idforge::integration {
namespace {

using Clock = std::chrono::steady_clock;

class EtcdRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Its own cluster: tests share the server.
    Result<std::unique_ptr<RegistryBackend>> backend =
        RegistryBackend::connect(RegistryKind::kEtcd, unique_tag("er"));
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    backend_ = std::move(backend).value();
    auto raw = coord::EtcdClient::open(backend_->url(), {});
    ASSERT_TRUE(raw.ok()) << raw.status().to_string();
    raw_ = std::move(raw).value();
  }

  std::unique_ptr<WorkerRegistry> open(int64_t ttl_ms = 10'000) { return backend_->open(ttl_ms); }

  std::string key(const std::string& kind, const std::string& name) const {
    return "/idforge/" + backend_->cluster() + "/" + kind + "/" + name;
  }
  // The key as etcd holds it, with its lease; nothing when absent.
  std::vector<coord::EtcdKeyValue> get(const std::string& k) {
    auto kvs = raw_->range(k);
    EXPECT_TRUE(kvs.ok()) << kvs.status().to_string();
    return kvs.ok() ? *kvs : std::vector<coord::EtcdKeyValue>{};
  }

  std::unique_ptr<RegistryBackend> backend_;
  std::unique_ptr<coord::EtcdClient> raw_;
};

TEST_F(EtcdRegistryTest, ALeaseIsAKeyAttachedToAnEtcdLease) {
  auto reg = open(5000);
  ASSERT_TRUE(reg);
  Result<Lease> lease = reg->acquire("host-a:8080");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  const auto worker = get(key("workers", "0"));
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
  ASSERT_TRUE(reg->renew(*lease, 1'700'000'000'000).ok());
  const auto mark = get(key("hw", "0"));
  ASSERT_EQ(mark.size(), 1u);
  EXPECT_EQ(mark[0].value, "1700000000000");
  EXPECT_EQ(mark[0].lease, 0);
  EXPECT_EQ(reg->describe(), backend_->url() + " cluster " + backend_->cluster());
  EXPECT_TRUE(reg->release(*lease).ok());
  EXPECT_TRUE(get(key("workers", "0")).empty());
  EXPECT_EQ(backend_->remembered("host-a:8080"), "0");
  EXPECT_EQ(backend_->mark(0), "1700000000000");
}

// A walk over the slots that outlives its grant (on a slow etcd, racing many others)
// finds its transaction refused whole, "requested lease not found": acquire starts again
// with a new grant, and the slot is held under that one.
TEST_F(EtcdRegistryTest, AWalkThatOutlivesItsGrantStartsAgainWithANewGrant) {
  const std::string url = backend_->url();
  LeaseRevokingProxy proxy(url.substr(url.rfind(':') + 1));
  auto reg = open_registry(RegistryKind::kEtcd, "etcd://127.0.0.1:" + proxy.port(),
                           registry_options(backend_->cluster(), 5000));
  ASSERT_TRUE(reg);
  Result<Lease> lease = reg->acquire("host-a:8080");
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_FALSE(proxy.revoked().empty());
  EXPECT_NE(lease->token, proxy.revoked());
  const auto worker = get(key("workers", std::to_string(lease->slot)));
  ASSERT_EQ(worker.size(), 1u);
  EXPECT_EQ(std::to_string(worker[0].lease), lease->token);
  EXPECT_TRUE(reg->release(*lease).ok());
  reg.reset();  // before the proxy: its connections end with the registry's
}

TEST_F(EtcdRegistryTest, ATokenThatIsNotAnEtcdLeaseIdIsRefused) {
  auto reg = open();
  ASSERT_TRUE(reg);
  Result<Lease> a = reg->acquire("a");
  ASSERT_TRUE(a.ok());
  Lease foreign = *a;
  foreign.token = "host#abc";  // a Redis registry's kind of token
  EXPECT_EQ(reg->renew(foreign, 1).code(), StatusCode::kInvalidArgument);
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
  EXPECT_EQ(backend_->mark(0), std::to_string(1000 + 24 * 4 + 3));
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
  auto none = coord::open_etcd_registry(
      "etcd://127.0.0.1:" + std::to_string(test_support::unused_loopback_port()), o);
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

}  // namespace
}  // namespace idforge::integration