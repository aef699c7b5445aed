// ServiceStatus and its parts: what IdService::status() reports (/v1/status, INFO,
// /metrics, `idforge tag served`), in the service's own plain types. The backends'
// views (the lease keeper's state, a store guard's counters, the served marks) are
// copied into these by the service's parts, so the front ends that format them never
// include a store or coordinator header (docs/architecture.md, "Layers").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/worker_registry.h"
#include "idforge/segment_buffer.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"

namespace idforge::server {

// One tag's buffers as the status view and /metrics show them.
struct TagStatus {
  std::string tag;
  SegmentBufferStats stats;
};

// Whether one part of the service can do its work now, and if not, why.
struct PartReadiness {
  bool ready = false;
  std::string why;  // empty when ready
};

// The parts /readyz can be asked about.
enum class ServicePart { kAll, kSnowflake, kSegments };
// "" or "all", "snowflake", "segments"; InvalidArgument naming the choices otherwise.
Result<ServicePart> parse_service_part(std::string_view name);

// The worker-id lease keeper's state (coord::LeaseState, in the service's words).
enum class LeaseState {
  kWaiting,  // in the start delay: fenced
  kHeld,     // renewed in time: issuing
  kOverdue,  // no successful renew for fence_after_ms: fenced, still trying
  kLost,     // the coordinator says the lease is gone: fenced for good
  kStopped,  // stopped: fenced, released
};
// "waiting", "held", "overdue", "lost", "stopped": the words /v1/status and INFO show.
std::string_view lease_state_name(LeaseState state);

// The lease keeper as it last saw the lease (coord::KeeperStatus).
struct LeaseStatus {
  LeaseState state = LeaseState::kHeld;
  int64_t since_renew_ms = 0;       // since the last successful renew was sent
  int64_t fence_after_ms = 0;       // fenced once since_renew_ms reaches this
  int64_t start_delay_left_ms = 0;  // while kWaiting: until the start delay is over
  uint64_t renewals = 0;            // successful renews (including the generator's mark stores)
  uint64_t failures = 0;
  std::string last_error;  // of the most recent failed renew; empty if none
};

// A store's failover guard as it last saw the store (store::GuardStatus; invariant 5 of
// docs/architecture.md).
struct StoreGuardStatus {
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

// The highest number of a tag this node served from one store place (store::ServedMarks).
struct ServedMark {
  std::string place;
  std::string tag;
  uint64_t highest = 0;
};

// One segment store as its prober last saw it.
struct StoreStatus {
  std::string store;           // the store's own description (URL without a password)
  bool up = false;             // answered its last probe (or the last call that reached it)
  std::string error;           // why not, when !up
  int64_t probed_ms_ago = -1;  // since its last probe finished; -1 before the first
  bool probing = false;        // a probe is waiting on the store now
  int64_t probing_ms = 0;      // for how long, when probing
  StoreGuardStatus guard;      // the failover guard's view (store_guard.h)
};

struct ServiceStatus {
  std::string layout_label;
  std::string layout_spec;
  std::string policy;
  // Lease.
  bool has_lease = false;
  Lease lease;                    // valid when has_lease
  LeaseStatus keeper;             // state, since_renew_ms, ...
  double lease_seconds_left = 0;  // until the coordinator may expire it (ttl - since renew)
  uint64_t leases_taken = 0;      // 1 at start, +1 per re-acquire after a lost lease
  // Snowflake generator.
  bool fenced = false;
  int64_t clock_offset_ms = 0;  // how far the last issued tick runs ahead of the clock
  SnowflakeCounters counters;
  int64_t time_left_ms = 0;  // until the layout's time field runs out
  // How far the stored time high-water mark runs ahead of the last issued tick (or the
  // clock, if later); IDs past it wait for the Snowflake part's thread to renew it.
  int64_t reserved_ahead_ms = 0;
  std::string reservation_error;  // of the last renewal that failed; "" when it succeeded
  // Segments.
  bool segments_ok = false;  // the segment part is ready (some store answers)
  std::string segments_error;
  std::vector<StoreStatus> stores;  // in the order configured
  std::vector<TagStatus> tags;      // tags with buffers (requested since start)
  // The highest number of each tag this node has served, per store place (kept in
  // DATA_DIR/segments-served): what `idforge tag served` reads.
  std::vector<ServedMark> served;
  // Readiness per part, as /readyz?part=... answers it.
  PartReadiness snowflake_ready;
  PartReadiness segments_ready;
  int64_t uptime_ms = 0;
};

}  // namespace idforge::server
