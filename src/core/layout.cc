#include "idforge/layout.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/time_format.h"
#include "quote.h"
#include "text.h"

namespace idforge {
namespace {

constexpr int kMaxFieldBits = 63;
constexpr int64_t kTwitterEpochMs = 1288834974657;
constexpr std::string_view kCustomName = "custom";
constexpr std::string_view kSpecExample = "time:41,datacenter:5,worker:5,sequence:12";

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool valid_field_name(std::string_view name) {
  if (name.empty() || !is_lower(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_lower(c) || is_digit(c) || c == '_'; });
}

std::string quote(std::string_view text) { return quote_text(text, '"'); }

// Spaces and tabs around a layout spec and its items.
std::string_view trim(std::string_view s) { return text::trim(s, " \t"); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string field_error(std::string_view field, std::string_view what) {
  std::string out = "layout field '";
  out += field;
  out += "': ";
  out += what;
  return out;
}

std::string layout_error(std::string_view layout, std::string_view what) {
  std::string out = "layout ";
  out += layout.empty() ? std::string_view("(unnamed)") : layout;
  out += ": ";
  out += what;
  return out;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

struct PresetDef {
  std::string_view name;
  int64_t epoch_ms;
  int64_t tick_ms;
  std::vector<Field> fields;
};

// docs/snowflake.md; each line's source is in tests/data/snowflake_vectors.txt.
const std::vector<PresetDef>& preset_defs() {
  using R = FieldRole;
  static const std::vector<PresetDef> defs = {
      {"twitter",
       kTwitterEpochMs,
       1,
       {{"time", 41, R::kTime},
        {"datacenter", 5, R::kNode},
        {"worker", 5, R::kNode},
        {"sequence", 12, R::kSequence}}},
      {"discord",
       1420070400000,
       1,
       {{"time", 42, R::kTime},
        {"worker", 5, R::kNode},
        {"process", 5, R::kNode},
        {"increment", 12, R::kSequence}}},
      {"instagram",
       1314220021721,
       1,
       {{"time", 41, R::kTime}, {"shard", 13, R::kNode}, {"sequence", 10, R::kSequence}}},
      {"sonyflake",
       1409529600000,
       10,
       {{"time", 39, R::kTime}, {"sequence", 8, R::kSequence}, {"machine", 16, R::kNode}}},
      // uid-generator parses its epoch "2016-05-20" in China time (UTC+8).
      {"baidu",
       1463673600000,
       1000,
       {{"time", 28, R::kTime}, {"worker", 22, R::kNode}, {"sequence", 13, R::kSequence}}},
  };
  return defs;
}

const std::vector<Layout>& preset_layouts() {
  static const std::vector<Layout> layouts = [] {
    std::vector<Layout> out;
    for (const auto& def : preset_defs()) {
      Result<Layout> layout =
          Layout::create(std::string(def.name), def.epoch_ms, def.tick_ms, def.fields);
      assert(layout.ok() && "every preset is a valid layout");
      out.push_back(std::move(layout).value());
    }
    return out;
  }();
  return layouts;
}

FieldRole role_from_name(std::string_view name) {
  if (name == "time") return FieldRole::kTime;
  if (name == "sequence" || name == "seq" || name == "increment") return FieldRole::kSequence;
  return FieldRole::kNode;
}

Result<std::vector<Field>> parse_custom_fields(std::string_view spec) {
  std::vector<Field> fields;
  size_t pos = 0;
  while (true) {
    const size_t comma = spec.find(',', pos);
    const std::string_view raw =
        spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const std::string_view item = trim(raw);
    if (item.empty()) {
      return Status::InvalidArgument("layout spec " + quote(spec) +
                                     " has an empty item; expected name:bits,... like " +
                                     std::string(kSpecExample));
    }
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos || item.find(':', colon + 1) != std::string_view::npos) {
      return Status::InvalidArgument("layout spec item " + quote(item) +
                                     " is not name:bits (e.g. worker:5)");
    }
    const std::string_view name = trim(item.substr(0, colon));
    const std::string_view bits_text = trim(item.substr(colon + 1));
    // Widths beyond three digits cannot be valid; refusing them early avoids overflow.
    if (bits_text.empty() || bits_text.size() > 3 ||
        !std::all_of(bits_text.begin(), bits_text.end(), is_digit)) {
      return Status::InvalidArgument("layout spec item " + quote(item) + ": width " +
                                     quote(bits_text) + " is not a number of bits");
    }
    int bits = 0;
    for (char c : bits_text) bits = bits * 10 + (c - '0');
    fields.push_back(Field{std::string(name), bits, role_from_name(name)});
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return fields;
}

}  // namespace

uint64_t DecodedId::get(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return f.value;
  }
  return 0;
}

Result<Layout> Layout::create(std::string name, int64_t epoch_ms, int64_t tick_ms,
                              std::vector<Field> fields) {
  if (fields.empty() || fields.size() > static_cast<size_t>(kMaxFields)) {
    return Status::InvalidArgument(layout_error(
        name, "has " + std::to_string(fields.size()) + " fields; a layout has 1.." +
                  std::to_string(kMaxFields) + " (one time, one sequence, any node fields)"));
  }
  int total = 0;
  int time_index = -1;
  int sequence_index = -1;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Field& f = fields[i];
    if (!valid_field_name(f.name)) {
      return Status::InvalidArgument("layout field " + quote(f.name) +
                                     ": a name is a lower-case letter then letters, digits or '_'");
    }
    for (size_t j = 0; j < i; ++j) {
      if (fields[j].name == f.name) {
        return Status::InvalidArgument(field_error(f.name, "the name is used twice"));
      }
    }
    if (f.bits < 1 || f.bits > kMaxFieldBits) {
      return Status::InvalidArgument(field_error(
          f.name,
          "width " + std::to_string(f.bits) + " is not in 1.." + std::to_string(kMaxFieldBits)));
    }
    total += f.bits;
    if (total > Layout::kIdBits) {
      return Status::InvalidArgument(field_error(f.name, "the widths up to this field sum to " +
                                                             std::to_string(total) +
                                                             " bits, more than the 64 of an ID"));
    }
    int* slot = nullptr;
    const char* role = nullptr;
    if (f.role == FieldRole::kTime) {
      slot = &time_index;
      role = "time";
    } else if (f.role == FieldRole::kSequence) {
      slot = &sequence_index;
      role = "sequence";
    }
    if (slot != nullptr) {
      if (*slot >= 0) {
        return Status::InvalidArgument(
            field_error(f.name, std::string("a layout has one ") + role + " field and '" +
                                    fields[static_cast<size_t>(*slot)].name + "' is already it"));
      }
      *slot = static_cast<int>(i);
    }
  }
  if (time_index < 0) {
    return Status::InvalidArgument(
        layout_error(name, "has no time field (a custom spec names it 'time')"));
  }
  if (sequence_index < 0) {
    return Status::InvalidArgument(layout_error(
        name, "has no sequence field (a custom spec names it 'sequence', 'seq' or 'increment')"));
  }
  if (tick_ms < 1) {
    return Status::InvalidArgument(
        layout_error(name, "tick_ms " + std::to_string(tick_ms) + " is not >= 1"));
  }
  if (epoch_ms < 0) {
    return Status::InvalidArgument(
        layout_error(name, "epoch_ms " + std::to_string(epoch_ms) + " is before 1970"));
  }
  // unix_ms_of(max_tick) must not overflow, so that every decodable ID has a time.
  const Field& time = fields[static_cast<size_t>(time_index)];
  const uint64_t max_tick = (uint64_t{1} << time.bits) - 1;
  const auto headroom = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - epoch_ms);
  if (max_tick > headroom / static_cast<uint64_t>(tick_ms)) {
    return Status::InvalidArgument(
        field_error(time.name, std::to_string(time.bits) + " bits of " + std::to_string(tick_ms) +
                                   " ms ticks from epoch " + std::to_string(epoch_ms) +
                                   " run past the largest int64 Unix ms"));
  }

