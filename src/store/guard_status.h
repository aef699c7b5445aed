// What a store's failover guard (store_guard.h) reports: a plain view with no
// dependency, so the server's front ends format it (/v1/status, /metrics) without seeing
// the guard or any store (docs/architecture.md, "Layers"; invariant 5 of
// docs/architecture.md).
#pragma once

#include <cstdint>
#include <string>

namespace idforge::store {

// The guard as it last saw the store.
struct GuardStatus {
  std::string place;     // "0/1"
  std::string identity;  // the verified store history ("" until verified)
  bool verified = false;
  std::string problem;                   // why ranges are not taken now ("" when fine)
  uint64_t refused_ranges = 0;           // ranges at or below what this node served
  uint64_t foreign_ranges = 0;           // ranges committed under an unverified history
  uint64_t identity_changes = 0;         // changes this node applied (moved tags forward)
  uint64_t identity_changes_seen = 0;    // changes another node had applied first
  uint64_t fleet_refused_ranges = 0;     // ranges the fleet floor had taken already
  uint64_t fleet_unrecorded_ranges = 0;  // ranges unused: the fleet floor did not answer
};

}  // namespace idforge::store
