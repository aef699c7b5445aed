// The state of one torture run, shared by the schedule (faults.cc) and the driver
// (torture.cc): the services, the servers, what was injected and what went wrong.
// Used from the main thread only; the client threads see only the ServerProc atomics.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "clients.h"
#include "cluster.h"

namespace idforge::torture {

// The segment tags, by Kind - kSegmentA: two in PostgreSQL, one in the Redis store.
inline constexpr const char* kTags[3] = {"torture_a", "torture_b", "torture_r"};
inline constexpr int64_t kTagSteps[3] = {1000, 100, 100};
// --max-step of every node: a tag's buffers hold at most two ranges of this many.
inline constexpr uint64_t kMaxStep = 5000;

// "snowflake", "segment torture_a", ...
inline std::string kind_name(Kind kind) {
  return kind == kSnowflake ? "snowflake" : std::string("segment ") + kTags[kind - kSegmentA];
}

struct Options {
  bool short_run = false;
  double minutes = 10;
  uint64_t target_ids = 1'000'000;  // the short run must reach it
  uint64_t seed = 0;
  std::string registry = "redis";  // redis or etcd
  std::string idforge;
  std::string scripts;
  bool keep = false;
  bool sabotage = false;  // two servers share a static worker id: the check must fail
  // false: the nodes run with --fleet-floor false, to show that the faults of a store
  // that goes back with its identity repeat IDs without it (docs/reliability.md).
  bool fleet_floor = true;
  double rate = 0;  // IDs per second, all clients together; 0: as fast as they can
  // Redis leases are safe by timing only while max_drift_ms < ttl_ms / 3 (held_lease.cc):
  // 3600 leaves room for the default 1000.
  int ttl_ms = 3600;
  int threads = 2;  // client threads per protocol per server
};

class Run {
 public:
  explicit Run(Options opts) : options(std::move(opts)), rng(options.seed) {}

  Options options;
  std::mt19937_64 rng;
  std::string work_dir;
  std::unique_ptr<Service> postgres;     // the primary
  std::unique_ptr<Service> pg_replica;   // its asynchronous streaming replica
  std::string store_url;                 // libpq multi-host: whichever accepts writes
  std::unique_ptr<Service> redis_store;  // the segment store of the Redis tag's nodes
  std::unique_ptr<Service> coordinator;
  // The nodes (PostgreSQL's, then the Redis store's), then the spare (if any).
  std::vector<std::unique_ptr<ServerProc>> servers;
  ServerProc* spare = nullptr;
  std::vector<std::string> common_args;
  ClientPool* clients = nullptr;
  Clock::time_point started = Clock::now();
  double load_s = 1;  // how long the clients ran

  std::map<std::string, int> faults;  // injected, by kind
  std::map<std::string, int> events;  // notable outcomes (a refused start, ...)
  std::vector<std::string> failures;  // what makes the run fail, besides duplicates

  // The nodes that take faults (not the spare).
  size_t node_count() const { return servers.size() - (spare != nullptr ? 1 : 0); }

  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - started).count(); }

  template <typename... Args>
  void log(fmt::format_string<Args...> format, Args&&... args) {
    fmt::print("[{:6.1f}s] {}\n", elapsed_s(), fmt::format(format, std::forward<Args>(args)...));
    std::fflush(stdout);
  }

  void fail(const std::string& why) {
    log("FAILURE: {}", why);
    failures.push_back(why);
  }

  // Sleeps for `duration` while watching for servers that exit on their own (a crash:
  // recorded, and the server is started again) and printing progress every 10 s.
  void idle(std::chrono::milliseconds duration);

  // Starts `server` with its clock `offset_ms` from the real one. A refusal because
  // the clock is behind the server's stored high-water mark is the designed answer:
  // it is recorded and, if the server is `required`, its clock is set right (as an
  // operator would) and it is started again. Returns false if it is not running; a
  // required server that could not be started is a failure of the run.
  bool start_server(ServerProc& server, int64_t offset_ms, bool required = true);

 private:
  Clock::time_point last_progress_ = Clock::now();
};

// 1234567 -> "1,234,567".
std::string grouped(uint64_t n);

// `idforge tag create TAG --start START --step STEP --store STORE_URL`, as an operator
// runs it on a machine of its own: its data directory and local: fleet floor are in the
// work directory, apart from the nodes' registry, so the start is taken as given.
Status create_tag(Run& run, const std::string& tag, int64_t step, const std::string& store_url,
                  int64_t start = 1);

}  // namespace idforge::torture