  Layout layout;
  layout.name_ = std::move(name);
  layout.epoch_ms_ = epoch_ms;
  layout.tick_ms_ = tick_ms;
  layout.total_bits_ = total;
  layout.time_index_ = time_index;
  layout.sequence_index_ = sequence_index;
  layout.shifts_.assign(fields.size(), 0);
  int shift = 0;
  for (size_t i = fields.size(); i-- > 0;) {
    layout.shifts_[i] = shift;
    shift += fields[i].bits;
  }
  layout.fields_ = std::move(fields);
  return layout;
}

const std::vector<std::string>& Layout::preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& def : preset_defs()) out.emplace_back(def.name);
    return out;
  }();
  return names;
}

Result<Layout> Layout::preset(std::string_view name) {
  const std::string wanted = lower(name);
  for (const Layout& layout : preset_layouts()) {
    if (layout.name() == wanted) return layout;
  }
  return Status::InvalidArgument("unknown layout " + quote(name) + "; the presets are " +
                                 join_names(preset_names()));
}

const Layout& Layout::twitter() { return preset_layouts().front(); }

Result<Layout> Layout::parse(std::string_view spec, int64_t epoch_ms, int64_t tick_ms) {
  const std::string_view text = trim(spec);
  if (text.find(':') == std::string_view::npos) {
    Result<Layout> preset = Layout::preset(text);
    if (!preset.ok()) {
      return Status::InvalidArgument("unknown layout " + quote(text) + "; expected a preset (" +
                                     join_names(preset_names()) + ") or a spec like \"" +
                                     std::string(kSpecExample) + "\"");
    }
    if (epoch_ms < 0 && tick_ms <= 0) return preset;
    return create(preset->name(), epoch_ms >= 0 ? epoch_ms : preset->epoch_ms(),
                  tick_ms > 0 ? tick_ms : preset->tick_ms(), preset->fields());
  }
  Result<std::vector<Field>> fields = parse_custom_fields(text);
  if (!fields.ok()) return fields.status();
  return create(std::string(kCustomName), epoch_ms >= 0 ? epoch_ms : kTwitterEpochMs,
                tick_ms > 0 ? tick_ms : 1, std::move(fields).value());
}

