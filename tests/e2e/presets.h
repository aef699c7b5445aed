// The preset layouts as docs/snowflake.md lists them, written out independently of
// the library so that the tests check the binary against the documentation, not the
// code under test.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace idforge::e2e {

struct PresetField {
  std::string name;
  int bits = 0;
  bool is_node = false;  // neither the time nor the sequence
};

struct Preset {
  std::string name;
  int64_t epoch_ms = 0;
  int64_t tick_ms = 1;
  std::vector<PresetField> fields;  // high bits first; the time always comes first

  int total_bits() const {
    int sum = 0;
    for (const auto& f : fields) sum += f.bits;
    return sum;
  }

  // Field values by name; the time field ("time") in ticks.
  std::map<std::string, uint64_t> decode(uint64_t id) const {
    std::map<std::string, uint64_t> out;
    int shift = total_bits();
    for (const auto& f : fields) {
      shift -= f.bits;
      out[f.name] = (id >> shift) & ((uint64_t{1} << f.bits) - 1);
    }
    return out;
  }

  int64_t unix_ms(uint64_t id) const {
    return epoch_ms + static_cast<int64_t>(decode(id).at("time")) * tick_ms;
  }

  uint64_t max_nodes() const {
    int bits = 0;
    for (const auto& f : fields) bits += f.is_node ? f.bits : 0;
    return uint64_t{1} << bits;
  }

  const PresetField& sequence() const {
    for (const auto& f : fields) {
      if (f.name != "time" && !f.is_node) return f;
    }
    return fields.back();
  }
};

inline const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"twitter",
       1288834974657,
       1,
       {{"time", 41}, {"datacenter", 5, true}, {"worker", 5, true}, {"sequence", 12}}},
      {"discord",
       1420070400000,
       1,
       {{"time", 42}, {"worker", 5, true}, {"process", 5, true}, {"increment", 12}}},
      {"instagram", 1314220021721, 1, {{"time", 41}, {"shard", 13, true}, {"sequence", 10}}},
      {"sonyflake", 1409529600000, 10, {{"time", 39}, {"sequence", 8}, {"machine", 16, true}}},
      {"baidu", 1463673600000, 1000, {{"time", 28}, {"worker", 22, true}, {"sequence", 13}}},
  };
  return all;
}

}  // namespace idforge::e2e
