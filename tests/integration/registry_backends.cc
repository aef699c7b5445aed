#include "integration/registry_backends.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/etcd/etcd_client.h"
#include "coord/etcd/etcd_registry.h"
#include "coord/redis/redis_registry.h"
#include "coord/zookeeper/zk_session.h"
#include "coord/zookeeper/zookeeper_registry.h"
#include "integration/services.h"
#include "support/text.h"

namespace idforge::integration {
namespace {

using test::ms_since;
using test::trim;

constexpr RegistryTraits kRedisTraits = {
    .short_ttl_ms = 1000,
    .expires_after_min_ms = 800,
    .expires_after_max_ms = 3000,
    .harness_ttl_ms = 1500,
    .harness_kill_max_ms = 1500 + 1000,
    .harness_kill_min_ms = 1000,
    .first_start_delay_ttls = 2,
    .renew_names_holder_after_expiry = true,
    .release_of_a_lost_lease_fails = true,
    .bad_mark_keeps_slot = true,
};

// etcd expires leases on whole seconds and checks about every 500 ms.
constexpr RegistryTraits kEtcdTraits = {
    .short_ttl_ms = 2000,
    .expires_after_min_ms = 1000,
    .expires_after_max_ms = 5000,
    .harness_ttl_ms = 2000,
    .harness_kill_max_ms = 2000 + 1500,
    .harness_kill_min_ms = 1000,
};

// 4000 ms: the test server grants sessions from 1000 ms, but a holder that renews every
// ttl/3 needs some room on a loaded machine. The server expires a session between ttl
// and ttl + one tick after it last heard from it, and the holder's client pinged at most
// ttl/3 before the kill.
constexpr RegistryTraits kZookeeperTraits = {
    .short_ttl_ms = 2000,
    .harness_ttl_ms = 4000,
    .harness_kill_max_ms = 4000 + 2000,
    .harness_kill_min_ms = 4000 * 2 / 3 - 100,
};

// Keys idforge:<cluster>:worker|identity|hw:<name>, read and written with redis-cli.
class RedisBackend final : public RegistryBackend {
 public:
  RedisBackend(Server server, const std::string& cluster)
      : RegistryBackend(RegistryKind::kRedis, server.url, cluster, kRedisTraits),
        server_(std::move(server)) {}

  std::string mark_key(uint64_t slot) const override { return key("hw", std::to_string(slot)); }
  std::string mark(uint64_t slot) override { return get(mark_key(slot)); }
  void set_mark(uint64_t slot, const std::string& text) override { set(mark_key(slot), text); }
  bool taken(uint64_t slot) override { return cli({"EXISTS", worker_key(slot)}) == "1"; }
  bool held_by(const Lease& lease, const std::string& identity) override {
    // The key holds the token, which is "<identity>#<random>".
    return lease.token.starts_with(identity + "#") && get(worker_key(lease.slot)) == lease.token;
  }
  void take_by_hand(uint64_t slot, const std::string& holder) override {
    set(worker_key(slot), holder);
  }
  std::string remembered(const std::string& identity) override {
    return get(key("identity", identity));
  }
  void remember(const std::string& identity, uint64_t slot) override {
    set(key("identity", identity), std::to_string(slot));
  }

 private:
  std::string key(const std::string& kind, const std::string& name) const {
    return "idforge:" + cluster() + ":" + kind + ":" + name;
  }
  std::string worker_key(uint64_t slot) const { return key("worker", std::to_string(slot)); }
  std::string cli(const std::vector<std::string>& args) {
    test_support::RunResult r = Services::get().client(server_, args);
    EXPECT_EQ(r.exit_code, 0) << "redis-cli " << args.front() << " failed";
    return trim(r.out);
  }
  std::string get(const std::string& k) {
    return cli({"EXISTS", k}) == "1" ? cli({"GET", k}) : std::string(kAbsent);
  }
  void set(const std::string& k, const std::string& v) { EXPECT_EQ(cli({"SET", k, v}), "OK") << k; }

