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
// Thread-safety: every method may be called from any thread. Methods marked "never
// blocks" are for I/O threads; the others may wait on a store or coordinator and run
// on the worker pool (Session::Next::kBlocking).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "coord/lease_keeper.h"
#include "idforge/layout.h"
#include "idforge/segment_buffer.h"
#include "idforge/segment_store.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "idforge/time_zone.h"
#include "idforge/ulid.h"
#include "idforge/uuid.h"
#include "server/metrics.h"
#include "store/served_marks.h"
#include "store/store_guard.h"

namespace idforge::server {

inline constexpr uint64_t kDefaultMaxCount = 10'000;

struct ServiceConfig {
  // Snowflake.
  Layout layout = Layout::twitter();
  std::string layout_label = "twitter";  // as the user wrote it, for messages
  RollbackPolicy policy = RollbackPolicy::kLogical;
  int64_t max_drift_ms = 1000;
  int64_t max_wait_ms = 5;
  // State and backends.
  std::string data_dir = "./idforge-data";
  std::vector<std::string> store_urls;  // empty: sqlite:<data_dir>/segments.db
  std::string registry_url;             // empty: local:<data_dir>/workers
  std::string identity;  // empty: <hostname>:serve (idforge serve: <hostname>:<http port>)
  // Requests.
  uint64_t max_count = kDefaultMaxCount;  // most IDs one request may ask for
  // A batch of more IDs is made and written this many at a time, the event loop
  // serving other connections in between, so one client's large batches do not hold up
  // the rest; 0: every batch in one go.
  uint64_t batch_slice = 1024;
  int64_t segment_wait_ms = 1000;      // longest a request waits for a segment
  uint64_t max_step = 1'000'000;       // upper bound of a tag's dynamic step
  int64_t max_clock_step_ms = 10'000;  // a larger forward step is a jump (snowflake.h)
  uint64_t failover_margin = 0;        // a store's changed history moves tags this far; 0: default
  // A store round trip (a probe, a range fetch) or a high-water mark write slower than
  // this is logged as slow (docs/operations.md, "Logs").
  int64_t slow_store_ms = 500;
  bool allow_unsafe_store = false;  // issue from a store whose settings can lose ranges
  // Record each range in the worker registry's fleet floor before use (core/fleet_floor.h).
  bool fleet_floor = true;
  std::string serial_zone;  // time zone of serial dates; empty: UTC
  // Tags shown one by one in /metrics and /v1/status. Past it, /metrics gives one series
  // over all tags and /v1/status lists the first this many by name (?tag= shows any).
  size_t tag_detail_limit = 1000;
  std::string admin_token;  // empty: admin routes are off
  // The MySQL database whose tiny_id_token table holds the tokens of the Tinyid routes
  // (/tinyid/id/...); empty: those routes refuse every token, as Tinyid with no tokens.
  std::string tinyid_tokens_url;
};

// A request's count: "" means 1; otherwise 1..max_count. InvalidArgument (not a number,
// 0, negative) or OutOfRange (above the limit), naming the limit.
Result<uint64_t> parse_request_count(std::string_view text, uint64_t max_count);
// A decimal 64-bit ID. InvalidArgument naming the text.
Result<uint64_t> parse_id(std::string_view text);

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

// One segment store as its prober last saw it.
struct StoreStatus {
  std::string store;           // the store's own description (URL without a password)
  bool up = false;             // answered its last probe (or the last call that reached it)
  std::string error;           // why not, when !up
  int64_t probed_ms_ago = -1;  // since its last probe finished; -1 before the first
  bool probing = false;        // a probe is waiting on the store now
  int64_t probing_ms = 0;      // for how long, when probing
  store::GuardStatus guard;    // the failover guard's view (store_guard.h)
};

struct ServiceStatus {
  std::string layout_label;
  std::string layout_spec;
  std::string policy;
  // Lease.
  bool has_lease = false;
  Lease lease;                    // valid when has_lease
  coord::KeeperStatus keeper;     // state, since_renew_ms, ...
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
  std::vector<store::ServedMarks::Mark> served;
  // Readiness per part, as /readyz?part=... answers it.
  PartReadiness snowflake_ready;
  PartReadiness segments_ready;
  int64_t uptime_ms = 0;
};

// Kinds of IDs, for metrics.
enum class IdKind { kSnowflake, kSegment, kUuid7, kUlid, kSerial };
inline constexpr int kIdKinds = 5;
std::string_view id_kind_name(IdKind kind);

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
