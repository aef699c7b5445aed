#include "bit_diagram.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace idforge {
namespace {

struct Column {
  std::string field, bits, binary, value;
};

Column column_of(uint64_t id, std::string label, int width, int shift) {
  Column c;
  c.field = std::move(label);
  c.field += " (" + std::to_string(width) + ")";
  const int high = shift + width - 1;
  c.bits = width == 1 ? std::to_string(high) : std::to_string(high) + ".." + std::to_string(shift);
  const uint64_t value =
      (id >> shift) & (width >= Layout::kIdBits ? ~uint64_t{0} : (uint64_t{1} << width) - 1);
  for (int b = width - 1; b >= 0; --b) c.binary += ((value >> b) & 1) != 0 ? '1' : '0';
  c.value = std::to_string(value);
  return c;
}

// Pads `cell` with spaces to `width`.
void append_cell(std::string& out, const std::string& cell, size_t width) {
  out += cell;
  out.append(width - cell.size(), ' ');
}

}  // namespace

std::string bit_diagram(const Layout& layout, uint64_t id) {
  std::vector<Column> columns;
  const int unused = Layout::kIdBits - layout.total_bits();
  if (unused > 0) {
    columns.push_back(column_of(id, unused == 1 ? "sign" : "unused", unused, layout.total_bits()));
  }
  const std::vector<Field>& fields = layout.fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    columns.push_back(
        column_of(id, fields[i].name, fields[i].bits, layout.shift(static_cast<int>(i))));
  }

  const std::pair<const char*, std::string Column::*> rows[] = {
      {"field", &Column::field},
      {"bits", &Column::bits},
      {"binary", &Column::binary},
      {"value", &Column::value},
  };
  constexpr size_t kLabelWidth = 6;
  std::string out;
  for (const auto& [label, member] : rows) {
    append_cell(out, label, kLabelWidth);
    for (const Column& c : columns) {
      const size_t width =
          std::max({c.field.size(), c.bits.size(), c.binary.size(), c.value.size()});
      out += " | ";
      append_cell(out, c.*member, width);
    }
    out += " |\n";
  }
  return out;
}

}  // namespace idforge
