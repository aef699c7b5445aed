// What `idforge next --registry` and `idforge worker ...` share: the --registry and
// --identity flags, opening a worker registry for a layout, and a generator that runs
// on a worker lease (acquired, kept renewed by a LeaseKeeper, released at the end).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "coord/held_lease.h"
#include "core/worker_registry.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"

namespace idforge::cli {

struct RegistryFlags {
  std::string url;  // --registry; empty = none
  std::optional<std::string> identity;
};

// Registers --registry (and --identity when with_identity); `flags` must outlive `cmd`.
void add_registry_flags(CLI::App& cmd, RegistryFlags& flags, bool required, bool with_identity);

// The --identity value, or "<hostname>:cli".
std::string identity_of(const RegistryFlags& flags);

using coord::HeldLease;
using coord::open_worker_registry;
using coord::OpenedRegistry;

}  // namespace idforge::cli
