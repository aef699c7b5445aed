// SlotFileRegistry: what the `static` and `local` registries share. Leases are slot
// lock files (coord/local/slot_files.h) held by this object; renew stores the slot's mark in
// its .mark file; status lists every held lock file in the directory; force_release
// can only remove a stale lock file, since no process can break another's flock.
//
// Leases never expire (expires_in_ms -1) and need no start delay: the kernel frees a
// slot only when its holder is gone. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "coord/local/file_high_water.h"
#include "coord/local/slot_files.h"
#include "core/thread_annotations.h"
#include "core/worker_registry.h"

namespace idforge::coord {

class SlotFileRegistry : public WorkerRegistry {
 public:
  Status renew(const Lease& lease, int64_t high_water_ms) override IDFORGE_EXCLUDES(mu_);
  Status release(const Lease& lease) override IDFORGE_EXCLUDES(mu_);
  Result<std::vector<SlotStatus>> status() override;
  Status force_release(uint64_t slot) override IDFORGE_EXCLUDES(mu_);

  const std::string& dir() const { return dir_; }

 protected:
  SlotFileRegistry(std::string dir, RegistryOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {}

  // Locks `slot` for `identity` and loads its mark. Null (with *holder) when another
  // process holds it.
  Result<std::unique_ptr<Lease>> try_take(uint64_t slot, const std::string& identity, int attempts,
                                          SlotHolder* holder) IDFORGE_EXCLUDES(mu_);

  const RegistryOptions& options() const { return options_; }

 private:
  struct Held {
    std::unique_ptr<SlotLock> lock;
    std::unique_ptr<FileHighWaterStore> mark;
    int64_t stored_ms = 0;      // the mark in the file, so renew writes only when it rises
    std::string stored_layout;  // ... or when the layout it was written under changes
  };

  const std::string dir_;
  const RegistryOptions options_;
  Mutex mu_;
  std::map<std::string, Held> held_ IDFORGE_GUARDED_BY(mu_);  // by Lease::token
  uint64_t next_token_ IDFORGE_GUARDED_BY(mu_) = 0;
};

}  // namespace idforge::coord
