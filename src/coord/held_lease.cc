#include "coord/held_lease.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "coord/redis/redis_registry.h"
#include "coord/registry_factory.h"
#include "core/snowflake_mark.h"
#include "log/log.h"

namespace idforge::coord {
namespace {

// Beyond the lease's start delay, how long a command waits for its first renew to
// unfence the generator before it gives up.
constexpr int64_t kStartSlackMs = 5'000;

}  // namespace

Result<OpenedRegistry> open_worker_registry(const std::string& url, const Layout& layout,
                                            const std::string& layout_label,
                                            const std::string& data_dir) {
  Result<LeaseNodeFields> fields = lease_node_fields(layout);
  if (!fields.ok()) return fields.status();
  if (data_dir.empty()) return Status::InvalidArgument("--data-dir is empty");
  RegistryOptions options;
  options.space = fields->space;
  options.layout_name = layout_label;
  options.data_dir = data_dir;
  Result<std::unique_ptr<WorkerRegistry>> registry = open_registry(url, options);
  if (!registry.ok()) return registry.status();
  const bool process_bound = url.starts_with("local") || url.starts_with("static");
  return OpenedRegistry{std::move(registry).value(), std::move(fields).value(),
                        mark_layout_key(layout), !process_bound};
}

Result<std::unique_ptr<HeldLease>> HeldLease::acquire(OpenedRegistry opened,
                                                      const std::string& identity) {
  if (identity.empty()) return Status::InvalidArgument("--identity is empty");
  // Taken before asking: the coordinator's TTL starts no earlier than this.
  const auto asked_at = std::chrono::steady_clock::now();
  Result<Lease> lease = opened.registry->acquire(identity);
  if (!lease.ok()) return lease.status();
  log::info("lease.acquired", {{"slot", lease->slot},
                               {"datacenter", lease->datacenter},
                               {"worker", lease->worker},
                               {"registry", opened.registry->describe()},
                               {"identity", identity},
                               {"ttl_ms", lease->ttl_ms},
                               {"start_delay_ms", lease->start_delay_ms}});
  KeeperOptions keeper_options;
  keeper_options.acquired_at = asked_at;
  auto keeper = std::make_unique<LeaseKeeper>(*opened.registry, *lease, std::move(keeper_options));
  return std::unique_ptr<HeldLease>(new HeldLease(std::move(opened), std::move(keeper)));
}

HeldLease::~HeldLease() { release().ignore_error(); }

namespace {

// A lease on a registry that may lose it with its mark (Redis) is safe after such a
// loss only by timing: the old holder fences before its TTL ends, the key expires at
// ttl, the next holder waits out its start delay. That holds for every such lease, also
// one granted with no start delay (Redis on an unchanged history): it may be the old
// holder of the next loss. Logical IDs run up to max_drift_ms ahead of the clock, so
// the old holder fences that much earlier still (the room left is the hosts' clock
// difference, which is left to NTP). Coordinators that keep the mark durably (etcd,
// ZooKeeper, files) need no such room: nobody issues past a stored mark, and the next
// holder starts above it.
Status make_room_for_drift(LeaseKeeper& keeper, const WorkerRegistry& registry,
                           const SnowflakeOptions& options) {
  const bool by_timing = keeper.lease().start_delay_ms > 0 || may_lose_marks(registry);
  if (!by_timing || options.policy != RollbackPolicy::kLogical) return Status::Ok();
  return keeper.reserve_issue_ahead(options.max_drift_ms);
}

// How often a ride-out reservation is written again: each write is one coordinator
// round trip, and what is left ahead never falls more than this below the fence window.
constexpr int64_t kRideOutRenewEveryMs = 1'000;

// Keeps the mark the whole fence window ahead (see MarkReserve::kRideOutOutages): IDs
// go on for as long as the lease does, whether or not the coordinator answers.
void reserve_for_outages(int64_t fence_after_ms, SnowflakeOptions& options,
                         SnowflakeInternals& internals) {
  if (fence_after_ms <= options.reserve_ms) return;
  options.reserve_ms = fence_after_ms;
  internals.renew_below_ms =
      std::max<int64_t>(fence_after_ms - kRideOutRenewEveryMs, fence_after_ms / 2);
  // A restart after a crash finds the mark up to reserve_ms ahead of its clock.
  options.max_startup_wait_ms =
      std::max(options.max_startup_wait_ms, options.reserve_ms + kRideOutRenewEveryMs);
}

}  // namespace

Result<SnowflakeGenerator*> HeldLease::make_generator(SnowflakeOptions options, MarkReserve reserve,
                                                      SnowflakeInternals internals,
                                                      StartWait wait) {
  if (!opened_.mark_layout.empty() && mark_layout_key(options.layout) != opened_.mark_layout) {
    return Status::InvalidArgument(
        fmt::format("the generator's layout {} is not the one the worker registry was opened "
                    "for ({})",
                    mark_layout_key(options.layout), opened_.mark_layout));
  }
  IDFORGE_RETURN_IF_ERROR(make_room_for_drift(*keeper_, *opened_.registry, options));
  if (reserve == MarkReserve::kRideOutOutages && opened_.leases_expire) {
    reserve_for_outages(keeper_->fence_after_ms(), options, internals);
  }
  reserve_ms_ = options.reserve_ms;
  options.nodes = lease_node_values(opened_.fields, keeper_->lease());
  options.high_water = &keeper_->high_water();
  Result<std::unique_ptr<SnowflakeGenerator>> made =
      create_snowflake_generator(std::move(options), std::move(internals));
  if (!made.ok()) return made.status();
  generator_ = std::move(made).value();
  keeper_->attach(generator_.get());
  if (wait == StartWait::kNotForTheDelay && keeper_->lease().start_delay_ms > 0) {
    return generator_.get();
  }

  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(keeper_->lease().start_delay_ms + kStartSlackMs);
  while (true) {
    const KeeperStatus s = keeper_->status();
    // Held by the clock may come a moment before the watchdog has unfenced the
    // generator; the caller (the server's readiness) looks at the generator.
    const bool held = s.state == LeaseState::kHeld;
    if (held && !generator_->fenced()) break;
    const bool hopeless = !held && s.state != LeaseState::kWaiting;
    if (hopeless || std::chrono::steady_clock::now() > give_up) {
      // The generator says why in its own words (lost, not renewed, ...). Should the
      // lease have come good meanwhile, the probe's ID is merely skipped.
      Result<uint64_t> probe = generator_->next();
      if (!probe.ok()) return probe.status();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return generator_.get();
}

Status HeldLease::release() { return keeper_->stop(); }

}  // namespace idforge::coord
