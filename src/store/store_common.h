// Small things the segment stores share.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

namespace idforge::store {

// The largest max_id (and start) a tag may have: every store keeps it as a signed
// 64-bit integer (2^63-1).
inline constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// The wall clock in Unix milliseconds, for a tag's updated_at.
inline int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace idforge::store
