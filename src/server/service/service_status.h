// ServiceStatus and its parts: what IdService::status() reports (/v1/status, INFO,
// /metrics, `idforge tag served`), in plain types. The lease keeper's and the store
// guards' views come from their dependency-free headers; nothing else of a store or
// coordinator reaches the front ends that format them (docs/architecture.md, "Layers").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coord/lease_status.h"
#include "core/worker_registry.h"
#include "idforge/segment_buffer.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "store/guard_status.h"

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

// The lease keeper's and the store guards' views, as the backends report them: plain
// headers with no dependency (coord/lease_status.h, store/guard_status.h), which the
// front ends may include (the fence's exceptions, src/server/CMakeLists.txt).
using LeaseState = coord::LeaseState;
using LeaseStatus = coord::KeeperStatus;
using StoreGuardStatus = store::GuardStatus;
using coord::lease_state_name;

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
