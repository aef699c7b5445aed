// HighWaterStore: where a Snowflake generator keeps the time it may issue up to.
//
// Before a generator issues an ID at time T it makes sure a mark >= T is durable here;
// a restarted generator starts strictly above the stored mark. So a crash, or a clock
// set back while the process was down, can lose unused IDs but never repeat one
// (docs/architecture.md, invariant 2). A user implements one over storage that
// survives the process (a file, a database row) and passes it as
// SnowflakeOptions::high_water; MemoryHighWaterStore below is for tests. idforge's own
// are a file and a worker-id lease in a coordinator (etcd, ZooKeeper, Redis).
// Implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "idforge/status.h"

namespace idforge {

// A mark with the layout it was written under: text the generator writes (keep it as
// given and hand it back), or empty when unknown (a store that keeps no layout, or a
// mark of an older version). A mark is a time, so it bounds the IDs issued only in the
// terms of its layout; a generator with another layout starts above every ID that
// layout could have made.
struct HighWaterMark {
  int64_t unix_ms = 0;  // 0: none stored
  std::string layout;
};

class HighWaterStore {
 public:
  virtual ~HighWaterStore() = default;
  // The stored mark in Unix ms, or 0 if none was ever stored.
  virtual Result<int64_t> load() = 0;
  // Makes `unix_ms` the stored mark; returns only once it is durable.
  virtual Status store(int64_t unix_ms) = 0;
  // The same with the layout. A store that keeps the layout overrides both; these
  // defaults keep only the time (and report the layout as unknown).
  virtual Result<HighWaterMark> load_mark() {
    IDFORGE_ASSIGN_OR_RETURN(int64_t ms, load());
    return HighWaterMark{ms, {}};
  }
  virtual Status store_mark(const HighWaterMark& mark) { return store(mark.unix_ms); }
};

// Keeps the mark in memory: survives a generator, not a process. For tests and for
// callers that persist elsewhere. An interface, like the generators: create() returns
// the implementation.
//
//   auto store = idforge::MemoryHighWaterStore::create();
//   options.high_water = store.get();
class MemoryHighWaterStore : public HighWaterStore {
 public:
  // Starts with the mark `initial` written under `layout`.
  static std::unique_ptr<MemoryHighWaterStore> create(int64_t initial = 0, std::string layout = {});

  // How many marks were stored (store() and store_mark() calls).
  virtual int stores() const = 0;

 protected:
  MemoryHighWaterStore() = default;
};

}  // namespace idforge
