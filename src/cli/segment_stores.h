// What `idforge tag ...` and `idforge next --tag` share: the --store and --data-dir
// flags, opening the stores they name, and printing a tag's IDs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "idforge/segment_store.h"
#include "idforge/status.h"

namespace idforge::cli {

inline constexpr const char* kDefaultDataDir = "./idforge-data";

struct StoreFlags {
  std::vector<std::string> urls;  // --store, repeatable; none = SQLite in the data dir
  std::string data_dir = kDefaultDataDir;
};

// Registers --store and --data-dir; `flags` must outlive `cmd`.
void add_store_flags(CLI::App& cmd, StoreFlags& flags);
// True when the user gave either flag (so a command that ignores them can say so).
bool store_flags_given(const CLI::App& cmd);

// One store named on the command line, or why it could not be opened.
struct OpenedStore {
  std::string url;
  std::unique_ptr<SegmentStore> store;  // null when `error` is set
  Status error;
};

// Opens every store the flags name, in order. Without --store this is the SQLite file
// segments.db in the data dir, which is created (mode 0700) when missing. An
// unparseable URL fails the whole call; a store that cannot be reached comes back
// with its error, so the caller decides whether the others are enough.
Result<std::vector<OpenedStore>> open_stores(const StoreFlags& flags);

// `idforge next --tag`: prints `count` IDs of `tag`, one per line, from a
// SegmentBuffer over the stores (striped when there are several). Returns the exit
// status.
int print_segment_ids(const StoreFlags& flags, const std::string& tag, uint64_t count);

}  // namespace idforge::cli
