#include "config/values.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/layout_text.h"
#include "core/parse_u64.h"
#include "core/text.h"
#include "idforge/time_format.h"

namespace idforge::config {
namespace {

// A day: longer ticks make a time field that says almost nothing.
constexpr uint64_t kMaxTickMs = 86'400'000;

}  // namespace

Result<uint64_t> parse_number(std::string_view text, std::string_view what) {
  Result<uint64_t> number = parse_u64(text, what);
  if (number.ok()) return number;
  if (text.empty()) return Status::InvalidArgument(fmt::format("{} is empty", what));
  bool all_digits = std::all_of(text.begin(), text.end(), text::is_digit);
  if (all_digits) {
    return Status::OutOfRange(fmt::format("{} '{}' is too large (the largest is {})", what, text,
                                          std::numeric_limits<uint64_t>::max()));
  }
  return Status::InvalidArgument(
      fmt::format("{} must be a non-negative whole number, got '{}'", what, text));
}

Result<Layout> resolve_layout(const LayoutFlags& flags) {
  int64_t epoch_ms = -1;  // Layout::parse reads negative as "the layout's own"
  if (flags.epoch) {
    Result<int64_t> epoch = parse_time(*flags.epoch);
    if (!epoch.ok()) {
      return Status::InvalidArgument(fmt::format("--epoch: {}", epoch.status().message()));
    }
    if (*epoch < 0) return Status::InvalidArgument("--epoch must not be before 1970-01-01");
    epoch_ms = *epoch;
  }
  int64_t tick_ms = -1;
  if (flags.tick_ms) {
    IDFORGE_ASSIGN_OR_RETURN(uint64_t tick, parse_number(*flags.tick_ms, "--tick-ms"));
    if (tick == 0 || tick > kMaxTickMs) {
      return Status::InvalidArgument(
          fmt::format("--tick-ms must be from 1 to {}, got {}", kMaxTickMs, tick));
    }
    tick_ms = static_cast<int64_t>(tick);
  }

  return resolve_layout_spec(flags.layout, epoch_ms, tick_ms);
}

}  // namespace idforge::config
