// Uuid7GeneratorImpl: the state behind the Uuid7Generator interface
// (include/idforge/uuid.h): the last millisecond and counter, under one mutex.
// Internal: included as "core/uuid_impl.h", never installed. The class is final, so a
// caller that holds it (the server, the benchmarks) calls next() without a virtual call.
#pragma once

#include <cstdint>
#include <span>

#include "idforge/clock.h"
#include "idforge/uuid.h"
#include "thread_annotations.h"

namespace idforge {

class Uuid7GeneratorImpl final : public Uuid7Generator {
 public:
  explicit Uuid7GeneratorImpl(Clock* clock = nullptr);  // default_clock() when null

  Uuid next() override IDFORGE_EXCLUDES(mu_);
  void next_batch(std::span<Uuid> out) override IDFORGE_EXCLUDES(mu_);

 private:
  friend struct Uuid7GeneratorTestPeer;  // tests force the counter near overflow

  // Advances (last_ms_, counter_) for one UUID and writes them into `uuid`, whose
  // last four bytes the caller has already filled with random bits.
  void stamp_locked(int64_t now_ms, Uuid& uuid) IDFORGE_REQUIRES(mu_);

  Clock* const clock_;
  Mutex mu_;
  int64_t last_ms_ IDFORGE_GUARDED_BY(mu_) = -1;  // -1: nothing issued yet
  uint64_t counter_ IDFORGE_GUARDED_BY(mu_) = 0;  // 42 bits
};

}  // namespace idforge
