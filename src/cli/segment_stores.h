// What `idforge tag ...` and `idforge next --tag` share: the --store and --data-dir
// flags, opening the stores they name, and printing a tag's IDs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coord/registry_floor.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"
#include "store/store_set.h"

namespace idforge::cli {

inline constexpr const char* kDefaultDataDir = "./idforge-data";

struct StoreFlags {
  std::vector<std::string> urls;  // --store, repeatable; none = SQLite in the data dir
  std::string data_dir = kDefaultDataDir;
  bool allow_unsafe = false;  // next's --allow-unsafe-store
  // The worker registry whose fleet floor (core/fleet_floor.h) ranges are recorded in and
  // tag starts are checked against: --registry; empty = local:DATA_DIR/workers, as
  // `idforge serve` uses.
  std::string registry_url;
};

// Registers --store and --data-dir; `flags` must outlive `cmd`.
void add_store_flags(CLI::App& cmd, StoreFlags& flags);
// Registers --registry for the fleet floor (`idforge tag`; `idforge next` has its own).
void add_floor_registry_flag(CLI::App& cmd, StoreFlags& flags);
// True when the user gave either flag (so a command that ignores them can say so).
bool store_flags_given(const CLI::App& cmd);

using store::OpenedStore;

// store::open_stores over the flags' URLs and data dir.
Result<std::vector<OpenedStore>> open_stores(const StoreFlags& flags);

// The fleet floor of the flags' registry (null floor for static:).
Result<coord::RegistryFloor> open_floor(const StoreFlags& flags);

// `idforge next --tag`: prints `count` IDs of `tag`, one per line, from a
// SegmentBuffer over the stores (striped when there are several). Returns the exit
// status.
int print_segment_ids(const StoreFlags& flags, const std::string& tag, uint64_t count);

}  // namespace idforge::cli