  const Server server_;
};

// Keys /idforge/<cluster>/workers|identities|hw/<name>, through etcd's JSON gateway.
class EtcdBackend final : public RegistryBackend {
 public:
  EtcdBackend(const std::string& url, const std::string& cluster,
              std::unique_ptr<coord::EtcdClient> client)
      : RegistryBackend(RegistryKind::kEtcd, url, cluster, kEtcdTraits),
        client_(std::move(client)) {}

  std::string mark_key(uint64_t slot) const override { return key("hw", std::to_string(slot)); }
  std::string mark(uint64_t slot) override { return value(mark_key(slot)); }
  void set_mark(uint64_t slot, const std::string& text) override { put(mark_key(slot), text); }
  bool taken(uint64_t slot) override { return !get(worker_key(slot)).empty(); }
  bool held_by(const Lease& lease, const std::string& identity) override {
    // The key holds the identity and is attached to the lease the token names.
    const std::vector<coord::EtcdKeyValue> kvs = get(worker_key(lease.slot));
    return !kvs.empty() && kvs.front().value == identity &&
           std::to_string(kvs.front().lease) == lease.token;
  }
  void take_by_hand(uint64_t slot, const std::string& holder) override {
    put(worker_key(slot), holder);
  }
  std::string remembered(const std::string& identity) override {
    return value(key("identities", identity));
  }
  void remember(const std::string& identity, uint64_t slot) override {
    put(key("identities", identity), std::to_string(slot));
  }

 private:
  std::string key(const std::string& kind, const std::string& name) const {
    return "/idforge/" + cluster() + "/" + kind + "/" + name;
  }
  std::string worker_key(uint64_t slot) const { return key("workers", std::to_string(slot)); }
  std::vector<coord::EtcdKeyValue> get(const std::string& k) {
    auto kvs = client_->range(k);
    EXPECT_TRUE(kvs.ok()) << kvs.status().to_string();
    return kvs.ok() ? *kvs : std::vector<coord::EtcdKeyValue>{};
  }
  std::string value(const std::string& k) {
    const std::vector<coord::EtcdKeyValue> kvs = get(k);
    return kvs.empty() ? std::string(kAbsent) : kvs.front().value;
  }
  void put(const std::string& k, const std::string& v) {
    auto done = client_->txn({}, {coord::etcd_txn::put(k, v)}, {});
    EXPECT_TRUE(done.ok()) << done.status().to_string();
  }

  const std::unique_ptr<coord::EtcdClient> client_;
};

// Nodes /idforge/<cluster>/slots|identities|marks/<name>, through a session of its own.
class ZookeeperBackend final : public RegistryBackend {
 public:
  ZookeeperBackend(const std::string& url, const std::string& cluster,
                   std::shared_ptr<coord::ZkSession> session)
      : RegistryBackend(RegistryKind::kZookeeper, url, cluster, kZookeeperTraits),
        session_(std::move(session)) {}

  std::string mark_key(uint64_t slot) const override { return node("marks", slot); }
  std::string mark(uint64_t slot) override { return data(mark_key(slot), nullptr); }
  void set_mark(uint64_t slot, const std::string& text) override { write(mark_key(slot), text); }
  bool taken(uint64_t slot) override {
    coord::ZkNodeStat stat;
    const coord::ZkReply r = session_->exists(node("slots", slot), &stat);
    EXPECT_TRUE(r.ok() || r.code == coord::ZkCode::kNoNode) << r.status.to_string();
    return r.ok();
  }
  bool held_by(const Lease& lease, const std::string& identity) override {
    // The node holds the identity and belongs to the session the token names.
    coord::ZkNodeStat stat;
    return data(node("slots", lease.slot), &stat) == identity &&
           coord::session_hex(stat.ephemeral_owner) == lease.token;
  }
  void take_by_hand(uint64_t slot, const std::string& holder) override {
    write(node("slots", slot), holder);
  }
  std::string remembered(const std::string& identity) override {
    return data(node("identities", identity), nullptr);
  }
  void remember(const std::string& identity, uint64_t slot) override {
    // "slot high_water_ms": the identity's own mark is kept beside its slot.
    write(node("identities", identity), std::to_string(slot) + " 0");
  }

