// A worker-id lease held for one generator: open the registry for a layout, acquire a
// slot, keep it renewed (LeaseKeeper), build the generator on it, release at the end.
// What `idforge next --registry`, `idforge worker` and the server share.
#pragma once

#include <memory>
#include <string>

#include "coord/lease_keeper.h"
#include "core/snowflake_impl.h"
#include "core/worker_registry.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"

namespace idforge::coord {

// A registry opened for one layout: the slot space comes from the layout's node fields
// (lease_node_fields), error messages name the layout as the user wrote it.
struct OpenedRegistry {
  std::unique_ptr<WorkerRegistry> registry;
  LeaseNodeFields fields;
  std::string mark_layout;  // mark_layout_key() of the layout; generators must use it
  // A coordinator shared by hosts, whose leases expire when not renewed (etcd,
  // ZooKeeper, Redis); false for local: and static:, which live and die with the process.
  bool leases_expire = false;
};

// How a generator keeps its time mark stored ahead (SnowflakeOptions::reserve_ms,
// max_startup_wait_ms, SnowflakeInternals::renew_below_ms).
enum class MarkReserve {
  // The generator's defaults: a second ahead. A restart waits at most that for the clock.
  kShort,
  // For a long-running server on an expiring lease: the mark is kept ahead by the
  // lease's whole fence window and written again after every second of use, so a
  // coordinator outage the lease survives stops no request. The price: a node that
  // crashes, or whoever takes its slot after it, starts from that mark, up to a fence
  // window in the future, and waits for its clock to reach it (docs/operations.md,
  // "TTL, renewing and fencing").
  kRideOutOutages,
};
Result<OpenedRegistry> open_worker_registry(const std::string& url, const Layout& layout,
                                            const std::string& layout_label,
                                            const std::string& data_dir);

// A worker lease with its keeper. Construction order matters: the keeper must exist
// before a generator that stores its mark in it, and stop before the registry closes.
class HeldLease {
 public:
  // Acquires a slot for `identity` and starts keeping it.
  static Result<std::unique_ptr<HeldLease>> acquire(OpenedRegistry opened,
                                                    const std::string& identity);
  ~HeldLease();

  const Lease& lease() const { return keeper_->lease(); }
  LeaseKeeper& keeper() { return *keeper_; }
  WorkerRegistry& registry() { return *opened_.registry; }
  // Builds the generator on the lease (owned here, so it outlives the keeper that
  // fences it) and, when the lease has a start delay, waits it out (kUntilIssuing): a
  // one-shot command has nothing better to do. With kNotForTheDelay a lease with a start
  // delay comes back at once, its generator fenced until the delay has passed: the
  // server serves its other parts meanwhile, and /readyz says why Snowflake waits. InvalidArgument
  // for a generator of another layout than the registry was opened for, and for a lease whose
  // safety rests on its start delay (Redis) with a ttl_ms too short for the generator's
  // max_drift_ms. `internals` are the server's knobs (store_on_next, reservation_wanted); `reserve`
  // may set its renew_below_ms.
  enum class StartWait { kUntilIssuing, kNotForTheDelay };
  Result<SnowflakeGenerator*> make_generator(SnowflakeOptions options,
                                             MarkReserve reserve = MarkReserve::kShort,
                                             SnowflakeInternals internals = {},
                                             StartWait wait = StartWait::kUntilIssuing);
  // The reserve_ms the generator was made with (0 before make_generator).
  int64_t reserve_ms() const { return reserve_ms_; }
  // Fences the generator, stores its last mark, releases the lease.
  Status release();

 private:
  HeldLease(OpenedRegistry opened, std::unique_ptr<LeaseKeeper> keeper)
      : opened_(std::move(opened)), keeper_(std::move(keeper)) {}

  // Destroyed in reverse: the keeper stops (and releases) before the generator and the
  // registry it uses go.
  OpenedRegistry opened_;
  std::unique_ptr<SnowflakeGenerator> generator_;
  std::unique_ptr<LeaseKeeper> keeper_;
  int64_t reserve_ms_ = 0;
};

}  // namespace idforge::coord
