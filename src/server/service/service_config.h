// ServiceConfig: what IdService is started with (IdService::start): the layout and
// policy, the backends' URLs, the request limits. A plain struct of values, so the
// configuration (src/config) and the front ends read it without seeing a backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "idforge/clock.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"

namespace idforge::server {

inline constexpr uint64_t kDefaultMaxCount = 10'000;

struct ServiceConfig {
  // Snowflake.
  Layout layout = Layout::twitter();
  std::string layout_label = "twitter";  // as the user wrote it, for messages
  RollbackPolicy policy = RollbackPolicy::kLogical;
  int64_t max_drift_ms = 1000;
  int64_t max_wait_ms = 5;
  // Where every generator of the service reads the time; null: system_clock(), read on
  // each call. Not the library's default cached clock: its thread wakes a thousand times
  // a second, 39 ms of CPU a second on this project's VM whether requests come or not,
  // more than the reads it saves at the rates a server sees (docs/benchmarks.md,
  // "Server CPU per request").
  Clock* clock = nullptr;
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

}  // namespace idforge::server
