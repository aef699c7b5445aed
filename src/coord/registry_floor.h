// The fleet floor (core/fleet_floor.h) of a worker registry: what `idforge serve`,
// `idforge next --tag` and `idforge tag create|served` open to read and record what the
// fleet took of each segment tag.
#pragma once

#include <memory>
#include <string>

#include "core/fleet_floor.h"
#include "core/worker_registry.h"
#include "idforge/status.h"

namespace idforge::coord {

struct RegistryFloor {
  std::unique_ptr<WorkerRegistry> registry;
  std::unique_ptr<FleetFloor> floor;  // null: the registry has no shared place (static:)
  // The records are files on this host (local:): they fail and survive with the data
  // directory, so the node's own served marks need no fsync of their own.
  bool on_this_host = false;
};

// The registry `url` (empty: local:DATA_DIR/workers, as `idforge serve` uses) opened for
// its fleet records only: no lease is taken. Errors say it is the fleet floor's registry.
Result<RegistryFloor> open_registry_floor(const std::string& url, const std::string& data_dir);

// The registry URL a command uses when none is given.
std::string default_registry_url(const std::string& data_dir);

}  // namespace idforge::coord
