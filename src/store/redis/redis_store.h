// The Redis SegmentStore. See segment_store.h for the contract every store keeps.
#pragma once

#include <memory>
#include <string_view>

#include "idforge/segment_store.h"

namespace idforge::store {

Result<std::unique_ptr<SegmentStore>> open_redis_store(std::string_view url);

}  // namespace idforge::store