std::string Layout::spec() const {
  std::string out;
  for (const auto& f : fields_) {
    if (!out.empty()) out += ',';
    out += f.name;
    out += ':';
    out += std::to_string(f.bits);
  }
  return out;
}

int Layout::field_index(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint64_t Layout::max_value(int index) const {
  // Widths are at most 63, so the shift never reaches 64.
  return (uint64_t{1} << fields_[static_cast<size_t>(index)].bits) - 1;
}

Capacity Layout::capacity() const {
  int node_bits = 0;
  for (const auto& f : fields_) {
    if (f.role == FieldRole::kNode) node_bits += f.bits;
  }
  Capacity c;
  c.max_nodes = node_bits >= Layout::kIdBits ? std::numeric_limits<uint64_t>::max()
                                             : uint64_t{1} << node_bits;
  c.ids_per_tick = uint64_t{1} << sequence_bits();
  c.max_ids_per_second =
      static_cast<double>(c.ids_per_tick) * 1000.0 / static_cast<double>(tick_ms_);
  c.last_unix_ms = unix_ms_of(max_tick());
  return c;
}

Result<uint64_t> Layout::tick_of(int64_t unix_ms) const {
  if (unix_ms < epoch_ms_) {
    return Status::OutOfRange("time " + format_iso8601_utc(unix_ms) + " is before the epoch " +
                              format_iso8601_utc(epoch_ms_) + " of layout " + name_);
  }
  // Both are >= 0 here, so the difference cannot overflow.
  const auto tick = static_cast<uint64_t>(unix_ms - epoch_ms_) / static_cast<uint64_t>(tick_ms_);
  if (tick > max_tick()) {
    return Status::OutOfRange("time " + format_iso8601_utc(unix_ms) +
                              " is past the last time layout " + name_ + " can hold (" +
                              format_iso8601_utc(unix_ms_of(max_tick())) + ")");
  }
  return tick;
}

Result<uint64_t> Layout::compose(std::span<const uint64_t> values) const {
  if (values.size() != fields_.size()) {
    return Status::InvalidArgument(
        layout_error(name_, "compose needs " + std::to_string(fields_.size()) + " values, got " +
                                std::to_string(values.size())));
  }
  uint64_t id = 0;
  for (size_t i = 0; i < fields_.size(); ++i) {
    const uint64_t max = max_value(static_cast<int>(i));
    if (values[i] > max) {
      return Status::OutOfRange(
          field_error(fields_[i].name, "value " + std::to_string(values[i]) + " does not fit in " +
                                           std::to_string(fields_[i].bits) + " bits (max " +
                                           std::to_string(max) + ")"));
    }
    id |= values[i] << shifts_[i];
  }
  return id;
}

Result<uint64_t> Layout::compose_named(
    int64_t unix_ms, std::span<const std::pair<std::string, uint64_t>> values) const {
  std::vector<uint64_t> packed(fields_.size(), 0);
  std::vector<bool> seen(fields_.size(), false);
  for (const auto& [field_name, value] : values) {
    const int index = field_index(field_name);
    if (index < 0) {
      std::vector<std::string> settable;
      for (const auto& f : fields_) {
        if (f.role != FieldRole::kTime) settable.push_back(f.name);
      }
      return Status::InvalidArgument("layout " + name_ + " has no field " + quote(field_name) +
                                     "; its fields are " + join_names(settable));
    }
    const auto i = static_cast<size_t>(index);
    if (index == time_index_) {
      return Status::InvalidArgument(
          field_error(field_name, "is the time field; the time comes from unix_ms"));
    }
    if (seen[i]) return Status::InvalidArgument(field_error(field_name, "is given twice"));
    seen[i] = true;
    packed[i] = value;
  }
  Result<uint64_t> tick = tick_of(unix_ms);
  if (!tick.ok()) return tick.status();
  packed[static_cast<size_t>(time_index_)] = *tick;
  return compose(packed);
}

Result<DecodedId> Layout::decode(uint64_t id) const {
  if (total_bits_ < Layout::kIdBits && (id >> total_bits_) != 0) {
    return Status::OutOfRange("ID " + std::to_string(id) + " does not fit the " +
                              std::to_string(total_bits_) + "-bit layout " + name_);
  }
  DecodedId out;
  out.id = id;
  out.fields.reserve(fields_.size());
  for (size_t i = 0; i < fields_.size(); ++i) {
    const auto index = static_cast<int>(i);
    const uint64_t value = (id >> shifts_[i]) & max_value(index);
    out.fields.push_back(
        FieldValue{fields_[i].name, fields_[i].role, fields_[i].bits, shifts_[i], value});
    if (index == time_index_) out.unix_ms = unix_ms_of(value);
  }
  return out;
}

std::string_view field_role_name(FieldRole role) {
  switch (role) {
    case FieldRole::kTime:
      return "time";
    case FieldRole::kSequence:
      return "sequence";
    case FieldRole::kNode:
      break;
  }
  return "node";
}

}  // namespace idforge
