#include "coord/held_lease.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>
#include <utility>

#include "coord/registry_factory.h"

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
  return OpenedRegistry{std::move(registry).value(), std::move(fields).value(),
                        mark_layout_key(layout)};
}

Result<std::unique_ptr<HeldLease>> HeldLease::acquire(OpenedRegistry opened,
                                                      const std::string& identity) {
  if (identity.empty()) return Status::InvalidArgument("--identity is empty");
  // Taken before asking: the coordinator's TTL starts no earlier than this.
  const auto asked_at = std::chrono::steady_clock::now();
  Result<Lease> lease = opened.registry->acquire(identity);
  if (!lease.ok()) return lease.status();
  KeeperOptions keeper_options;
  keeper_options.acquired_at = asked_at;
  auto keeper = std::make_unique<LeaseKeeper>(*opened.registry, *lease, std::move(keeper_options));
  return std::unique_ptr<HeldLease>(new HeldLease(std::move(opened), std::move(keeper)));
}

HeldLease::~HeldLease() { release().ignore_error(); }

namespace {

// A lease with a start delay (Redis) is safe without its mark only by timing: the old
// holder fences at 2/3 ttl after its last renew, the key expires at ttl, the next
// holder waits ttl. Logical IDs run up to max_drift_ms ahead of the clock, so the old
// holder's last IDs reach its fence time + max_drift_ms, which must stay before the
// expiry (by the hosts' clock difference, which is left to NTP). Coordinators that
// keep the mark durably (etcd, ZooKeeper, files) need no such bound: nobody issues
// past a stored mark, and the next holder starts above it.
Status check_drift_fits_ttl(const Lease& lease, const SnowflakeOptions& options) {
  if (lease.start_delay_ms <= 0 || options.policy != RollbackPolicy::kLogical) {
    return Status::Ok();
  }
  const int64_t fence_ms = std::max<int64_t>(lease.ttl_ms * 2 / 3, 1);
  const int64_t room_ms = lease.ttl_ms - fence_ms;
  if (options.max_drift_ms < room_ms) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "the worker registry's ttl_ms {} is too short for max_drift_ms {}: a holder fences {} ms "
      "before its lease expires, but its IDs may run {} ms ahead of its clock, so if the "
      "coordinator loses the lease the next holder could repeat them; use ttl_ms above {} "
      "or a smaller max_drift_ms (below {})",
      lease.ttl_ms, options.max_drift_ms, room_ms, options.max_drift_ms, 3 * options.max_drift_ms,
      room_ms));
}

}  // namespace

Result<SnowflakeGenerator*> HeldLease::make_generator(SnowflakeOptions options) {
  if (!opened_.mark_layout.empty() && mark_layout_key(options.layout) != opened_.mark_layout) {
    return Status::InvalidArgument(
        fmt::format("the generator's layout {} is not the one the worker registry was opened "
                    "for ({})",
                    mark_layout_key(options.layout), opened_.mark_layout));
  }
  IDFORGE_RETURN_IF_ERROR(check_drift_fits_ttl(keeper_->lease(), options));
  options.nodes = lease_node_values(opened_.fields, keeper_->lease());
  options.high_water = &keeper_->high_water();
  Result<std::unique_ptr<SnowflakeGenerator>> made = SnowflakeGenerator::create(std::move(options));
  if (!made.ok()) return made.status();
  generator_ = std::move(made).value();
  keeper_->attach(generator_.get());

  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(keeper_->lease().start_delay_ms + kStartSlackMs);
  while (true) {
    const KeeperStatus s = keeper_->status();
    if (s.state == LeaseState::kHeld) break;
    if (s.state != LeaseState::kWaiting || std::chrono::steady_clock::now() > give_up) {
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
