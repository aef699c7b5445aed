// Layout::parse, decode, compose, compose_named and core/bit_diagram.h. Input lines:
//   1: a layout (preset name or custom spec)   2: epoch ms   3: tick ms
//   4..: IDs to decode (decimal; any other line is hashed to 64 bits)
// A missing or non-numeric epoch or tick means "not given" (-1). Checked:
// - a parsed layout keeps its rules: 1..16 uniquely named fields of 1..63 bits, at most
//   64 in all, one time and one sequence field, shifts that tile the bits, an end of
//   time that fits in int64; spec() parses back to the same fields;
// - decode accepts exactly the IDs without bits above total_bits(); a decoded ID
//   composes back to itself, by value and by name, and its time round-trips through
//   tick_of; bit_diagram shows four aligned rows whose binary row is the ID's 64 bits.
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/bit_diagram.h"
#include "fuzz_support.h"
#include "idforge/layout.h"

namespace idforge::fuzz {
namespace {

void check_layout(const Layout& layout) {
  const std::vector<Field>& fields = layout.fields();
  IDFORGE_FUZZ_CHECK(!fields.empty() && fields.size() <= Layout::kMaxFields, "field count");
  std::set<std::string> names;
  int total = 0;
  int times = 0;
  int sequences = 0;
  for (size_t i = fields.size(); i-- > 0;) {
    const Field& f = fields[i];
    IDFORGE_FUZZ_CHECK(names.insert(f.name).second, "repeated field name " + f.name);
    IDFORGE_FUZZ_CHECK(f.bits >= 1 && f.bits <= 63, "width of " + f.name);
    IDFORGE_FUZZ_CHECK(layout.shift(static_cast<int>(i)) == total, "shift of " + f.name);
    IDFORGE_FUZZ_CHECK(layout.field_index(f.name) == static_cast<int>(i), "field_index");
    total += f.bits;
    times += f.role == FieldRole::kTime ? 1 : 0;
    sequences += f.role == FieldRole::kSequence ? 1 : 0;
  }
  IDFORGE_FUZZ_CHECK(total == layout.total_bits() && total <= 64, "total bits");
  IDFORGE_FUZZ_CHECK(times == 1 && sequences == 1, "one time and one sequence field");
  IDFORGE_FUZZ_CHECK(layout.tick_ms() >= 1 && layout.epoch_ms() >= 0, "epoch or tick");
  const Capacity capacity = layout.capacity();
  IDFORGE_FUZZ_CHECK(capacity.last_unix_ms == layout.unix_ms_of(layout.max_tick()),
                     "capacity's last ms");
  IDFORGE_FUZZ_CHECK(capacity.ids_per_tick == layout.max_sequence() + 1, "ids per tick");
  // The end of time is representable, so tick_of accepts it and nothing after its tick.
  const Result<uint64_t> last = layout.tick_of(capacity.last_unix_ms);
  IDFORGE_FUZZ_CHECK(last.ok() && *last == layout.max_tick(), "tick_of the last ms");
  IDFORGE_FUZZ_CHECK(!layout.tick_of(layout.epoch_ms() - 1).ok(), "tick_of before the epoch");
  if (capacity.last_unix_ms <= std::numeric_limits<int64_t>::max() - layout.tick_ms()) {
    const int64_t end = capacity.last_unix_ms + layout.tick_ms();
    const Result<uint64_t> inside = layout.tick_of(end - 1);
    IDFORGE_FUZZ_CHECK(inside.ok() && *inside == layout.max_tick(), "tick_of inside the last tick");
    IDFORGE_FUZZ_CHECK(!layout.tick_of(end).ok(), "tick_of after the end of time");
  }

  const Result<Layout> again = Layout::parse(layout.spec(), layout.epoch_ms(), layout.tick_ms());
  IDFORGE_FUZZ_CHECK(again.ok(),
                     "spec() " + layout.spec() + " does not parse: " + again.status().to_string());
  IDFORGE_FUZZ_CHECK(again->fields() == fields && again->epoch_ms() == layout.epoch_ms() &&
                         again->tick_ms() == layout.tick_ms(),
                     "spec() " + layout.spec() + " parses to another layout");
}

std::string binary64(uint64_t id) {
  std::string out;
  for (int b = 63; b >= 0; --b) out += ((id >> b) & 1) != 0 ? '1' : '0';
  return out;
}

void check_diagram(const Layout& layout, uint64_t id) {
  const std::string diagram = bit_diagram(layout, id);
  std::vector<std::string_view> rows;
  std::string_view rest = diagram;
  while (!rest.empty()) rows.push_back(take_line(rest));
  IDFORGE_FUZZ_CHECK(rows.size() == 4, "bit_diagram rows: " + diagram);
  for (std::string_view row : rows) {
    IDFORGE_FUZZ_CHECK(row.size() == rows[0].size() && !row.empty() && row.back() == '|',
                       "bit_diagram rows are not aligned: " + diagram);
  }
  std::string bits;
  for (char c : rows[2].substr(6)) {
    if (c == '0' || c == '1') bits += c;
  }
  IDFORGE_FUZZ_CHECK(bits == binary64(id), "bit_diagram's binary row is not the ID: " + diagram);
}

void check_id(const Layout& layout, uint64_t id) {
  check_diagram(layout, id);
  const Result<DecodedId> decoded = layout.decode(id);
  const bool fits = layout.total_bits() == 64 || (id >> layout.total_bits()) == 0;
  IDFORGE_FUZZ_CHECK(decoded.ok() == fits,
                     "decode accepts IDs with high bits: " + std::to_string(id));
  if (!decoded.ok()) return;
  IDFORGE_FUZZ_CHECK(decoded->id == id && decoded->fields.size() == layout.fields().size(),
                     "decoded fields");
  std::vector<uint64_t> values;
  std::vector<std::pair<std::string, uint64_t>> named;
  uint64_t tick = 0;
  for (size_t i = 0; i < decoded->fields.size(); ++i) {
    const FieldValue& f = decoded->fields[i];
    IDFORGE_FUZZ_CHECK(f.value <= layout.max_value(static_cast<int>(i)), "value above width");
    IDFORGE_FUZZ_CHECK(decoded->get(f.name) == f.value, "get() of " + f.name);
    values.push_back(f.value);
    if (f.role == FieldRole::kTime) {
      tick = f.value;
    } else {
      named.emplace_back(f.name, f.value);
    }
  }
  IDFORGE_FUZZ_CHECK(decoded->unix_ms == layout.unix_ms_of(tick), "decoded time");
  const Result<uint64_t> composed = layout.compose(values);
  IDFORGE_FUZZ_CHECK(composed.ok() && *composed == id, "compose(decode(id)) != id");
  const Result<uint64_t> by_name = layout.compose_named(decoded->unix_ms, named);
  IDFORGE_FUZZ_CHECK(by_name.ok() && *by_name == id,
                     "compose_named(decode(id)) != id: " +
                         (by_name.ok() ? std::to_string(*by_name) : by_name.status().to_string()));
  const Result<uint64_t> tick_back = layout.tick_of(decoded->unix_ms);
  IDFORGE_FUZZ_CHECK(tick_back.ok() && *tick_back == tick, "tick_of(unix_ms_of(tick)) != tick");
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  std::string_view rest = as_text(data, size);
  const std::string_view spec = take_line(rest);
  const int64_t epoch = to_int64(take_line(rest)).value_or(-1);
  const int64_t tick = to_int64(take_line(rest)).value_or(-1);
  const idforge::Result<idforge::Layout> layout = idforge::Layout::parse(spec, epoch, tick);
  if (!layout.ok()) {
    IDFORGE_FUZZ_CHECK(!layout.status().message().empty(), "an error without a message");
    return 0;
  }
  check_layout(*layout);
  std::vector<uint64_t> ids = {0, ~uint64_t{0}, uint64_t{1} << 63, (uint64_t{1} << 63) - 1};
  for (int i = 0; i < 16 && !rest.empty(); ++i) {
    const std::string_view line = take_line(rest);
    ids.push_back(to_uint64(line).value_or(hash64(line)));
  }
  for (uint64_t id : ids) check_id(*layout, id);
  return 0;
}
