// WorkerRegistry: leases on worker ids, so no two live generators share one
// (docs/architecture.md, invariant 3).
//
// A slot is a number in [0, 2^(datacenter bits + worker bits)); slot s is datacenter
// s >> worker_bits, worker s & (2^worker_bits - 1). acquire() hands an identity
// (host:port) its previous slot when that is free, else the first free one. A lease
// lasts ttl_ms unless renewed; renew() also stores the slot's time high-water mark, so
// the next holder of the slot starts above every ID this one issued. Implementations:
// src/coord/ (static, local, redis, etcd, zookeeper). They block; thread-safe.
//
// Internal: included as "core/worker_registry.h" ("worker_registry.h" in core). Only
// idforge's own layers use a registry (the lease keeper and the server, src/coord/); a
// library user gives a generator its node fields directly (SnowflakeOptions::nodes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet_records.h"
#include "idforge/status.h"

namespace idforge {

struct SlotSpace {
  int datacenter_bits = 5;  // 0 when the layout has no datacenter field
  int worker_bits = 5;

  uint64_t slots() const { return uint64_t{1} << (datacenter_bits + worker_bits); }
  uint64_t datacenter_of(uint64_t slot) const { return slot >> worker_bits; }
  uint64_t worker_of(uint64_t slot) const { return slot & ((uint64_t{1} << worker_bits) - 1); }
};

struct RegistryOptions {
  SlotSpace space;
  std::string layout_name = "twitter";  // for error messages
  std::string cluster = "default";      // namespace in the coordinator: /idforge/<cluster>/...
  int64_t ttl_ms = 10'000;              // lease time to live
  // This node's own directory (`--data-dir`): where `static` keeps its mark and lock,
  // and `local:` with no DIR keeps its slot files. Coordinators ignore it.
  std::string data_dir;
};

struct Lease {
  uint64_t slot = 0;
  uint64_t datacenter = 0;
  uint64_t worker = 0;
  int64_t high_water_ms = 0;  // the slot's stored mark when acquired (0 = none)
  // The layout that mark was written under (mark_layout_key(); empty = unknown). In a
  // renew, the layout of the mark passed: when not empty, stored with it.
  std::string high_water_layout;
  int64_t ttl_ms = 0;  // the coordinator drops the lease this long after a renew
  // How long the holder must wait after acquiring before it issues: a previous holder
  // that lost its lease without knowing it (a coordinator that lost its data) has
  // fenced itself by then. 0 where the backend rules that case out (local, static).
  int64_t start_delay_ms = 0;
  std::string token;  // backend-specific proof of ownership (lease id, random value)
};

// What `idforge worker status` prints, one per taken slot.
struct SlotStatus {
  uint64_t slot = 0;
  std::string holder;          // identity of the holder
  int64_t high_water_ms = 0;   // stored mark
  int64_t expires_in_ms = -1;  // -1 when the backend does not expire leases
};

class WorkerRegistry {
 public:
  virtual ~WorkerRegistry() = default;
  // ResourceExhausted naming the limit when every slot is taken.
  virtual Result<Lease> acquire(const std::string& identity) = 0;
  // Extends the lease by ttl_ms and stores `high_water_ms` (never lowering the stored
  // mark). LeaseLost when the coordinator says the lease is gone (expired, released,
  // or another holder has the slot): the caller stops issuing for good. Any other error
  // (Unavailable, IoError, ...) means the coordinator could not answer: the caller fences
  // and keeps trying.
  virtual Status renew(const Lease& lease, int64_t high_water_ms) = 0;
  virtual Status release(const Lease& lease) = 0;
  // A clean stop: stores `mark` as the slot's high-water mark even where it is below the
  // stored one (a reservation kept ahead that was never used), then releases, so the
  // next start on the slot waits for nothing. The caller has stopped issuing and passes
  // a mark at or above every ID issued under the slot (its last ID's time, and the mark
  // it found at acquire); `mark.layout` as in renew. Written only while this lease holds
  // the slot (LeaseLost otherwise, nothing written). The default keeps the stored mark
  // (renew never lowers it) and releases: right for registries whose marks are not kept
  // ahead of the clock.
  virtual Status release_at_mark(const Lease& lease, int64_t mark_ms);
  virtual Result<std::vector<SlotStatus>> status() = 0;
  // Frees a slot whatever holds it (operator action: `idforge worker release`).
  virtual Status force_release(uint64_t slot) = 0;
  // "redis://127.0.0.1:6379 cluster default", without secrets.
  virtual std::string describe() const = 0;
  // Records that this registry is new (`idforge worker init`), so that its first leases
  // need no start delay: only a registry that makes new leases wait after it may have
  // lost its data (Redis) has anything to record. AlreadyExists, changing nothing,
  // when the registry already holds anything of the cluster: only one never used may be
  // called new. The default has nothing to record.
  virtual Status record_new() { return Status::Ok(); }
  // The records the fleet shares in this registry (the fleet floor keeps what every
  // node took of each segment tag there); null where it has no place the whole fleet
  // shares (static:). Lives as long as the registry.
  virtual FleetRecords* fleet_records() { return nullptr; }
};

// "all 1024 worker slots (2^10: datacenter 5 bits + worker 5 bits) are taken" with
// the layout name, for every backend's exhaustion error.
Status all_slots_taken(const SlotSpace& space, const std::string& layout_name);
// InvalidArgument unless `slot` is inside the space: "slot 4096 is out of range: layout
// twitter has slots 0 to 1023".
Status check_slot(const SlotSpace& space, uint64_t slot, const std::string& layout_name);

}  // namespace idforge
