// HighWaterStore: where a Snowflake generator keeps the time it may issue up to.
//
// Before a generator issues an ID at time T it makes sure a mark >= T is durable here;
// a restarted generator starts strictly above the stored mark. So a crash, or a clock
// set back while the process was down, can lose unused IDs but never repeat one
// (DESIGN.md section 3, invariant 2). Implementations: a file (src/coord/), a lease
// in a coordinator (etcd, ZooKeeper, Redis), and MemoryHighWaterStore for tests.
// Implementations must be thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

#include "idforge/status.h"

namespace idforge {

class HighWaterStore {
 public:
  virtual ~HighWaterStore() = default;
  // The stored mark in Unix ms, or 0 if none was ever stored.
  virtual Result<int64_t> load() = 0;
  // Makes `unix_ms` the stored mark; returns only once it is durable.
  virtual Status store(int64_t unix_ms) = 0;
};

// Keeps the mark in memory: survives a generator, not a process. For tests and for
// callers that persist elsewhere.
class MemoryHighWaterStore final : public HighWaterStore {
 public:
  explicit MemoryHighWaterStore(int64_t initial = 0) : mark_(initial) {}
  Result<int64_t> load() override {
    std::lock_guard lock(mu_);
    return mark_;
  }
  Status store(int64_t unix_ms) override {
    std::lock_guard lock(mu_);
    ++stores_;
    mark_ = unix_ms;
    return Status::Ok();
  }
  int stores() const {
    std::lock_guard lock(mu_);
    return stores_;
  }

 private:
  mutable std::mutex mu_;
  int64_t mark_;
  int stores_ = 0;
};

}  // namespace idforge
