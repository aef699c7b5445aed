// A layout as people name it and a decoded ID as people read it, shared by the CLI
// (`idforge parse`, `compose`, `next`) and the C++ client's Client::parse, so both
// accept the same names and print the same fields.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/layout.h"
#include "idforge/status.h"

namespace idforge {

// "" (twitter), a preset name or a custom spec, with an epoch and a tick (negative: the
// layout's own). A word without ':' that names no preset lists the presets; a spec that
// does not parse is "invalid layout 'SPEC': why", with Layout::parse's code.
Result<Layout> resolve_layout_spec(std::string_view spec, int64_t epoch_ms = -1,
                                   int64_t tick_ms = -1);

// The non-time fields of `decoded` under the keys `idforge parse --json` gives them: the
// field's name, or "field_NAME" for a custom field named id, layout, unix_ms or time. A
// key seen twice keeps its first place and takes the later value, as in a JSON object.
std::vector<std::pair<std::string, uint64_t>> decoded_field_values(const DecodedId& decoded);

}  // namespace idforge
