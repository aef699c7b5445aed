// SnowflakePart: IdService's Snowflake IDs. It holds the worker-id lease (its keeper
// renews it and fences the generator on time), builds the generator on it, and runs one
// thread of its own that renews the time high-water mark (requests never write it, so
// no request waits on the coordinator) and takes a new lease when the old one is lost.
// Nothing here touches a segment store, so a store that hangs cannot hold up a
// Snowflake request or the reservation it depends on.
//
// Locks (each a leaf: none is held while taking another of this part's, and neither is
// held across a coordinator round trip):
//   run_mu_   stopping_, renew_wanted_: wakes the thread (a request's
//             reservation_wanted, stop()).
//   lease_mu_ the current lease, the retired ones, the last errors. Taken by status()
//             and readiness(), so it is only held for copies; the keeper's own locks
//             may be taken under it (keeper().status()), never the other way round.
// The generator pointer is an atomic, read by requests without a lock.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "coord/held_lease.h"
#include "core/thread_annotations.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "server/service/service_config.h"
#include "server/service/service_status.h"
#include "server/service/snowflake_events.h"

namespace idforge::server {

class SnowflakePart {
 public:
  // Acquires the lease (waiting out its start delay), builds the generator and starts
  // the part's thread.
  static Result<std::unique_ptr<SnowflakePart>> start(const ServiceConfig& config,
                                                      std::string identity);
  ~SnowflakePart();  // stop()
  SnowflakePart(const SnowflakePart&) = delete;
  SnowflakePart& operator=(const SnowflakePart&) = delete;

  // Stops the thread, fences the generator and releases the lease(s). Idempotent.
  Status stop() IDFORGE_EXCLUDES(run_mu_, lease_mu_);

  // Snowflake IDs; never blocks longer than the policy's max_wait_ms.
  Status next(std::span<uint64_t> out);

  // Fills the lease, generator and reservation fields of `s`. Never blocks.
  void fill_status(ServiceStatus& s) const IDFORGE_EXCLUDES(lease_mu_);
  // Not ready without a lease in state held, while fenced, or while the reservation
  // is not being kept (its last renewal failed, one has hung for half the reserve, or
  // it ran out). Never blocks.
  PartReadiness readiness() const IDFORGE_EXCLUDES(lease_mu_);
  // The current lease keeper's LeaseKeeper::last_round(), for the systemd watchdog
  // (systemd_notify.h), which restarts a process whose keeper thread is stuck. Never
  // blocks (lease_mu_ is only held for copies).
  std::chrono::steady_clock::time_point keeper_last_round() const IDFORGE_EXCLUDES(lease_mu_);

 private:
  explicit SnowflakePart(const ServiceConfig& config, std::string identity)
      : config_(config), identity_(std::move(identity)) {}

  // Acquires a lease and makes it the current one (the old one is retired, not freed:
  // a request may still hold its generator's pointer). Blocks on the coordinator.
  Status open_lease() IDFORGE_EXCLUDES(lease_mu_);
  void run() IDFORGE_EXCLUDES(run_mu_, lease_mu_);
  // One round of the thread: renew the reservation, replace a lost lease.
  void tend(std::chrono::steady_clock::time_point& next_reacquire) IDFORGE_EXCLUDES(lease_mu_);
  void wake() IDFORGE_EXCLUDES(run_mu_);

  const ServiceConfig& config_;  // the facade's
  const std::string identity_;
  // What changed, for the log; used by start() and then by the part's thread only.
  SnowflakeEvents events_{config_};
  std::atomic<SnowflakeGenerator*> generator_{nullptr};
  std::atomic<uint64_t> leases_taken_{0};
  // Steady-clock ms when the renewal under way began; 0 when none is.
  std::atomic<int64_t> renewing_since_ms_{0};

  mutable Mutex lease_mu_;
  std::unique_ptr<coord::HeldLease> lease_ IDFORGE_GUARDED_BY(lease_mu_);
  std::vector<std::unique_ptr<coord::HeldLease>> retired_ IDFORGE_GUARDED_BY(lease_mu_);
  std::string reacquire_error_ IDFORGE_GUARDED_BY(lease_mu_);
  std::string renew_error_ IDFORGE_GUARDED_BY(lease_mu_);  // "" after a renewal succeeded
  bool released_ IDFORGE_GUARDED_BY(lease_mu_) = false;

  Mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ IDFORGE_GUARDED_BY(run_mu_) = false;
  bool renew_wanted_ IDFORGE_GUARDED_BY(run_mu_) = false;  // a request reached the renew point
  std::thread thread_;
};

}  // namespace idforge::server
