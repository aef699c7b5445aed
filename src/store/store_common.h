// Small things the segment stores share.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

#include "core/now_ms.h"

namespace idforge::store {

// The largest max_id (and start) a tag may have: every store keeps it as a signed
// 64-bit integer (2^63-1).
inline constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// The wall clock in Unix milliseconds, for a tag's updated_at.
inline int64_t now_unix_ms() { return unix_now_ms(); }

}  // namespace idforge::store
