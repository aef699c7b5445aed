// The static WorkerRegistry. See core/worker_registry.h for the contract.
#pragma once

#include <memory>
#include <string_view>

#include "core/worker_registry.h"

namespace idforge::coord {

// `target` is the URL without its ?query (parsed into `options` by the factory).
Result<std::unique_ptr<WorkerRegistry>> open_static_registry(std::string_view target,
                                                             const RegistryOptions& options);

}  // namespace idforge::coord
