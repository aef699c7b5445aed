// Metrics: the counters and histograms /metrics exposes (Prometheus text format 0.0.4).
// Recording is lock-free (relaxed atomics) so the I/O threads can count every request.
//
//   metrics.record_request(kHttp, Route::kSnowflake, 200, elapsed_seconds);
//   metrics.record_ids(IdKind::kSnowflake, 100);
//   std::string text = render_metrics(service);   // the /metrics body
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/thread_annotations.h"
#include "idforge/status.h"
#include "server/auth/auth.h"

namespace idforge::server {

class IdService;

// Kinds of IDs, for metrics.
enum class IdKind { kSnowflake, kSegment, kUuid7, kUlid, kSerial };
inline constexpr int kIdKinds = 5;
std::string_view id_kind_name(IdKind kind);

// Every route either front end serves, as a label. RESP commands are routes too.
enum class Route {
  kSnowflake,
  kSegment,
  kUuid7,
  kUlid,
  kSerial,
  kDecode,
  kCompose,
  kLeafSegment,
  kLeafSnowflake,
  kTinyid,  // /tinyid/id/...
  kAdmin,
  kStatus,
  kMetrics,
  kHealth,
  kWeb,
  kRespOther,  // PING, HELLO, INFO, COMMAND, QUIT
  kNotFound,   // no such route or command
  kCount_,
};
std::string_view route_name(Route route);

// Why a request was refused for want of a token (auth.h): none or not a Bearer token
// (HTTP) or not authenticated (RESP NOAUTH); a secret that is no token (401,
// WRONGPASS); a token without the scope (403, NOPERM).
enum class AuthFailure { kMissing, kWrong, kScope };
inline constexpr int kAuthFailures = 3;
std::string_view auth_failure_name(AuthFailure reason);

// Latency buckets (seconds) of the request histogram.
inline constexpr std::array<double, 12> kLatencyBuckets = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5};

// Seconds from `start` to now on the steady clock: a request's latency for
// Metrics::record_request.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class Metrics {
 public:
  static constexpr int kProtocols = 2;
  static constexpr int kHttp = 0;  // the protocol index of each front end
  static constexpr int kResp = 1;
  // Statuses counted per route: HTTP codes as they are; RESP answers are 200 (ok) or
  // 400/404/503 by the error's kind.
  static constexpr std::array<int, 13> kStatuses = {200, 400, 401, 403, 404, 405, 408,
                                                    413, 414, 429, 431, 500, 503};

  void record_request(int protocol, Route route, int status, double seconds) {
    record_requests(protocol, route, status, 1, seconds);
  }
  // `count` requests of one route and status, each taking `seconds`: a pipelined batch
  // costs one update instead of one per command.
  void record_requests(int protocol, Route route, int status, uint64_t count, double seconds);
  void record_ids(IdKind kind, uint64_t count);
  // Tokens and limits (auth.h); rare enough for one counter each, unsharded.
  void record_auth_failure(int protocol, AuthFailure reason);
  // A connection refused over limits.max_connections (NetOptions::on_refused).
  void record_connection_refused() { connections_refused_.fetch_add(1, std::memory_order_relaxed); }
  // `connection`: the connection's own rate (ConnectionLimits), else the token's limit.
  void record_limit_refusal(int protocol, Limit limit, bool connection);
  // The tokens whose count (idforge_tokens) and refusals by token name
  // (idforge_token_refusals_total) /metrics shows; unset: no tokens, neither metric.
  // Kept weakly: the metrics outlive no one's tokens.
  void show_tokens(const std::shared_ptr<const Auth>& auth) IDFORGE_EXCLUDES(tokens_mu_);

  uint64_t requests(int protocol, Route route, int status) const;
  uint64_t ids(IdKind kind) const;
  uint64_t total_requests() const;
  uint64_t auth_failures(int protocol, AuthFailure reason) const;
  uint64_t limit_refusals(int protocol, Limit limit, bool connection) const;

  // Text of every metric: request counters, latency histogram, IDs by kind, and the
  // service's gauges (lease, clock, buffers, time left).
  std::string render(const IdService& service) const IDFORGE_EXCLUDES(tokens_mu_);

 private:
  static constexpr int kRoutes = static_cast<int>(Route::kCount_);
  static constexpr int kStatusSlots = static_cast<int>(kStatuses.size()) + 1;    // + other
  static constexpr int kBuckets = static_cast<int>(kLatencyBuckets.size()) + 1;  // + Inf

  // Each thread counts into its own shard (threads take shards round-robin), so two I/O
  // threads answering a million requests a second never bounce one cache line between
  // cores; readers add the shards up.
  static constexpr int kShards = 8;
  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, kProtocols * kRoutes * kStatusSlots> requests{};
    std::array<std::atomic<uint64_t>, kProtocols * kBuckets> latency{};
    std::array<std::atomic<uint64_t>, kProtocols> latency_sum_ns{};
    std::array<std::atomic<uint64_t>, 8> ids{};
  };
  Shard& shard();
  static size_t request_slot(int protocol, int route, int status_slot) {
    return static_cast<size_t>((protocol * kRoutes + route) * kStatusSlots + status_slot);
  }
  uint64_t sum_requests(size_t slot) const;
  uint64_t sum_latency(size_t slot) const;
  uint64_t latency_sum_ns(int protocol) const;

  std::array<Shard, kShards> shards_{};
  std::array<std::atomic<uint64_t>, kProtocols * kAuthFailures> auth_failures_{};
  std::atomic<uint64_t> connections_refused_{0};
  // [protocol][limit][token, connection]
  std::array<std::atomic<uint64_t>, kProtocols * kLimits * 2> limit_refusals_{};
  mutable Mutex tokens_mu_;
  std::weak_ptr<const Auth> tokens_ IDFORGE_GUARDED_BY(tokens_mu_);
};

// Counts the requests one Session::feed() answers without a job: runs of one route and
// status go in as one update, each timed from when feed() began on the bytes that
// carried it (requests pipelined together arrived together, so that is when each began
// to wait; an upper bound). Two clock reads per batch instead of one per request.
class RequestTally {
 public:
  RequestTally(Metrics& metrics, int protocol)
      : metrics_(metrics), protocol_(protocol), start_(std::chrono::steady_clock::now()) {}
  ~RequestTally() { flush(); }
  RequestTally(const RequestTally&) = delete;
  RequestTally& operator=(const RequestTally&) = delete;

  std::chrono::steady_clock::time_point start() const { return start_; }
  void add(Route route, int status) {
    if (count_ > 0 && (route != route_ || status != status_)) flush();
    route_ = route;
    status_ = status;
    ++count_;
  }

 private:
  void flush() {
    if (count_ == 0) return;
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
    metrics_.record_requests(protocol_, route_, status_, count_, took.count());
    count_ = 0;
  }

  Metrics& metrics_;
  const int protocol_;
  const std::chrono::steady_clock::time_point start_;
  Route route_ = Route::kNotFound;
  int status_ = 200;
  uint64_t count_ = 0;
};

}  // namespace idforge::server
