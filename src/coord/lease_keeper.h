// LeaseKeeper: keeps a worker-id lease alive under a SnowflakeGenerator and fences the
// generator before the lease can expire (docs/architecture.md, invariant 3).
//
//   auto t0 = std::chrono::steady_clock::now();           // before asking
//   Result<Lease> lease = registry->acquire(identity);
//   LeaseKeeper keeper(*registry, *lease, {.acquired_at = t0});
//   options.high_water = &keeper.high_water();             // the mark lives with the lease
//   options.nodes = lease_node_values(fields, *lease);
//   auto gen = SnowflakeGenerator::create(options).value();
//   keeper.attach(gen.get());
//   ...
//   Status released = keeper.stop();                      // fences, stores the mark, releases
//
// Timing is measured on std::chrono::steady_clock, so a wall clock stepped back or
// forward never stretches the window. From the moment a renew that later succeeded
// was SENT (the coordinator's TTL starts no earlier), the keeper fences the generator
// once fence_after_ms pass without another success: by default the TTL less a margin
// (default_fence_after_ms), so a node issues for as long as its lease is provably still
// valid, and stops strictly before the coordinator may give the slot to someone else at
// ttl. A later success unfences.
// A renew that says the lease is lost (is_lease_lost) fences for good: state() says
// so and on_lost runs; taking a new lease, possibly another slot, is the owner's job.
// A lease with start_delay_ms keeps the generator fenced for that long after
// acquired_at.
//
// Two threads: one renews every renew_every_ms (default ttl/3) and also performs the
// generator's high-water stores, the other fences and unfences on time even while a
// renew hangs on an unreachable coordinator. Every public method is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coord/lease_status.h"
#include "core/thread_annotations.h"
#include "core/worker_registry.h"
#include "idforge/high_water.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "log/repeats.h"

namespace idforge::coord {

// How a layout's node fields take a lease's ids: the field named "worker" (else the
// first node field) gets Lease::worker, the field named "datacenter" (else the other
// node field, if any) gets Lease::datacenter. So discord's worker/process map to
// worker/datacenter, instagram's shard and sonyflake's machine are the worker.
struct LeaseNodeFields {
  std::string worker_field;
  std::string datacenter_field;  // empty when the layout has a single node field
  SlotSpace space;
};
// InvalidArgument when the layout has no node field or more than two.
Result<LeaseNodeFields> lease_node_fields(const Layout& layout);
std::vector<std::pair<std::string, uint64_t>> lease_node_values(const LeaseNodeFields& fields,
                                                                const Lease& lease);

// A renew error that means another holder may have the slot (as opposed to a
// coordinator we cannot reach): LeaseLost, or NotFound (the registry does not know the
// slot or the lease at all). Decided by code only: no message wording is read.
bool is_lease_lost(const Status& status);

// The default fence deadline: ttl less max(ttl/20, 50 ms), at least 1 ms. The margin
// covers two hosts' steady clocks running at different rates (real ones differ by well
// under 0.1%) and the keeper's own wake-up latency.
int64_t fence_margin_ms(int64_t ttl_ms);
int64_t default_fence_after_ms(int64_t ttl_ms);

struct KeeperOptions {
  int64_t renew_every_ms = 0;  // 0: ttl / 3
  int64_t fence_after_ms = 0;  // 0: default_fence_after_ms(ttl); must be below the lease's ttl
  // When the acquire request was sent; the default (epoch) means "now", which is late by
  // the acquire's round trip, so pass it.
  std::chrono::steady_clock::time_point acquired_at{};
  // Called once, from the keeper's thread, when a renew says the lease is lost.
  std::function<void(const Status&)> on_lost;
};

class LeaseKeeper {
 public:
  // Starts renewing at once (the generator's create() already stores its mark here).
  LeaseKeeper(WorkerRegistry& registry, Lease lease, KeeperOptions options = {});
  ~LeaseKeeper();  // stop(), ignoring its error
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // The generator's HighWaterStore: load() is the lease's stored mark; store(mark)
  // renews the lease with that mark, waiting at most until the fence deadline.
  HighWaterStore& high_water() { return store_; }

