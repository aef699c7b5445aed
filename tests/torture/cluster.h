// The cluster under torture: PostgreSQL, a Redis segment store and a coordinator (Redis
// or etcd) started by scripts/test-services, and `idforge serve` processes sharing them.
//
// Every server always runs under libfaketime with its own offset file, re-read about
// once a second, so its wall clock can be stepped back while it runs (the monotonic
// clock is left alone, as an NTP step leaves it). Servers keep the ports they got on
// their first start, so clients reconnect to a restarted server at the same address.
//
// Thread-safety: only the main thread calls the methods (children are started from it
// with die_with_parent, see support/process.h); client threads read the atomics of
// ServerProc.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "idforge/status.h"
#include "support/process.h"
#include "support/serve_launch.h"

namespace idforge::torture {

using Clock = std::chrono::steady_clock;

// One service started by scripts/test-services in its own directory.
class Service {
 public:
  // `start_args` follow `start KIND DIR` (e.g. --primary PDIR for a postgres-replica).
  Service(std::string script, std::string kind, std::string dir,
          std::vector<std::string> start_args = {})
      : script_(std::move(script)),
        kind_(std::move(kind)),
        dir_(std::move(dir)),
        start_args_(std::move(start_args)) {}
  Status start();
  Status stop();
  Status restart();
  // Any other command of the script on this server: {"kill"}, {"promote"},
  // {"rebuild-replica", "--primary", PDIR}.
  Status command(const std::vector<std::string>& args);
  const std::string& url() const { return url_; }
  const std::string& kind() const { return kind_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string script_, kind_, dir_, url_;
  std::vector<std::string> start_args_;
};

struct ServerConfig {
  std::string name;      // "node-1": its identity and the name of its files
  std::string identity;  // the registry identity (the spare reuses a node's)
  std::string data_dir;
  std::vector<std::string> extra_args;  // its store, registry, policy flags, ...
  bool redis_tag = false;               // serves the Redis store's tag, not PostgreSQL's two
};

// How a start attempt ended.
enum class StartOutcome { kStarted, kRefusedClockBehind, kPortTaken, kFailed };

class ServerProc {
 public:
  ServerProc(int index, ServerConfig config, std::string idforge, std::string work_dir);

  // Starts the server with its clock `offset_ms` from the real one and waits (up to
  // `timeout`) for its two start-up lines. kRefusedClockBehind: it exited saying the
  // clock is behind its stored high-water mark (the intended refusal).
  StartOutcome start(const std::vector<std::string>& common_args, int64_t offset_ms,
                     std::chrono::milliseconds timeout);
  // The two halves of start(), for starting several servers at once: launch() spawns,
  // await_start() waits for the lines (kPortTaken: start again, on new ports).
  bool launch(const std::vector<std::string>& common_args, int64_t offset_ms);
  StartOutcome await_start(std::chrono::milliseconds timeout);
  // The spare takes over the identity and settings of the server it replaces (its name,
  // files and data dir stay its own).
  void replace(const ServerConfig& other) {
    config_.identity = other.identity;
    config_.extra_args = other.extra_args;
    config_.redis_tag = other.redis_tag;
    serves_redis_tag = other.redis_tag;
  }
  // Steps the running server's wall clock to `offset_ms` (picked up within ~1 s).
  bool set_offset(int64_t offset_ms);
  int64_t offset_ms() const { return offset_ms_; }
  // Until when the server's clock may read behind what it saw before (after a step
  // back, or a start with the clock set back): until then it counts no new rollback
  // and may wait for its clock rather than be ready.
  Clock::time_point clock_behind_until() const { return clock_behind_until_; }
  void note_clock_behind(std::chrono::milliseconds for_how_long) {
    clock_behind_until_ = std::max(clock_behind_until_, Clock::now() + for_how_long);
  }

  void sigkill();
  void sigstop();
  void sigcont();
  // SIGTERM and wait; the exit, or nullopt if it did not end within `timeout` (then
  // it is killed).
  std::optional<test_support::ExitInfo> terminate(std::chrono::milliseconds timeout);
  // An exit nobody asked for (a crash): reaped here, returned once.
  std::optional<test_support::ExitInfo> check_unexpected_exit();
  bool running() const { return child_.running(); }

  // GET /readyz answers 200 within `timeout`.
  bool wait_ready(std::chrono::milliseconds timeout) const;

  int index() const { return index_; }
  const ServerConfig& config() const { return config_; }
  const std::string& err_path() const { return err_path_; }
  std::string last_failure() const { return last_failure_; }

  // Read by the client threads.
  std::atomic<int> http_port{0};
  std::atomic<int> resp_port{0};
  std::atomic<bool> up{false};                // running and meant to take traffic
  std::atomic<int> incarnation{0};            // starts so far
  std::atomic<bool> serves_redis_tag{false};  // ServerConfig::redis_tag
  // No segment request is sent here (its clients ask for Snowflake IDs only), as when a
  // load balancer moves a tag's traffic to other nodes.
  std::atomic<bool> segments_drained{false};

 private:
  int index_;
  ServerConfig config_;
  std::string idforge_, work_dir_, err_path_, offset_path_;
  test_support::ServeChild child_;  // stdout in NAME.N.out for start N, stderr in err_path_
  int64_t offset_ms_ = 0;
  Clock::time_point clock_behind_until_{};
  std::string last_failure_;
};

// A plain HTTP GET on 127.0.0.1:port: status code (0 when unreachable) and body.
struct HttpAnswer {
  int status = 0;
  std::string body;
};
HttpAnswer http_get(int port, const std::string& target, std::chrono::milliseconds timeout);

// "slot 3 (held)" or "slot 0 (lost, fenced)", from the server's /v1/status.
std::string lease_summary(const ServerProc& server);
// The Snowflake generator's clock counters from /v1/status: rollbacks seen (-1 when
// the server does not answer), and a one-line summary.
int64_t clock_rollbacks(const ServerProc& server);
std::string clock_summary(const ServerProc& server);

// The segment store guard's view from /v1/status (each node has one store): the store
// history it verified, ranges refused by the node's own record and by the fleet floor,
// ranges of another history, identity changes applied. `answered` is false when the
// server did not answer.
struct GuardCounts {
  bool answered = false;
  std::string identity;  // "" until verified
  int64_t refused = 0;
  int64_t fleet_refused = 0;
  int64_t foreign = 0;
  int64_t identity_changes = 0;
};
GuardCounts guard_counts(const ServerProc& server);

}  // namespace idforge::torture
