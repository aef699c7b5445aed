#include "server/service/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "server/service/id_service.h"

namespace idforge::server {
namespace {

constexpr std::array<std::string_view, Metrics::kProtocols> kProtocolNames = {"http", "resp"};

int status_slot(int status) {
  for (size_t i = 0; i < Metrics::kStatuses.size(); ++i) {
    if (Metrics::kStatuses[i] == status) return static_cast<int>(i);
  }
  return static_cast<int>(Metrics::kStatuses.size());  // "other"
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename T>
void sample(std::string& out, std::string_view name, T value) {
  fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
}

}  // namespace

std::string_view id_kind_name(IdKind kind) {
  switch (kind) {
    case IdKind::kSnowflake:
      return "snowflake";
    case IdKind::kSegment:
      return "segment";
    case IdKind::kUuid7:
      return "uuid7";
    case IdKind::kUlid:
      return "ulid";
    case IdKind::kSerial:
      return "serial";
  }
  return "unknown";
}

std::string_view route_name(Route route) {
  switch (route) {
    case Route::kSnowflake:
      return "snowflake";
    case Route::kSegment:
      return "segment";
    case Route::kUuid7:
      return "uuid7";
    case Route::kUlid:
      return "ulid";
    case Route::kSerial:
      return "serial";
    case Route::kDecode:
      return "decode";
    case Route::kCompose:
      return "compose";
    case Route::kLeafSegment:
      return "leaf_segment";
    case Route::kLeafSnowflake:
      return "leaf_snowflake";
    case Route::kTinyid:
      return "tinyid";
    case Route::kAdmin:
      return "admin";
    case Route::kStatus:
      return "status";
    case Route::kMetrics:
      return "metrics";
    case Route::kHealth:
      return "health";
    case Route::kWeb:
      return "web";
    case Route::kRespOther:
      return "other";
    case Route::kNotFound:
      return "not_found";
    case Route::kCount_:
      break;
  }
  return "unknown";
}

namespace {
// Constant-initialised, so reading it is one TLS load (no guard or wrapper call).
constexpr unsigned kNoShard = ~0u;
thread_local unsigned t_shard = kNoShard;
std::atomic<unsigned> g_next_shard{0};
}  // namespace

Metrics::Shard& Metrics::shard() {
  unsigned mine = t_shard;
  if (mine == kNoShard) {
    mine = g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
    t_shard = mine;
  }
  return shards_[mine];
}

uint64_t Metrics::sum_requests(size_t slot) const {
  uint64_t n = 0;
  for (const Shard& s : shards_) n += s.requests[slot].load(std::memory_order_relaxed);
  return n;
}

uint64_t Metrics::latency_sum_ns(int protocol) const {
  uint64_t n = 0;
  for (const Shard& s : shards_) {
    n += s.latency_sum_ns[static_cast<size_t>(protocol)].load(std::memory_order_relaxed);
  }
  return n;
}

uint64_t Metrics::sum_latency(size_t slot) const {
  uint64_t n = 0;
  for (const Shard& s : shards_) n += s.latency[slot].load(std::memory_order_relaxed);
  return n;
}

void Metrics::record_requests(int protocol, Route route, int status, uint64_t count,
                              double seconds) {
  if (count == 0) return;
  protocol = std::clamp(protocol, 0, kProtocols - 1);
  const int r = std::clamp(static_cast<int>(route), 0, kRoutes - 1);
  Shard& s = shard();
  s.requests[request_slot(protocol, r, status_slot(status))].fetch_add(count,
                                                                       std::memory_order_relaxed);
  int bucket = 0;
  while (bucket < kBuckets - 1 && seconds > kLatencyBuckets[static_cast<size_t>(bucket)]) ++bucket;
  s.latency[static_cast<size_t>(protocol * kBuckets + bucket)].fetch_add(count,
                                                                         std::memory_order_relaxed);
  s.latency_sum_ns[static_cast<size_t>(protocol)].fetch_add(
      count * static_cast<uint64_t>(std::clamp(seconds, 0.0, 1e6) * 1e9),
      std::memory_order_relaxed);
}

void Metrics::record_ids(IdKind kind, uint64_t count) {
  shard().ids[static_cast<size_t>(kind)].fetch_add(count, std::memory_order_relaxed);
}

std::string_view auth_failure_name(AuthFailure reason) {
  switch (reason) {
    case AuthFailure::kMissing:
      return "missing";
    case AuthFailure::kWrong:
      return "wrong";
    case AuthFailure::kScope:
      return "scope";
  }
  return "unknown";
}

namespace {
size_t auth_slot(int protocol, AuthFailure reason) {
  return static_cast<size_t>(std::clamp(protocol, 0, Metrics::kProtocols - 1) * kAuthFailures +
                             static_cast<int>(reason));
}
size_t limit_slot(int protocol, Limit limit, bool connection) {
  return static_cast<size_t>(
      (std::clamp(protocol, 0, Metrics::kProtocols - 1) * kLimits + static_cast<int>(limit)) * 2 +
      (connection ? 1 : 0));
}
}  // namespace

void Metrics::record_auth_failure(int protocol, AuthFailure reason) {
  auth_failures_[auth_slot(protocol, reason)].fetch_add(1, std::memory_order_relaxed);
}

void Metrics::record_limit_refusal(int protocol, Limit limit, bool connection) {
  limit_refusals_[limit_slot(protocol, limit, connection)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t Metrics::auth_failures(int protocol, AuthFailure reason) const {
  return auth_failures_[auth_slot(protocol, reason)].load(std::memory_order_relaxed);
}

uint64_t Metrics::limit_refusals(int protocol, Limit limit, bool connection) const {
  return limit_refusals_[limit_slot(protocol, limit, connection)].load(std::memory_order_relaxed);
}

void Metrics::show_tokens(const std::shared_ptr<const Auth>& auth) {
  MutexLock lock(tokens_mu_);
  tokens_ = auth;
}

uint64_t Metrics::requests(int protocol, Route route, int status) const {
  return sum_requests(request_slot(protocol, static_cast<int>(route), status_slot(status)));
}

uint64_t Metrics::ids(IdKind kind) const {
  uint64_t n = 0;
  for (const Shard& s : shards_)
    n += s.ids[static_cast<size_t>(kind)].load(std::memory_order_relaxed);
  return n;
}

uint64_t Metrics::total_requests() const {
  uint64_t total = 0;
  for (const Shard& s : shards_) {
    for (const auto& n : s.requests) total += n.load(std::memory_order_relaxed);
  }
  return total;
}

std::string Metrics::render(const IdService& service) const {
  std::string out;
  out.reserve(8192);
  auto to = [&out] { return std::back_inserter(out); };

  header(out, "idforge_requests_total", "counter",
         "Requests answered, by protocol, route (or RESP command group) and status.");
  for (int p = 0; p < kProtocols; ++p) {
    for (int r = 0; r < kRoutes; ++r) {
      for (int st = 0; st < kStatusSlots; ++st) {
        const uint64_t n = sum_requests(request_slot(p, r, st));
        if (n == 0) continue;
        const std::string status = st < static_cast<int>(kStatuses.size())
                                       ? std::to_string(kStatuses[static_cast<size_t>(st)])
                                       : "other";
        fmt::format_to(
            to(), "idforge_requests_total{{protocol=\"{}\",route=\"{}\",status=\"{}\"}} {}\n",
            kProtocolNames[static_cast<size_t>(p)], route_name(static_cast<Route>(r)), status, n);
      }
    }
  }

  header(out, "idforge_request_duration_seconds", "histogram",
         "Time from a complete request to its answer, by protocol.");
  for (int p = 0; p < kProtocols; ++p) {
    uint64_t cumulative = 0;
    for (int b = 0; b < kBuckets; ++b) {
      cumulative += sum_latency(static_cast<size_t>(p * kBuckets + b));
      const std::string le =
          b < kBuckets - 1 ? fmt::format("{}", kLatencyBuckets[static_cast<size_t>(b)]) : "+Inf";
      fmt::format_to(to(),
                     "idforge_request_duration_seconds_bucket{{protocol=\"{}\",le=\"{}\"}} {}\n",
                     kProtocolNames[static_cast<size_t>(p)], le, cumulative);
    }
    fmt::format_to(to(), "idforge_request_duration_seconds_sum{{protocol=\"{}\"}} {}\n",
                   kProtocolNames[static_cast<size_t>(p)],
                   static_cast<double>(latency_sum_ns(p)) / 1e9);
    fmt::format_to(to(), "idforge_request_duration_seconds_count{{protocol=\"{}\"}} {}\n",
                   kProtocolNames[static_cast<size_t>(p)], cumulative);
  }

  header(out, "idforge_ids_issued_total", "counter", "IDs handed out, by kind.");
  for (int k = 0; k < kIdKinds; ++k) {
    fmt::format_to(to(), "idforge_ids_issued_total{{kind=\"{}\"}} {}\n",
                   id_kind_name(static_cast<IdKind>(k)), ids(static_cast<IdKind>(k)));
  }

  header(out, "idforge_connections_refused_total", "counter",
         "Connections refused because limits.max_connections were open (answered 'max number "
         "of clients reached' and closed).");
  sample(out, "idforge_connections_refused_total",
         connections_refused_.load(std::memory_order_relaxed));
  // Tokens (auth.h): the labels are fixed words, never a token's secret or name.
  header(out, "idforge_auth_failures_total", "counter",
         "Requests refused for want of a token: none (missing), not a token (wrong), or a "
         "token without the scope (scope).");
  for (int p = 0; p < kProtocols; ++p) {
    for (int r = 0; r < kAuthFailures; ++r) {
      const auto reason = static_cast<AuthFailure>(r);
      fmt::format_to(to(), "idforge_auth_failures_total{{protocol=\"{}\",reason=\"{}\"}} {}\n",
                     kProtocolNames[static_cast<size_t>(p)], auth_failure_name(reason),
                     auth_failures(p, reason));
    }
  }
  header(out, "idforge_limit_refusals_total", "counter",
         "Requests refused by a limit (rate, in_flight, max_ids) of their token or of their "
         "connection (scope).");
  for (int p = 0; p < kProtocols; ++p) {
    for (int l = 0; l < kLimits; ++l) {
      const auto limit = static_cast<Limit>(l);
      for (bool connection : {false, true}) {
        if (connection && limit != Limit::kRate) continue;  // a connection has a rate only
        fmt::format_to(
            to(), "idforge_limit_refusals_total{{protocol=\"{}\",limit=\"{}\",scope=\"{}\"}} {}\n",
            kProtocolNames[static_cast<size_t>(p)], limit_name(limit),
            connection ? "connection" : "token", limit_refusals(p, limit, connection));
      }
    }
  }
  std::shared_ptr<const Auth> auth;
  {
    MutexLock lock(tokens_mu_);
    auth = tokens_.lock();
  }
  if (auth) {
    const std::shared_ptr<const TokenTable> table = auth->table();
    header(out, "idforge_tokens", "gauge", "Tokens loaded from the tokens file.");
    sample(out, "idforge_tokens", table->size());
    // By the token's name= (checked to be label-safe), never its secret.
    header(out, "idforge_token_refusals_total", "counter",
           "Requests of a token refused for its scope or by one of its limits, by token name.");
    for (const Token& token : table->tokens()) {
      const TokenState& state = *token.state;
      fmt::format_to(to(), "idforge_token_refusals_total{{token=\"{}\",reason=\"scope\"}} {}\n",
                     token.spec.name, state.scope_refusals.load(std::memory_order_relaxed));
      for (int l = 0; l < kLimits; ++l) {
        fmt::format_to(
            to(), "idforge_token_refusals_total{{token=\"{}\",reason=\"{}\"}} {}\n",
            token.spec.name, limit_name(static_cast<Limit>(l)),
            state.limit_refusals[static_cast<size_t>(l)].load(std::memory_order_relaxed));
      }
    }
  }

  const ServiceStatus s = service.status();
  header(out, "idforge_clock_rollback_events_total", "counter",
         "Times the Snowflake generator saw the clock step back.");
  sample(out, "idforge_clock_rollback_events_total", s.counters.rollbacks);
  header(out, "idforge_clock_jump_events_total", "counter",
         "Forward clock steps larger than max_clock_step_ms (IDs kept to the trusted time).");
  sample(out, "idforge_clock_jump_events_total", s.counters.clock_jumps);
  header(out, "idforge_clock_borrowed_ms_total", "counter",
         "Milliseconds of ticks issued ahead of the clock (logical policy).");
  sample(out, "idforge_clock_borrowed_ms_total", s.counters.borrowed_ms);
  header(out, "idforge_clock_waited_ms_total", "counter",
         "Milliseconds spent waiting for the clock.");
  sample(out, "idforge_clock_waited_ms_total", s.counters.waited_ms);
  header(out, "idforge_clock_offset_ms", "gauge",
         "How far the last issued tick runs ahead of the clock.");
  sample(out, "idforge_clock_offset_ms", s.clock_offset_ms);
  header(out, "idforge_snowflake_failures_total", "counter",
         "Snowflake calls that returned an error (fenced, clock, exhausted).");
  sample(out, "idforge_snowflake_failures_total", s.counters.failures);
  header(out, "idforge_snowflake_fenced", "gauge", "1 while the generator refuses to issue.");
  sample(out, "idforge_snowflake_fenced", s.fenced ? 1 : 0);
  header(out, "idforge_layout_time_left_seconds", "gauge",
         "Seconds until the layout's time field runs out.");
  sample(out, "idforge_layout_time_left_seconds", s.time_left_ms / 1000);

  header(out, "idforge_lease_seconds_left", "gauge",
         "Seconds until the coordinator may expire the worker-id lease.");
  sample(out, "idforge_lease_seconds_left", s.lease_seconds_left);
  header(out, "idforge_lease_held", "gauge", "1 while the worker-id lease is held and renewed.");
  sample(out, "idforge_lease_held", s.has_lease && s.keeper.state == LeaseState::kHeld ? 1 : 0);
  header(out, "idforge_lease_renewals_total", "counter", "Successful lease renewals.");
  sample(out, "idforge_lease_renewals_total", s.keeper.renewals);
  header(out, "idforge_lease_renew_failures_total", "counter", "Failed lease renewals.");
  sample(out, "idforge_lease_renew_failures_total", s.keeper.failures);
  header(out, "idforge_leases_taken_total", "counter",
         "Leases acquired (1 at start, one more after each lost lease).");
  sample(out, "idforge_leases_taken_total", s.leases_taken);

  header(out, "idforge_segment_store_up", "gauge", "1 when the segment store answered last time.");
  sample(out, "idforge_segment_store_up", s.segments_ok ? 1 : 0);
  // The failover guard (store_guard.h): one counter per store place.
  const struct {
    const char* name;
    const char* help;
    uint64_t StoreGuardStatus::*field;
  } guard_counters[] = {
      {"idforge_segment_ranges_refused_total",
       "Ranges a store handed out at or below what this node had served of the tag.",
       &StoreGuardStatus::refused_ranges},
      {"idforge_segment_ranges_fleet_refused_total",
       "Ranges a store handed out that the fleet floor says some node had taken already.",
       &StoreGuardStatus::fleet_refused_ranges},
      {"idforge_segment_ranges_fleet_unrecorded_total",
       "Ranges not used because the worker registry did not record them in the fleet floor.",
       &StoreGuardStatus::fleet_unrecorded_ranges},
      {"idforge_segment_ranges_foreign_total",
       "Ranges skipped because another store history than the verified one committed them.",
       &StoreGuardStatus::foreign_ranges},
      {"idforge_segment_store_identity_changes_total",
       "Store history changes this node applied (moved every tag forward by the margin).",
       &StoreGuardStatus::identity_changes},
  };
  for (const auto& counter : guard_counters) {
    header(out, counter.name, "counter", counter.help);
    for (const StoreStatus& st : s.stores) {
      fmt::format_to(to(), "{}{{place=\"{}\"}} {}\n", counter.name, st.guard.place,
                     st.guard.*counter.field);
    }
  }
  // Per tag while the node has served at most segment.tag_detail_limit tags; past it
  // one series without the tag label per metric (sums, the emptiest buffer, the slowest
  // refill), so /metrics stays small however many tags a fleet runs.
  header(out, "idforge_segment_tags", "gauge", "Tags this node has buffers for.");
  sample(out, "idforge_segment_tags", s.tags.size());
  const bool per_tag = s.tags.size() <= service.config().tag_detail_limit;
  struct TagSeries {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const TagStatus&);
    bool sum;  // past the limit: the sum over tags, or else the most of them
  };
  constexpr auto fill_left = [](const TagStatus& t) {
    return t.stats.current_count == 0
               ? 0.0
               : static_cast<double>(t.stats.current_count - t.stats.current_used) /
                     static_cast<double>(t.stats.current_count);
  };
  const TagSeries series[] = {
      {"idforge_segment_buffer_fill", "gauge",
       "Share of a tag's current segment still unused (buffer=\"current\") and whether the "
       "next segment is loaded (buffer=\"next\"); past the tag detail limit, the emptiest tag's of "
       "those without a next segment, else of all.",
       nullptr, false},
      {"idforge_segment_refill_latency_ms", "gauge",
       "How long the tag's last segment allocation took; past the tag detail limit, the slowest "
       "tag's.",
       [](const TagStatus& t) { return static_cast<double>(t.stats.last_fetch_ms); }, false},
      {"idforge_segment_fetches_total", "counter", "Segments allocated, by tag.",
       [](const TagStatus& t) { return static_cast<double>(t.stats.fetches); }, true},
      {"idforge_segment_fetch_failures_total", "counter",
       "Segment allocations that failed, by tag.",
       [](const TagStatus& t) { return static_cast<double>(t.stats.fetch_failures); }, true},
      {"idforge_segment_waits_total", "counter",
       "Requests that waited because both of the tag's buffers were empty.",
       [](const TagStatus& t) { return static_cast<double>(t.stats.waits); }, true},
  };
  for (const TagSeries& ts : series) {
    header(out, ts.name, ts.type, ts.help);
    if (ts.value == nullptr) {  // the fill gauge: two series a tag
      if (per_tag) {
        for (const TagStatus& t : s.tags) {
          fmt::format_to(to(), "{}{{tag=\"{}\",buffer=\"current\"}} {}\n", ts.name, t.tag,
                         fill_left(t));
          fmt::format_to(to(), "{}{{tag=\"{}\",buffer=\"next\"}} {}\n", ts.name, t.tag,
                         t.stats.next_ready ? 1 : 0);
        }
      } else {
        // The emptiest tag without a next segment, or, when every tag has one, the
        // emptiest tag: IdforgeSegmentBufferLow then fires exactly when it would for
        // some tag's own series.
        double least_waiting = 2.0;
        double least = 1.0;
        for (const TagStatus& t : s.tags) {
          least = std::min(least, fill_left(t));
          if (!t.stats.next_ready) least_waiting = std::min(least_waiting, fill_left(t));
        }
        const bool waiting = least_waiting <= 1.0;
        fmt::format_to(to(), "{}{{buffer=\"current\"}} {}\n", ts.name,
                       waiting ? least_waiting : least);
        fmt::format_to(to(), "{}{{buffer=\"next\"}} {}\n", ts.name, waiting ? 0 : 1);
      }
      continue;
    }
    if (per_tag) {
      for (const TagStatus& t : s.tags) {
        fmt::format_to(to(), "{}{{tag=\"{}\"}} {}\n", ts.name, t.tag, ts.value(t));
      }
      continue;
    }
    double total = 0;
    for (const TagStatus& t : s.tags) {
      total = ts.sum ? total + ts.value(t) : std::max(total, ts.value(t));
    }
    fmt::format_to(to(), "{} {}\n", ts.name, total);
  }
  header(out, "idforge_uptime_seconds", "gauge", "Seconds since the service started.");
  sample(out, "idforge_uptime_seconds", static_cast<double>(s.uptime_ms) / 1000.0);
  return out;
}

}  // namespace idforge::server
