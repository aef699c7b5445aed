// Properties of Layout over every preset and over random custom layouts: compose and
// decode are inverse, validation accepts exactly the layouts whose time range fits.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "idforge/layout.h"

namespace idforge {
namespace {

// Values in [0, max], with the edges drawn often: off-by-one bugs live there.
rc::Gen<uint64_t> field_value(uint64_t max) {
  return rc::gen::oneOf(rc::gen::just<uint64_t>(0), rc::gen::just(max),
                        rc::gen::inRange<uint64_t>(0, max + 1));
}

std::vector<uint64_t> random_values(const Layout& layout) {
  std::vector<uint64_t> values;
  for (size_t i = 0; i < layout.fields().size(); ++i) {
    values.push_back(*field_value(layout.max_value(static_cast<int>(i))));
  }
  return values;
}

// compose -> decode gives back every field, the time as Unix ms, and compose_named
// builds the same id from the Unix time and the other fields by name.
void check_round_trip(const Layout& layout, const std::vector<uint64_t>& values) {
  Result<uint64_t> id = layout.compose(values);
  RC_ASSERT(id.ok());
  if (layout.total_bits() < 64) RC_ASSERT((*id >> layout.total_bits()) == 0u);

  Result<DecodedId> decoded = layout.decode(*id);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(decoded->id == *id);
  RC_ASSERT(decoded->fields.size() == values.size());
  std::vector<std::pair<std::string, uint64_t>> named;
  for (size_t i = 0; i < values.size(); ++i) {
    const FieldValue& f = decoded->fields[i];
    RC_ASSERT(f.value == values[i]);
    RC_ASSERT(f.name == layout.fields()[i].name);
    RC_ASSERT(f.shift == layout.shift(static_cast<int>(i)));
    RC_ASSERT(decoded->get(f.name) == values[i]);
    if (f.role != FieldRole::kTime) named.emplace_back(f.name, f.value);
  }
  const uint64_t tick = values[static_cast<size_t>(layout.time_index())];
  RC_ASSERT(decoded->unix_ms == layout.epoch_ms() + static_cast<int64_t>(tick) * layout.tick_ms());
  RC_ASSERT(layout.tick_of(decoded->unix_ms).value_or(~uint64_t{0}) == tick);

  // Any ms inside the tick names the same tick.
  const int64_t within = *rc::gen::inRange<int64_t>(0, layout.tick_ms());
  Result<uint64_t> again = layout.compose_named(decoded->unix_ms + within, named);
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *id);
}

RC_GTEST_PROP(LayoutProperty, PresetsRoundTrip, ()) {
  const auto& names = Layout::preset_names();
  const std::string name = *rc::gen::elementOf(names);
  const Layout layout = Layout::preset(name).value();
  check_round_trip(layout, random_values(layout));
}

// Any id that fits the layout decodes and composes back to itself: the fields cover
// every bit exactly once.
RC_GTEST_PROP(LayoutProperty, PresetsDecodeIsABijection, ()) {
  const Layout layout = Layout::preset(*rc::gen::elementOf(Layout::preset_names())).value();
  const int bits = layout.total_bits();
  const uint64_t max_id = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t id = *field_value(max_id);
  Result<DecodedId> decoded = layout.decode(id);
  RC_ASSERT(decoded.ok());
  std::vector<uint64_t> values;
  for (const auto& f : decoded->fields) values.push_back(f.value);
  RC_ASSERT(layout.compose(values).value_or(id + 1) == id);
  if (bits < 64) {
    const uint64_t high = *rc::gen::inRange<uint64_t>(1, uint64_t{1} << (64 - bits));
    RC_ASSERT(!layout.decode(id | (high << bits)).ok());
  }
}

struct RandomLayout {
  std::vector<Field> fields;
  int64_t epoch_ms = 0;
  int64_t tick_ms = 1;
};

// 3..8 fields, widths >= 1 summing to at most 64, time and sequence at random places,
// and an epoch and tick for which the time range fits in int64.
RandomLayout random_layout() {
  RandomLayout out;
  const int count = *rc::gen::inRange(3, 9);
  const int total = *rc::gen::inRange(count, 65);
  std::vector<int> widths(static_cast<size_t>(count), 1);
  for (int extra = total - count; extra > 0; --extra) {
    ++widths[static_cast<size_t>(*rc::gen::inRange(0, count))];
  }
  const int time = *rc::gen::inRange(0, count);
  int seq = *rc::gen::inRange(0, count - 1);
  if (seq >= time) ++seq;
  for (int i = 0; i < count; ++i) {
    Field f;
    f.bits = widths[static_cast<size_t>(i)];
    if (i == time) {
      f.name = "time";
      f.role = FieldRole::kTime;
    } else if (i == seq) {
      f.name = "sequence";
      f.role = FieldRole::kSequence;
    } else {
      f.name = "node" + std::to_string(i);
      f.role = FieldRole::kNode;
    }
    out.fields.push_back(f);
  }
  const uint64_t max_tick = (uint64_t{1} << widths[static_cast<size_t>(time)]) - 1;
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const uint64_t max_tick_ms = std::min<uint64_t>(kMax / max_tick, 3'600'000);
  out.tick_ms = static_cast<int64_t>(*rc::gen::inRange<uint64_t>(1, max_tick_ms + 1));
  const uint64_t max_epoch =
      std::min<uint64_t>(kMax - max_tick * static_cast<uint64_t>(out.tick_ms), uint64_t{1} << 42);
  out.epoch_ms = static_cast<int64_t>(*rc::gen::inRange<uint64_t>(0, max_epoch + 1));
  return out;
}

RC_GTEST_PROP(LayoutProperty, CustomLayoutsRoundTrip, ()) {
  const RandomLayout r = random_layout();
  Result<Layout> layout = Layout::create("random", r.epoch_ms, r.tick_ms, r.fields);
  RC_ASSERT(layout.ok());
  int total = 0;
  int shift = 0;
  for (size_t i = r.fields.size(); i-- > 0;) {
    RC_ASSERT(layout->shift(static_cast<int>(i)) == shift);
    shift += r.fields[i].bits;
    total += r.fields[i].bits;
  }
  RC_ASSERT(layout->total_bits() == total);
  check_round_trip(*layout, random_values(*layout));

  // The spec text parses back to the same fields.
  Result<Layout> parsed = Layout::parse(layout->spec(), r.epoch_ms, r.tick_ms);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->fields() == layout->fields());
  RC_ASSERT(parsed->epoch_ms() == r.epoch_ms);
  RC_ASSERT(parsed->tick_ms() == r.tick_ms);
}

