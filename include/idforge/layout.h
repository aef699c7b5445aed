// Layout: how a 64-bit Snowflake ID is cut into fields, and how to compose and decode it.
//
// A layout is an epoch (Unix ms), a tick length (ms) and an ordered list of fields,
// high bits first. Exactly one field is the time (ticks since the epoch) and exactly
// one is the sequence; every other field is a node field (datacenter, worker, shard,
// machine, process, ...) whose value is fixed per generator. The widths sum to at most
// 64; a layout of 64 bits (discord) uses the sign bit and is read as unsigned.
//
// A Layout is an immutable value: any number of threads may use one at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idforge/status.h"

namespace idforge {

enum class FieldRole { kTime, kSequence, kNode };
// "time", "sequence", "node": the role as the CLI and the HTTP API show it.
std::string_view field_role_name(FieldRole role);

struct Field {
  std::string name;  // lower-case [a-z][a-z0-9_]*, unique within a layout
  int bits = 0;      // 1..63
  FieldRole role = FieldRole::kNode;

  friend bool operator==(const Field&, const Field&) = default;
};

// What one layout can hold: the figures `idforge layout` prints.
struct Capacity {
  uint64_t max_nodes = 0;         // 2^(sum of node field bits)
  uint64_t ids_per_tick = 0;      // 2^(sequence bits)
  double max_ids_per_second = 0;  // per node: ids_per_tick * 1000 / tick_ms
  int64_t last_unix_ms = 0;       // start of the last tick: epoch + max_tick * tick_ms
};

// One field of a decoded ID, in layout order.
struct FieldValue {
  std::string name;
  FieldRole role = FieldRole::kNode;
  int bits = 0;
  int shift = 0;  // position of the field's lowest bit
  uint64_t value = 0;
};

struct DecodedId {
  uint64_t id = 0;
  int64_t unix_ms = 0;  // epoch + time field * tick_ms
  std::vector<FieldValue> fields;

  // The value of the named field; 0 if the layout has no such field.
  uint64_t get(std::string_view name) const;
};

class Layout {
 public:
  static constexpr int kMaxFields = 16;
  static constexpr int kIdBits = 64;  // every layout fits its fields in these

  // Validates and builds a layout; an InvalidArgument names the offending field or value
  // ("layout field 'worker': width 0 is not in 1..63"). Rules: 1..kMaxFields fields with
  // unique names, widths 1..63 summing to at most 64, exactly one kTime and one kSequence
  // field, tick_ms >= 1, epoch_ms >= 0, and epoch + max_tick * tick_ms fits in int64.
  static Result<Layout> create(std::string name, int64_t epoch_ms, int64_t tick_ms,
                               std::vector<Field> fields);

  // One of the presets: twitter, discord, instagram, sonyflake, baidu.
  static Result<Layout> preset(std::string_view name);
  static const std::vector<std::string>& preset_names();
  // The default layout (twitter). Never fails.
  static const Layout& twitter();

  // A preset name, or a custom spec "name:bits,name:bits,..." high bits first, where
  // the field called `time` is the time and the one called `sequence`, `seq` or
  // `increment` is the sequence (e.g. "time:41,datacenter:5,worker:5,sequence:12").
  // `epoch_ms` / `tick_ms`, when given (>= 0 / > 0), override the preset's or default
  // to the twitter epoch and 1 ms for a custom spec; other values mean "not given".
  // Preset names match case-insensitively; a custom layout is named "custom". Errors
  // (InvalidArgument) list the presets for an unknown name and quote a malformed item.
  static Result<Layout> parse(std::string_view spec, int64_t epoch_ms = -1, int64_t tick_ms = -1);

  const std::string& name() const { return name_; }
  int64_t epoch_ms() const { return epoch_ms_; }
  int64_t tick_ms() const { return tick_ms_; }
  const std::vector<Field>& fields() const { return fields_; }
  int total_bits() const { return total_bits_; }
  // The fields as a custom spec, "time:41,datacenter:5,worker:5,sequence:12". parse()
  // reads it back to the same fields when the names follow parse's role rules.
  std::string spec() const;

  // Index of the named field in fields(), or -1.
  int field_index(std::string_view name) const;
  int time_index() const { return time_index_; }
  int sequence_index() const { return sequence_index_; }
  int shift(int index) const { return shifts_[static_cast<size_t>(index)]; }
  uint64_t max_value(int index) const;  // 2^bits - 1

  int time_shift() const { return shift(time_index_); }
  int time_bits() const { return fields_[static_cast<size_t>(time_index_)].bits; }
  int sequence_shift() const { return shift(sequence_index_); }
  int sequence_bits() const { return fields_[static_cast<size_t>(sequence_index_)].bits; }
  uint64_t max_tick() const { return max_value(time_index_); }
  uint64_t max_sequence() const { return max_value(sequence_index_); }

  Capacity capacity() const;

  // The tick for a Unix time: (unix_ms - epoch) / tick_ms. OutOfRange before the epoch
  // or past the time field's end (any ms inside the last tick is accepted).
  Result<uint64_t> tick_of(int64_t unix_ms) const;
  int64_t unix_ms_of(uint64_t tick) const {
    return epoch_ms_ + static_cast<int64_t>(tick) * tick_ms_;
  }

  // Packs one value per field (layout order; the time field in ticks). OutOfRange,
  // naming the field, if a value does not fit its width; InvalidArgument if the count
  // is not fields().size().
  Result<uint64_t> compose(std::span<const uint64_t> values) const;
  // Packs by name: `unix_ms` for the time, the named node and sequence fields (absent
  // ones are 0). InvalidArgument for an unknown or repeated name or the time field's
  // name (the time comes from unix_ms); OutOfRange for a value or time that does not fit.
  Result<uint64_t> compose_named(int64_t unix_ms,
                                 std::span<const std::pair<std::string, uint64_t>> values) const;

  // Splits any 64-bit value into this layout's fields. Fails (OutOfRange) only if the id
  // uses bits above total_bits() (e.g. a negative number for a 63-bit layout).
  Result<DecodedId> decode(uint64_t id) const;

  friend bool operator==(const Layout&, const Layout&) = default;

 private:
  Layout() = default;

  std::string name_;
  int64_t epoch_ms_ = 0;
  int64_t tick_ms_ = 1;
  std::vector<Field> fields_;
  std::vector<int> shifts_;
  int total_bits_ = 0;
  int time_index_ = -1;
  int sequence_index_ = -1;
};

}  // namespace idforge
