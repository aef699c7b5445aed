#include "server/service/service_snowflake.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "coord/registry_floor.h"
#include "core/now_ms.h"
#include "core/snowflake_impl.h"
#include "core/thread_name.h"

namespace idforge::server {
namespace {

using Steady = std::chrono::steady_clock;

// How often the thread looks at the reservation and the lease when no request asks.
// The generator renews only when less than half its reserve is left, so most rounds
// cost nothing.
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kReacquireBackoff = std::chrono::seconds(1);
// The generator's default reserve, for a part that has no lease yet.
const int64_t kDefaultReserveMs = SnowflakeOptions{}.reserve_ms;

// How far the stored mark is ahead of what the generator needs next (the clock, or the
// last issued tick when that is later). Large when there is no store (nothing to run out).
int64_t reserved_ahead_ms(const SnowflakeGenerator& gen) {
  const int64_t reserved = gen.reserved_until_ms();
  if (reserved == 0) return INT64_MAX / 2;  // no store: no reservation to run out
  return reserved - std::max(unix_now_ms(), gen.last_unix_ms());
}

}  // namespace

Result<std::unique_ptr<SnowflakePart>> SnowflakePart::start(const ServiceConfig& config,
                                                            std::string identity) {
  std::unique_ptr<SnowflakePart> part(new SnowflakePart(config, std::move(identity)));
  IDFORGE_RETURN_IF_ERROR(part->open_lease());
  part->events_.started(*part->generator_.load(std::memory_order_acquire));
  part->thread_ = std::thread([p = part.get()] {
    name_this_thread("idforge-marks");
    p->run();
  });
  return part;
}

SnowflakePart::~SnowflakePart() { stop().ignore_error(); }

Status SnowflakePart::open_lease() {
  std::string url = config_.registry_url;
  if (url.empty()) url = coord::default_registry_url(config_.data_dir);
  Result<coord::OpenedRegistry> opened =
      coord::open_worker_registry(url, config_.layout, config_.layout_label, config_.data_dir);
  if (!opened.ok()) return opened.status();
  Result<std::unique_ptr<coord::HeldLease>> held =
      coord::HeldLease::acquire(std::move(opened).value(), identity_);
  if (!held.ok()) return held.status();
  SnowflakeOptions options;
  options.layout = config_.layout;
  options.policy = config_.policy;
  options.max_drift_ms = config_.max_drift_ms;
  options.max_clock_step_ms = config_.max_clock_step_ms;
  options.max_wait_ms = config_.max_wait_ms;
  options.clock = config_.clock;
  // Requests never write the mark (a coordinator round trip on an event loop); this
  // part's thread does, at once when a request asks.
  SnowflakeInternals internals;
  internals.store_on_next = false;
  internals.reservation_wanted = [this] { wake(); };
  // The mark is kept a whole fence window ahead on a coordinator lease, so an outage the
  // lease survives stops no request.
  // A lease with a start delay (a Redis registry whose history changed) is not waited
  // for here: the server listens and serves segments, UUIDs and ULIDs meanwhile, and
  // Snowflake requests answer unavailable with the time left until the delay is over.
  Result<SnowflakeGenerator*> made =
      (*held)->make_generator(std::move(options), coord::MarkReserve::kRideOutOutages,
                              std::move(internals), coord::HeldLease::StartWait::kNotForTheDelay);
  if (!made.ok()) return made.status();
  // The reservation made at creation may run out while a start delay is waited out:
  // renewed here when there was none, and by this part's thread once the lease is held.
  Status renewed = (*made)->renew_reservation();
  MutexLock lock(lease_mu_);
  renew_error_ = renewed.ok() ? "" : renewed.message();
  if (lease_) retired_.push_back(std::move(lease_));
  lease_ = std::move(held).value();
  generator_.store(*made, std::memory_order_release);
  leases_taken_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

void SnowflakePart::wake() {
  {
    MutexLock lock(run_mu_);
    renew_wanted_ = true;
  }
  run_cv_.notify_all();
}

void SnowflakePart::run() {
  auto next_reacquire = Steady::now();
  while (true) {
    {
      MutexLock lock(run_mu_);
      const auto until = Steady::now() + kTick;
      while (!stopping_ && !renew_wanted_ && lock.wait_until(run_cv_, until)) {
      }
      if (stopping_) return;
      renew_wanted_ = false;
    }
    tend(next_reacquire);
  }
}

void SnowflakePart::tend(Steady::time_point& next_reacquire) {
  SnowflakeGenerator* gen = generator_.load(std::memory_order_acquire);
  coord::LeaseState state = coord::LeaseState::kHeld;
  uint64_t slot = 0;
  {
    MutexLock lock(lease_mu_);
    if (lease_) {
      state = lease_->keeper().state();
      slot = lease_->lease().slot;
    }
  }
  if (state == coord::LeaseState::kHeld && gen != nullptr) {
    // May wait on the coordinator (up to the keeper's fence deadline); readiness()
    // watches how long through renewing_since_ms_.
    const uint64_t stores_before = gen->counters().high_water_stores;
    const int64_t started = steady_now_ms();
    renewing_since_ms_.store(started, std::memory_order_release);
    Status renewed = gen->renew_reservation();
    renewing_since_ms_.store(0, std::memory_order_release);
    events_.renewal(*gen, renewed, steady_now_ms() - started, stores_before);
    MutexLock lock(lease_mu_);
    renew_error_ = renewed.ok() ? "" : renewed.message();
  }
  if (gen != nullptr) events_.observe(*gen, state == coord::LeaseState::kHeld);
  // A lost lease may now be someone else's slot: this node stays fenced on it and asks
  // for a new one (possibly another slot) in the background.
  if (state == coord::LeaseState::kLost && Steady::now() >= next_reacquire) {
    Status taken = open_lease();
    if (taken.ok()) {
      uint64_t new_slot = 0;
      {
        MutexLock lock(lease_mu_);
        new_slot = lease_->lease().slot;
      }
      events_.replaced(slot, new_slot, leases_taken_.load(std::memory_order_relaxed));
    } else {
      events_.replace_failed(slot, taken);
    }
    MutexLock lock(lease_mu_);
    reacquire_error_ = taken.ok() ? "" : taken.message();
    next_reacquire = Steady::now() + kReacquireBackoff;
  }
}

Status SnowflakePart::stop() {
  {
    MutexLock lock(run_mu_);
    stopping_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Release outside lease_mu_ (a coordinator round trip), so status() and /readyz go
  // on answering meanwhile. The leases stay owned here: a request may still hold a
  // generator's pointer, and the generator lives in its lease.
  std::vector<coord::HeldLease*> to_release;
  {
    MutexLock lock(lease_mu_);
    if (released_) return Status::Ok();
    released_ = true;
    if (lease_) to_release.push_back(lease_.get());
    for (auto& old : retired_) to_release.push_back(old.get());
  }
  Status released = Status::Ok();
  for (size_t i = 0; i < to_release.size(); ++i) {
    Status s = to_release[i]->release();
    if (i == 0) released = std::move(s);  // the current lease's result is the answer
  }
  return released;
}

Status SnowflakePart::next(std::span<uint64_t> out) {
  SnowflakeGenerator* gen = generator_.load(std::memory_order_acquire);
  return gen->next_batch(out);
}

void SnowflakePart::fill_status(ServiceStatus& s) const {
  {
    MutexLock lock(lease_mu_);
    if (lease_) {
      s.has_lease = true;
      s.lease = lease_->lease();
      s.keeper = lease_->keeper().status();
      if (s.keeper.last_error.empty()) s.keeper.last_error = reacquire_error_;
      const bool live = s.keeper.state == LeaseState::kHeld ||
                        s.keeper.state == LeaseState::kWaiting ||
                        s.keeper.state == LeaseState::kOverdue;
      s.lease_seconds_left =
          live ? std::max<double>(
                     0, static_cast<double>(s.lease.ttl_ms - s.keeper.since_renew_ms) / 1000.0)
               : 0;
    }
    s.reservation_error = renew_error_;
  }
  s.leases_taken = leases_taken_.load(std::memory_order_relaxed);
  if (SnowflakeGenerator* gen = generator_.load(std::memory_order_acquire)) {
    s.fenced = gen->fenced();
    s.clock_offset_ms = gen->drift_ms();
    s.counters = gen->counters();
    s.reserved_ahead_ms = std::min<int64_t>(reserved_ahead_ms(*gen), INT32_MAX);
  }
  s.snowflake_ready = readiness();
}

Steady::time_point SnowflakePart::keeper_last_round() const {
  MutexLock lock(lease_mu_);
  // Every started part has a lease (start() fails without one).
  return lease_ ? lease_->keeper().last_round() : Steady::now();
}

PartReadiness SnowflakePart::readiness() const {
  auto no = [](std::string why) { return PartReadiness{false, std::move(why)}; };
  SnowflakeGenerator* gen = generator_.load(std::memory_order_acquire);
  if (gen == nullptr) return no("no worker-id lease");
  std::string renew_error;
  int64_t reserve_ms = kDefaultReserveMs;
  {
    MutexLock lock(lease_mu_);
    if (lease_) {
      const coord::KeeperStatus keeper = lease_->keeper().status();
      if (keeper.state == coord::LeaseState::kWaiting) {
        return no(fmt::format(
            "worker-id lease on slot {} is in its start delay, {} ms left: {} may have forgotten "
            "leases whose holders still issue, so this node waits until they have fenced "
            "(docs/operations.md, \"Start delay\")",
            lease_->lease().slot, keeper.start_delay_left_ms, lease_->registry().describe()));
      }
      if (keeper.state != coord::LeaseState::kHeld) {
        std::string text = fmt::format("worker-id lease is {}", lease_state_name(keeper.state));
        if (!keeper.last_error.empty()) text += ": " + keeper.last_error;
        return no(std::move(text));
      }
      reserve_ms = std::max<int64_t>(lease_->reserve_ms(), 1);
      // Until the keeper fences if no renew gets through.
      const int64_t fence_in_ms = lease_->keeper().fence_after_ms() - keeper.since_renew_ms;
      if (fence_in_ms < reserve_ms / 4) {
        return no(fmt::format(
            "worker-id lease not renewed for {} ms, fenced in {} ms: {}", keeper.since_renew_ms,
            std::max<int64_t>(fence_in_ms, 0),
            keeper.last_error.empty() ? "the renew has not answered" : keeper.last_error));
      }
    }
    renew_error = renew_error_;
  }
  if (gen->fenced()) return no("the Snowflake generator is fenced");
  // Not ready a quarter of the reserve before IDs would stop, rather than at the first
  // slow or failed renewal: every node of a fleet sees a coordinator blip at the same
  // moment, and all of them leaving rotation together would be the very outage the
  // reservation rides out.
  if (const int64_t ahead = reserved_ahead_ms(*gen); ahead < reserve_ms / 4) {
    std::string cause = renew_error;
    const int64_t since = renewing_since_ms_.load(std::memory_order_acquire);
    if (cause.empty() && since != 0) {
      cause =
          fmt::format("renewing it has waited {} ms on the coordinator", steady_now_ms() - since);
    }
    if (cause.empty()) cause = "not renewed yet";
    return no(ahead < 0
                  ? fmt::format("the time high-water mark ran out {} ms ago: {}", -ahead, cause)
                  : fmt::format("the time high-water mark is only {} ms ahead: {}", ahead, cause));
  }
  return PartReadiness{true, ""};
}

}  // namespace idforge::server
