#include "coord/held_lease.h"

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
  return OpenedRegistry{std::move(registry).value(), std::move(fields).value()};
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

Result<SnowflakeGenerator*> HeldLease::make_generator(SnowflakeOptions options) {
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
