// Values that the command line and `idforge serve`'s configuration read alike: whole
// numbers with messages that quote what was given, the most IDs one call may ask for,
// and a Snowflake layout chosen by preset or spec with an optional epoch and tick.
//
//   LayoutFlags flags{.layout = "sonyflake", .epoch = "2024-01-01T00:00:00Z"};
//   Result<Layout> layout = resolve_layout(flags);
//
// Thread-safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "idforge/layout.h"
#include "idforge/status.h"

namespace idforge::config {

// The most IDs one invocation prints or one request asks for: plenty for a bulk load,
// and a typo (one zero too many) cannot fill a disk.
inline constexpr uint64_t kMaxCount = 10'000'000;

// A whole number with a message that quotes `what` ("--worker", "ID") and the text.
Result<uint64_t> parse_number(std::string_view text, std::string_view what);

// --layout, --epoch and --tick-ms as given: how a command or the server reads or writes
// Snowflake IDs.
struct LayoutFlags {
  std::string layout;                  // preset or custom spec; empty = twitter
  std::optional<std::string> epoch;    // Unix ms or ISO-8601
  std::optional<std::string> tick_ms;  // whole ms
};

// The layout the flags select. An unknown preset name lists the presets.
Result<Layout> resolve_layout(const LayoutFlags& flags);

}  // namespace idforge::config