  // Starts fencing `generator` (at once when in the start delay or overdue). It must
  // outlive the keeper or stop().
  void attach(SnowflakeGenerator* generator) IDFORGE_EXCLUDES(fence_mu_, mu_);

  // Fences `ahead_ms` earlier: for a generator whose IDs run up to that far ahead of
  // its clock (logical max_drift_ms), under a lease whose next holder is kept apart by
  // timing alone (one with a start delay, whose coordinator may lose the mark).
  // InvalidArgument, changing nothing, when that would leave less than half the TTL.
  Status reserve_issue_ahead(int64_t ahead_ms) IDFORGE_EXCLUDES(fence_mu_, mu_);
  // The fence deadline in use, in ms after the last successful renew was sent.
  int64_t fence_after_ms() const IDFORGE_EXCLUDES(mu_);

  // Stops renewing, fences the generator, stores its final mark and releases the
  // lease. Returns the release's (or the final store's) error. Idempotent.
  Status stop() IDFORGE_EXCLUDES(stop_mu_, fence_mu_, mu_);

  const Lease& lease() const { return lease_; }
  KeeperStatus status() const IDFORGE_EXCLUDES(mu_);
  LeaseState state() const { return status().state; }

  // When the renew thread last went round its loop, on the steady clock. It goes round
  // at least every kRoundEvery, even while idle or lost, and after every renew (which
  // the registries bound to a few seconds), so a keeper whose coordinator is down still
  // comes round (failing), while a stuck thread stops doing so: the server's systemd
  // watchdog (src/server/app/systemd_notify.h) tells the two apart by this. Never blocks
  // (an atomic: no lock a stuck thread might hold).
  static constexpr std::chrono::milliseconds kRoundEvery{1000};
  std::chrono::steady_clock::time_point last_round() const;

 private:
  using SteadyClock = std::chrono::steady_clock;
  using TimePoint = SteadyClock::time_point;

  class Store final : public HighWaterStore {
   public:
    explicit Store(LeaseKeeper* keeper) : keeper_(keeper) {}
    Result<int64_t> load() override { return keeper_->lease_.high_water_ms; }
    Status store(int64_t unix_ms) override { return keeper_->store_mark(unix_ms, {}); }
    Result<HighWaterMark> load_mark() override {
      return HighWaterMark{keeper_->lease_.high_water_ms, keeper_->lease_.high_water_layout};
    }
    Status store_mark(const HighWaterMark& mark) override {
      return keeper_->store_mark(mark.unix_ms, mark.layout);
    }

   private:
    LeaseKeeper* keeper_;
  };

  struct Fence {
    bool fenced = false;
    LeaseState why = LeaseState::kHeld;
    std::string reason;
  };

  // `layout` (when not empty) is what the registry records with this and later marks.
  Status store_mark(int64_t unix_ms, const std::string& layout) IDFORGE_EXCLUDES(mu_);
  void renew_loop() IDFORGE_EXCLUDES(mu_);
  // Writes a renew's outcome to the log (a failure rate-limited, a loss, a recovery).
  void log_renew(const Status& st, bool lost, int64_t since_ok_ms) IDFORGE_EXCLUDES(mu_);
  void watch_loop() IDFORGE_EXCLUDES(fence_mu_, mu_);
  // What the generator should be now.
  Fence decide_locked(TimePoint now) const IDFORGE_REQUIRES(mu_);
  // Brings the generator in line with decide_locked; never called with mu_ held, nor
  // by a thread that may hold the generator's own lock (the renew thread, store()).
  void apply_fence() IDFORGE_EXCLUDES(fence_mu_, mu_);
  LeaseState state_locked(TimePoint now) const IDFORGE_REQUIRES(mu_);
  int64_t mark_to_send_locked() const IDFORGE_REQUIRES(mu_);