 private:
  std::string base() const { return "/idforge/" + cluster(); }
  std::string node(const std::string& dir, const std::string& name) const {
    return base() + "/" + dir + "/" + name;
  }
  std::string node(const std::string& dir, uint64_t slot) const {
    return node(dir, std::to_string(slot));
  }
  std::string data(const std::string& path, coord::ZkNodeStat* stat) {
    std::string out;
    const coord::ZkReply r = session_->get(path, &out, stat);
    if (r.code == coord::ZkCode::kNoNode) return kAbsent;
    EXPECT_TRUE(r.ok()) << r.status.to_string();
    return out;
  }
  // Sets the node, creating it (persistent) and its parents when missing.
  void write(const std::string& path, const std::string& text) {
    const Status parent = session_->ensure_path(path.substr(0, path.rfind('/')));
    ASSERT_TRUE(parent.ok()) << parent.to_string();
    coord::ZkReply r = session_->set(path, text, -1);
    if (r.code == coord::ZkCode::kNoNode) r = session_->create(path, text, /*ephemeral=*/false);
    EXPECT_TRUE(r.ok()) << r.status.to_string();
  }

  const std::shared_ptr<coord::ZkSession> session_;
};

}  // namespace

void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string registry_kind_name(RegistryKind kind) {
  switch (kind) {
    case RegistryKind::kRedis:
      return "redis";
    case RegistryKind::kEtcd:
      return "etcd";
    case RegistryKind::kZookeeper:
      return "zookeeper";
  }
  return "unknown";
}

RegistryOptions registry_options(const std::string& cluster, int64_t ttl_ms, SlotSpace space,
                                 const std::string& layout) {
  RegistryOptions o;
  o.space = space;
  o.layout_name = layout;
  o.cluster = cluster;
  o.ttl_ms = ttl_ms;
  return o;
}

std::unique_ptr<WorkerRegistry> open_registry(RegistryKind kind, const std::string& url,
                                              const RegistryOptions& options) {
  Result<std::unique_ptr<WorkerRegistry>> r =
      kind == RegistryKind::kRedis  ? coord::open_redis_registry(url, options)
      : kind == RegistryKind::kEtcd ? coord::open_etcd_registry(url, options)
                                    : coord::open_zookeeper_registry(url, options);
  EXPECT_TRUE(r.ok()) << url << ": " << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

std::unique_ptr<WorkerRegistry> RegistryBackend::open(int64_t ttl_ms, SlotSpace space,
                                                      const std::string& layout) const {
  return open_registry(kind_, url_, registry_options(cluster_, ttl_ms, space, layout));
}

Result<std::unique_ptr<RegistryBackend>> RegistryBackend::connect(RegistryKind kind,
                                                                  const std::string& cluster) {
  const ServerKind server_kind = kind == RegistryKind::kRedis  ? ServerKind::kRedis
                                 : kind == RegistryKind::kEtcd ? ServerKind::kEtcd
                                                               : ServerKind::kZookeeper;
  Result<Server> server = Services::get().shared(server_kind);
  if (!server.ok()) return server.status();
  switch (kind) {
    case RegistryKind::kRedis:
      return std::unique_ptr<RegistryBackend>(new RedisBackend(*server, cluster));
    case RegistryKind::kEtcd: {
      Result<std::unique_ptr<coord::EtcdClient>> client = coord::EtcdClient::open(server->url, {});
      if (!client.ok()) return client.status();
      return std::unique_ptr<RegistryBackend>(
          new EtcdBackend(server->url, cluster, std::move(client).value()));
    }
    case RegistryKind::kZookeeper: {
      const std::string hosts = server->url.substr(server->url.find("//") + 2);
      Result<std::shared_ptr<coord::ZkSession>> session =
          coord::ZkSession::open(hosts, 4000, 5000, server->url);
      if (!session.ok()) return session.status();
      return std::unique_ptr<RegistryBackend>(new ZookeeperBackend(server->url, cluster, *session));
    }
  }
  return Status::Internal("unknown registry kind");
}

}  // namespace idforge::integration
