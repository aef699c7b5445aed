// What the Snowflake generator needs to read a high-water mark written under another
// layout: the layout's text as marks record it, and the first tick of a new layout
// whose IDs are all above what the old one could have issued. snowflake_mark.cc also
// holds the generator's trusted time (the clock-jump guard) and its start's refusal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idforge/layout.h"
#include "idforge/status.h"

namespace idforge {

// The layout as a high-water mark records it: the field spec, epoch and tick,
// "time:41,datacenter:5,worker:5,sequence:12;epoch=1288834974657;tick_ms=1". Stores and
// registries keep it as opaque text (HighWaterMark::layout, Lease::high_water_layout).
std::string mark_layout_key(const Layout& layout);

}  // namespace idforge

namespace idforge::internal {

// Reads mark_layout_key() back. InvalidArgument when `key` is not one.
Result<Layout> parse_mark_layout_key(std::string_view key);

// "time:41,datacenter:5,worker:5,sequence:12 (epoch 2010-11-04T01:42:54.657Z, tick 1 ms)",
// for messages.
std::string describe_layout(const Layout& layout);

// The first tick of `next` whose smallest ID (any node, sequence 0) is above every ID
// `old` can have made at or before `old_mark_ms` on any node; 0 when `old` made none
// (a mark before its epoch). OutOfRange when no tick of `next` is that high.
Result<uint64_t> first_tick_above(const Layout& old, int64_t old_mark_ms, const Layout& next);

}  // namespace idforge::internal