// GCC's -Wpedantic objects to __int128 unless marked as an extension.
__extension__ typedef __int128 Int128;

// create() accepts a layout exactly when epoch + max_tick * tick fits in int64,
// checked against 128-bit arithmetic.
RC_GTEST_PROP(LayoutProperty, TimeRangeValidationMatchesWideArithmetic, ()) {
  const int time_bits = *rc::gen::inRange(30, 64);
  const int64_t tick =
      *rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 5), rc::gen::inRange<int64_t>(1, 1'000'000'000));
  const int64_t epoch = *rc::gen::oneOf(rc::gen::inRange<int64_t>(0, 3),
                                        rc::gen::inRange<int64_t>(0, int64_t{1} << 62));
  const std::vector<Field> fields = {{"time", time_bits, FieldRole::kTime},
                                     {"sequence", 1, FieldRole::kSequence}};
  const Int128 last =
      static_cast<Int128>(epoch) + static_cast<Int128>((uint64_t{1} << time_bits) - 1) * tick;
  const bool fits = last <= std::numeric_limits<int64_t>::max();
  Result<Layout> layout = Layout::create("t", epoch, tick, fields);
  RC_ASSERT(layout.ok() == fits);
  if (fits) RC_ASSERT(static_cast<Int128>(layout->capacity().last_unix_ms) == last);
}

}  // namespace
}  // namespace idforge
