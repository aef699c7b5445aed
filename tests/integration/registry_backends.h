// The coordinator backends of the WorkerRegistry (Redis, etcd, ZooKeeper) as the tests
// see them, each described once: how to open a registry on the shared test server, where
// it differs from the others by design (RegistryTraits), and how to read and hand-edit
// the keys (ZooKeeper: nodes) a registry keeps, as an operator with redis-cli, etcdctl or
// zkCli would. registry_contract_test.cc runs the same checks on each through this.
//
// Not thread-safe: one RegistryBackend per test, used from the test's thread. A read or
// an edit that fails adds a gtest failure (and a read then answers kAbsent).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include "core/worker_registry.h"
#include "idforge/status.h"
#include "support/text.h"

namespace idforge::integration {

enum class RegistryKind { kRedis, kEtcd, kZookeeper };

// "redis", "etcd", "zookeeper".
std::string registry_kind_name(RegistryKind kind);

// So gtest names the parameter ("etcd") instead of dumping its bytes.
inline void PrintTo(RegistryKind kind, std::ostream* os) { *os << registry_kind_name(kind); }

struct RegistryKindName {
  std::string operator()(const ::testing::TestParamInfo<RegistryKind>& info) const {
    return registry_kind_name(info.param);
  }
};

// The options the registry tests use unless they say otherwise.
RegistryOptions registry_options(const std::string& cluster, int64_t ttl_ms = 10'000,
                                 SlotSpace space = {}, const std::string& layout = "twitter");

// A registry of `kind` at `url`; nullptr and a gtest failure when it cannot be opened.
std::unique_ptr<WorkerRegistry> open_registry(RegistryKind kind, const std::string& url,
                                              const RegistryOptions& options);

// Where the backends differ by design, as the tests expect it.
struct RegistryTraits {
  // A TTL the backend grants as asked, short enough for tests that wait for a lease to
  // run out (etcd counts whole seconds and grants at least 2 s).
  int64_t short_ttl_ms = 0;
  // A lease of short_ttl_ms that nobody renews is gone this long after it was taken, at
  // the earliest and at the latest. 0 for ZooKeeper, whose leases end with their session.
  int64_t expires_after_min_ms = 0;
  int64_t expires_after_max_ms = 0;
  // `idforge worker` processes (registry_harness.h): the TTL in their URL, how long a
  // SIGKILLed holder's slot may stay taken, and how long it stays taken at least.
  int64_t harness_ttl_ms = 0;
  int64_t harness_kill_max_ms = 0;
  int64_t harness_kill_min_ms = 0;
  // The first holder of a brand-new registry waits this many TTLs before it issues
  // (Lease::start_delay_ms): Redis cannot tell a new registry from one that lost every
  // lease without its holders knowing, so it quarantines new leases for 2 x ttl; etcd
  // and ZooKeeper drop a live lease's key (node) only after its holder has fenced.
  int first_start_delay_ttls = 0;
  // A renew whose lease expired and whose slot was taken since names the new holder
  // (Redis reads the key it compared against; etcd only learns its lease is gone).
  bool renew_names_holder_after_expiry = false;
  // Releasing a lease whose slot someone else holds now fails (Redis, naming the
  // holder); etcd revokes its own lease, which holds nothing any more, and succeeds.
  bool release_of_a_lost_lease_fails = false;
  // An acquire that finds the slot's mark unreadable keeps the slot until its TTL runs
  // out (Redis: one script took it before the mark was read); the others give it back.
  bool bad_mark_keeps_slot = false;
};

// The waits of the registry tests, in milliseconds on the steady clock.
using test::ms_since;  // support/text.h
void sleep_ms(int64_t ms);

// What a read answers for a key (node) that does not exist.
inline constexpr const char* kAbsent = "<absent>";

class RegistryBackend {
 public:
  // The shared server of `kind`; `cluster` is the namespace of every call below.
  static Result<std::unique_ptr<RegistryBackend>> connect(RegistryKind kind,
                                                          const std::string& cluster);
  virtual ~RegistryBackend() = default;

  RegistryKind kind() const { return kind_; }
  const std::string& url() const { return url_; }
  const std::string& cluster() const { return cluster_; }
  const RegistryTraits& traits() const { return traits_; }

  // A registry on the cluster; nullptr and a gtest failure when it cannot be opened.
  std::unique_ptr<WorkerRegistry> open(int64_t ttl_ms = 10'000, SlotSpace space = {},
                                       const std::string& layout = "twitter") const;

  // --- the cluster's keys, by hand; identities must be plain (no '/', '%' or spaces) ---

  // The slot's mark key, as errors about it name it.
  virtual std::string mark_key(uint64_t slot) const = 0;
  // The slot's stored mark as text, or kAbsent.
  virtual std::string mark(uint64_t slot) = 0;
  virtual void set_mark(uint64_t slot, const std::string& text) = 0;
  // Whether the slot's lease key exists, whoever holds it.
  virtual bool taken(uint64_t slot) = 0;
  // Whether the slot's lease key is `lease`'s, taken for `identity`.
  virtual bool held_by(const Lease& lease, const std::string& identity) = 0;
  // Takes the slot for `holder` without any TTL, as an operator's edit would.
  virtual void take_by_hand(uint64_t slot, const std::string& holder) = 0;
  // What the cluster remembers of `identity` (its last slot), or kAbsent.
  virtual std::string remembered(const std::string& identity) = 0;
  // Makes the cluster remember `slot` as the one `identity` last held.
  virtual void remember(const std::string& identity, uint64_t slot) = 0;

 protected:
  RegistryBackend(RegistryKind kind, std::string url, std::string cluster, RegistryTraits traits)
      : kind_(kind), url_(std::move(url)), cluster_(std::move(cluster)), traits_(traits) {}

 private:
  const RegistryKind kind_;
  const std::string url_;
  const std::string cluster_;
  const RegistryTraits traits_;
};

}  // namespace idforge::integration
