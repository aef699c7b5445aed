#include "snowflake_mark.h"

#include <algorithm>
#include <atomic>
#include <charconv>

#include "idforge/time_format.h"
#include "snowflake_impl.h"

namespace idforge {
namespace {

constexpr std::string_view kEpoch = ";epoch=";
constexpr std::string_view kTick = ";tick_ms=";

void raise_to(std::atomic<int64_t>& value, int64_t to) {
  int64_t seen = value.load(std::memory_order_relaxed);
  while (to > seen && !value.compare_exchange_weak(seen, to, std::memory_order_relaxed)) {
  }
}

constexpr const char* kRecovery = "see 'Clock steps' in docs/operations.md";

template <typename Int>
bool parse_int(std::string_view text, Int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::string mark_layout_key(const Layout& layout) {
  return layout.spec() + std::string(kEpoch) + std::to_string(layout.epoch_ms()) +
         std::string(kTick) + std::to_string(layout.tick_ms());
}

namespace internal {

Result<Layout> parse_mark_layout_key(std::string_view key) {
  const auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(key.substr(0, 200)) +
                                   "' is not a layout as a high-water mark records it");
  };
  const size_t epoch_at = key.find(kEpoch);
  const size_t tick_at = key.find(kTick);
  if (epoch_at == std::string_view::npos || tick_at == std::string_view::npos ||
      tick_at < epoch_at) {
    return bad();
  }
  const std::string_view spec = key.substr(0, epoch_at);
  int64_t epoch = 0;
  int64_t tick = 0;
  if (!parse_int(key.substr(epoch_at + kEpoch.size(), tick_at - epoch_at - kEpoch.size()),
                 &epoch) ||
      !parse_int(key.substr(tick_at + kTick.size()), &tick) || epoch < 0 || tick < 1) {
    return bad();
  }
  Result<Layout> layout = Layout::parse(spec, epoch, tick);
  // A spec that reads back to other fields (roles by name) is not one we wrote.
  if (!layout.ok() || layout->spec() != spec) return bad();
  return layout;
}

std::string describe_layout(const Layout& layout) {
  return layout.spec() + " (epoch " + format_iso8601_utc(layout.epoch_ms()) + ", tick " +
         std::to_string(layout.tick_ms()) + " ms)";
}

Result<uint64_t> first_tick_above(const Layout& old, int64_t old_mark_ms, const Layout& next) {
  if (old_mark_ms < old.epoch_ms()) return uint64_t{0};
  const uint64_t old_tick = std::min(
      static_cast<uint64_t>((old_mark_ms - old.epoch_ms()) / old.tick_ms()), old.max_tick());
  // The largest ID `old` can have made by then: that tick, every other field full.
  uint64_t upper = 0;
  for (int i = 0; i < static_cast<int>(old.fields().size()); ++i) {
    const uint64_t value = i == old.time_index() ? old_tick : old.max_value(i);
    upper |= value << old.shift(i);
  }
  // IDs of `next` grow with the tick whatever the other fields hold, so the first tick
  // whose time bits alone exceed `upper` is the answer.
  const uint64_t below = upper >> next.time_shift();
  if (below >= next.max_tick()) {
    return Status::OutOfRange("no ID of layout " + describe_layout(next) +
                              " is above the IDs layout " + describe_layout(old) +
                              " may have issued up to " + format_iso8601_utc(old_mark_ms));
  }
  return below + 1;
}

}  // namespace internal

// The generator's trusted time and its start's refusal, here to keep snowflake.cc to
// the issuing itself.

int64_t SnowflakeGeneratorImpl::trusted_now_ms() const {
  return monotonic_() + trust_offset_.load(std::memory_order_relaxed);
}

int64_t SnowflakeGeneratorImpl::trusted_ms(int64_t clock_ms) {
  if (!guard_) return clock_ms;
  // The common case costs one load: a reading below a ceiling computed earlier (the
  // trusted time only grows, so an old ceiling is a safe one).
  if (clock_ms <= trust_ceiling_ms_.load(std::memory_order_relaxed)) {
    if (clock_ahead_ms_.load(std::memory_order_relaxed) != 0) {
      clock_ahead_ms_.store(0, std::memory_order_relaxed);
    }
    return clock_ms;
  }
  const int64_t mono = monotonic_();
  int64_t offset = trust_offset_.load(std::memory_order_relaxed);
  const int64_t trusted = mono + offset;
  if (clock_ms - trusted > max_step_ms_) {
    // A jump: counted once until the clock comes back within reach.
    if (clock_ahead_ms_.exchange(clock_ms - trusted, std::memory_order_relaxed) == 0) {
      clock_jumps_.fetch_add(1, std::memory_order_relaxed);
    }
    return trusted;
  }
  // A step within bounds: the trusted time follows the clock from here.
  while (clock_ms - mono > offset &&
         !trust_offset_.compare_exchange_weak(offset, clock_ms - mono, std::memory_order_relaxed)) {
  }
  raise_to(trust_ceiling_ms_, std::max(clock_ms, trusted) + max_step_ms_);
  clock_ahead_ms_.store(0, std::memory_order_relaxed);
  return clock_ms;
}

Status SnowflakeGeneratorImpl::start_refused(const HighWaterMark& mark,
                                             const std::string& old_layout, int64_t now_ms,
                                             int64_t need_ms) const {
  const std::string policy = "policy " + std::string(policy_name(policy_)) + " (max_drift_ms " +
                             ms_text(max_drift_ms_) + ", max_startup_wait_ms " +
                             ms_text(startup_wait_ms_) + ")";
  if (!old_layout.empty()) {
    // Not a clock problem: the new layout's IDs would sort below the old one's.
    return Status::InvalidArgument(
        "the layout changed from " + old_layout + " to " + internal::describe_layout(layout_) +
        ": its IDs are above every ID the old layout may have issued up to the high-water mark " +
        format_iso8601_utc(mark.unix_ms) + " only from " + format_iso8601_utc(need_ms) + ", " +
        ms_text(need_ms - now_ms) + " from now (" + format_iso8601_utc(now_ms) + "), which " +
        policy + " does not wait for; keep the old layout or choose an earlier epoch");
  }
  std::string text = "the clock (" + format_iso8601_utc(now_ms) + ") is " +
                     ms_text(need_ms - now_ms) + " behind the high-water mark " +
                     format_iso8601_utc(mark.unix_ms) + " of an earlier run; " + policy +
                     " will not issue IDs until it passes it";
  if (max_step_ms_ > 0 && mark.unix_ms - now_ms > max_step_ms_ + max_drift_ms_ + reserve_ms_) {
    // Further ahead than a running generator ever writes: an older version or a clock
    // that was wrong when this node started wrote it (or this clock is wrong now).
    text +=
        "; no generator writes a mark that far ahead of its clock, so that clock ran ahead "
        "(or this one is behind): if this clock is right, wait for it or move this node to "
        "another worker id; " +
        std::string(kRecovery);
  } else {
    text += "; " + std::string(kRecovery);
  }
  return Status::Unavailable(text);
}

}  // namespace idforge