  WorkerRegistry& registry_;
  const Lease lease_;
  const std::chrono::milliseconds renew_every_;
  std::chrono::milliseconds fence_after_ IDFORGE_GUARDED_BY(mu_);
  const std::chrono::milliseconds retry_every_;
  const TimePoint start_ready_at_;
  std::function<void(const Status&)> on_lost_;
  Store store_{this};

  // Lock order: stop_mu_, then fence_mu_, then mu_ (the ACQUIRED_BEFORE below); the
  // generator's own locks only under fence_mu_, never under mu_.
  mutable Mutex mu_;
  std::condition_variable renew_cv_;  // wakes the renew thread (requests, stop)
  std::condition_variable watch_cv_;  // wakes the watchdog (state changes, stop)
  std::condition_variable done_cv_;   // wakes store() waiters when a renew finishes
  SnowflakeGenerator* generator_ IDFORGE_GUARDED_BY(mu_) = nullptr;
  TimePoint last_ok_ IDFORGE_GUARDED_BY(mu_);  // when the last successful renew was sent
  // Highest mark a successful renew stored, and highest mark store() asked for.
  int64_t confirmed_mark_ IDFORGE_GUARDED_BY(mu_) = 0;
  int64_t requested_mark_ IDFORGE_GUARDED_BY(mu_) = 0;
  // The layout renews record with the mark: the stored one until the generator stores
  // its first mark (a keeper without a generator never changes it).
  std::string mark_layout_ IDFORGE_GUARDED_BY(mu_);
  std::string confirmed_layout_ IDFORGE_GUARDED_BY(mu_);  // what the last renew recorded
  uint64_t requests_ IDFORGE_GUARDED_BY(mu_) = 0;         // store() requests made
  uint64_t served_ IDFORGE_GUARDED_BY(mu_) = 0;           // requests covered by a finished renew
  Status last_result_ IDFORGE_GUARDED_BY(mu_);
  std::string last_error_ IDFORGE_GUARDED_BY(mu_);
  uint64_t renewals_ IDFORGE_GUARDED_BY(mu_) = 0;
  uint64_t failures_ IDFORGE_GUARDED_BY(mu_) = 0;
  bool lost_ IDFORGE_GUARDED_BY(mu_) = false;
  // Fences for an overdue lease the watchdog applied, and the last one's reason. The
  // renew thread writes them to the log (docs/operations.md, "Logs"): the watchdog does
  // no I/O, so a stalled stderr can never delay a fence.
  uint64_t overdue_fences_ IDFORGE_GUARDED_BY(mu_) = 0;
  std::string overdue_reason_ IDFORGE_GUARDED_BY(mu_);
  // Failing renews, logged once per run and window (the renew thread, then stop() after
  // joining it: never two threads at once, so no lock).
  log::RepeatLimiter renew_failures_;
  bool stopping_ IDFORGE_GUARDED_BY(mu_) = false;

  Mutex fence_mu_ IDFORGE_ACQUIRED_BEFORE(mu_);  // serializes apply_fence
  Fence applied_ IDFORGE_GUARDED_BY(fence_mu_);  // what the generator was last told
  LeaseState applied_why_ IDFORGE_GUARDED_BY(mu_) = LeaseState::kHeld;  // a copy of applied_.why

  Mutex stop_mu_ IDFORGE_ACQUIRED_BEFORE(fence_mu_);  // serializes stop()
  bool stopped_ IDFORGE_GUARDED_BY(stop_mu_) = false;
  Status stop_result_ IDFORGE_GUARDED_BY(stop_mu_);

  // last_round(): the renew thread's last round, as steady-clock ticks.
  std::atomic<SteadyClock::rep> last_round_{SteadyClock::now().time_since_epoch().count()};

  std::thread renew_thread_;
  std::thread watch_thread_;
};

}  // namespace idforge::coord
