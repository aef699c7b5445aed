// UlidGeneratorImpl: the state behind the UlidGenerator interface
// (include/idforge/ulid.h): the last millisecond and 80-bit random part, under one
// mutex. Internal: included as "core/ulid_impl.h", never installed. The class is final,
// so a caller that holds it calls next() without a virtual call.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "idforge/clock.h"
#include "idforge/ulid.h"
#include "thread_annotations.h"

namespace idforge {

class UlidGeneratorImpl final : public UlidGenerator {
 public:
  explicit UlidGeneratorImpl(Clock* clock = nullptr);  // default_clock() when null

  Ulid next() override IDFORGE_EXCLUDES(mu_);
  void next_batch(std::span<Ulid> out) override IDFORGE_EXCLUDES(mu_);

 private:
  friend struct UlidGeneratorTestPeer;  // tests force the random part near overflow

  // Advances (last_ms_, last_random_) for one ULID and writes it to `out`.
  void stamp_locked(int64_t now_ms, Ulid& out) IDFORGE_REQUIRES(mu_);

  Clock* const clock_;
  Mutex mu_;
  int64_t last_ms_ IDFORGE_GUARDED_BY(mu_) = -1;  // -1: nothing issued yet
  std::array<uint8_t, 10> last_random_ IDFORGE_GUARDED_BY(mu_){};
};

}  // namespace idforge
