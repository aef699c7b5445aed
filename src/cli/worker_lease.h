// What `idforge next --registry` and `idforge worker ...` share: the --registry and
// --identity flags, opening a worker registry for a layout, and a generator that runs
// on a worker lease (acquired, kept renewed by a LeaseKeeper, released at the end).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "coord/lease_keeper.h"
#include "idforge/layout.h"
#include "idforge/snowflake.h"
#include "idforge/status.h"
#include "idforge/worker_registry.h"

namespace idforge::cli {

struct RegistryFlags {
  std::string url;  // --registry; empty = none
  std::optional<std::string> identity;
};

// Registers --registry (and --identity when with_identity); `flags` must outlive `cmd`.
void add_registry_flags(CLI::App& cmd, RegistryFlags& flags, bool required, bool with_identity);

// The --identity value, or "<hostname>:cli".
std::string identity_of(const RegistryFlags& flags);

// A registry opened for one layout: the slot space comes from the layout's node fields
// (coord::lease_node_fields), error messages name the layout as the user wrote it.
struct OpenedRegistry {
  std::unique_ptr<WorkerRegistry> registry;
  coord::LeaseNodeFields fields;
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
  coord::LeaseKeeper& keeper() { return *keeper_; }
  WorkerRegistry& registry() { return *opened_.registry; }
  // Builds the generator on the lease (owned here, so it outlives the keeper that
  // fences it) and, when the lease has a start delay, waits it out: a one-shot
  // command has nothing better to do.
  Result<SnowflakeGenerator*> make_generator(SnowflakeOptions options);
  // Fences the generator, stores its last mark, releases the lease.
  Status release();

 private:
  HeldLease(OpenedRegistry opened, std::unique_ptr<coord::LeaseKeeper> keeper)
      : opened_(std::move(opened)), keeper_(std::move(keeper)) {}

  // Destroyed in reverse: the keeper stops (and releases) before the generator and the
  // registry it uses go.
  OpenedRegistry opened_;
  std::unique_ptr<SnowflakeGenerator> generator_;
  std::unique_ptr<coord::LeaseKeeper> keeper_;
};

}  // namespace idforge::cli
