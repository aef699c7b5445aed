// IdService: everything the server hands out, behind one facade the protocol adapters
// call. No protocol code lives here; no ID logic lives in the adapters. It is made of
// parts that each run on their own, so that one backend in trouble holds up only what
// needs it:
//
//   SnowflakePart (service_snowflake.h): the worker-id lease, its keeper, the generator
//     and its own thread that renews the time high-water mark and replaces a lost lease.
//     It never waits on a segment store.
//   SegmentPart (service_segments.h): the segment stores, one prober thread per store,
//     one double buffer per tag loaded under that tag's own lock, and the admin calls.
//     It never waits on the coordinator.
//   Readiness (service_health.h): what /readyz and /v1/status say, per part, from the
//     parts' own state (atomics and short locks; no backend call).
//   UUIDv7 and ULID generators and the metrics, which need no backend at all.
//
// Locks: the facade has none of its own. Each part documents its locks and their order
// in its header; no lock is held across parts (a part never calls another while holding
// one of its locks), so there is no order between parts' locks.
//
// This header is what the front ends see of the service (docs/architecture.md,
// "Layers"): it and the headers it includes name no store or coordinator type, so a
// front end compiles no backend header; the parts and their backends are behind Impl.
//
// Thread-safety: every method may be called from any thread. Methods marked "never
// blocks" are for I/O threads; the others may wait on a store or coordinator and run
// on the worker pool (Session::Next::kBlocking).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/layout.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/service/metrics.h"
#include "server/service/service_config.h"
#include "server/service/service_status.h"

namespace idforge::server {

// A request's count: "" means 1; otherwise 1..max_count. InvalidArgument (not a number,
// 0, negative) or OutOfRange (above the limit), naming the limit.
Result<uint64_t> parse_request_count(std::string_view text, uint64_t max_count);
// A decimal 64-bit ID. InvalidArgument naming the text.
Result<uint64_t> parse_id(std::string_view text);
// This machine's name, for the default identities ("<host>:serve", "<host>:cli",
// "<host>:<http port>"); "localhost" when it has none.
std::string host_name();

class IdService {
 public:
  // Opens the stores, acquires the lease (waiting out its start delay), builds the
  // generators. Errors name the setting at fault.
  static Result<std::unique_ptr<IdService>> start(ServiceConfig config);
  ~IdService();  // stop()
  IdService(const IdService&) = delete;
  IdService& operator=(const IdService&) = delete;

  // Fences the generator and releases the lease. Idempotent.
  Status stop();

  const ServiceConfig& config() const { return config_; }
  Metrics& metrics() { return metrics_; }

  // Snowflake IDs; never blocks longer than the policy's max_wait_ms.
  Status snowflake(std::span<uint64_t> out);

  // Segment IDs of `tag` without waiting: fills from the front of `out` and returns how
  // many it filled; fewer than out.size() means the rest must come from segment()
  // (a store round trip). Errors only for what waiting would not fix (bad tag name).
  // Never blocks.
  Result<size_t> try_segment(std::string_view tag, std::span<uint64_t> out);
  // Segment IDs of `tag`, waiting up to segment_wait_ms for the store. NotFound for an
  // unknown tag. May block.
  Status segment(std::string_view tag, std::span<uint64_t> out);

  // Never block.
  void uuid7(std::span<Uuid> out);
  void ulid(std::span<Ulid> out);

  // A whole range of `tag` straight from its stores (through their guards), for a
  // client that hands the numbers out itself (Tinyid's nextSegmentId). May block.
  Result<Segment> segment_range(std::string_view tag);
  // Whether `token` is one of Tinyid's tokens for business type `biz_type`
  // (ServiceConfig::tinyid_tokens_url). Never blocks.
  bool tinyid_can_visit(std::string_view biz_type, std::string_view token) const;

  // The next serial of `tag` from its template (tag create --template). May block.
  // FailedPrecondition-like InvalidArgument when the tag has no template.
  Result<std::string> serial(std::string_view tag);

  // Layouts by name: "" is the service's own, else a preset name or a custom spec.
  Result<Layout> layout_named(std::string_view name) const;

  // Admin; may block.
  Result<TagInfo> create_tag(const TagSpec& spec);
  Result<std::vector<TagInfo>> list_tags();
  Result<TagInfo> set_step(std::string_view tag, uint64_t step);

  // Never blocks (reads atomics and takes short locks).
  ServiceStatus status() const;
  // Ready = every part is: Snowflake holds a lease in state held, is not fenced and
  // keeps its time reservation renewed; segments have a store that answered its last
  // probe. `why` gets the reasons of the parts that are not. Never blocks.
  bool ready(std::string* why) const;
  // One part's readiness (kAll: the same as ready()). Never blocks.
  PartReadiness readiness(ServicePart part) const;
  // When the worker lease keeper's renew thread last went round its loop
  // (coord::LeaseKeeper::last_round()): the systemd watchdog (systemd_notify.h) stops
  // pinging when it is stuck, so systemd restarts the process. Never blocks.
  std::chrono::steady_clock::time_point lease_keeper_last_round() const;

 private:
  struct Impl;
  explicit IdService(ServiceConfig config);
  // Opens the worker registry a second time for the fleet floor (core/fleet_floor.h),
  // unless it is off or the registry has no shared place (each logged).
  static Status open_fleet_floor(const ServiceConfig& config, Impl& impl);

  ServiceConfig config_;
  Metrics metrics_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idforge::server
