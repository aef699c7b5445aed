// Small things the segment stores share (idforge_store_common, linked by each store's
// own target in store/<kind>/).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/now_ms.h"
#include "idforge/segment_store.h"
#include "idforge/status.h"

namespace idforge::store {

// The largest max_id (and start) a tag may have: every store keeps it as a signed
// 64-bit integer (2^63-1).
inline constexpr uint64_t kMaxId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// The wall clock in Unix milliseconds, for a tag's updated_at.
inline int64_t now_unix_ms() { return unix_now_ms(); }

// What every store checks before it creates a tag: the name (validate_tag_name), a
// start from 1 to kMaxId, and the step (validate_step).
Status check_new_tag(const TagSpec& spec);

// A store's striping place as recorded in it: "INDEX/COUNT".
std::string place_text(uint32_t index, uint32_t count);
// Ok when `recorded` is place (index, count); otherwise InvalidArgument naming both
// places, since two stores at one place would hand out the same IDs.
Status check_place(std::string_view store, std::string_view recorded, uint32_t index,
                   uint32_t count);

}  // namespace idforge::store
