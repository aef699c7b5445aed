#include "cli/decoded_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "core/bit_diagram.h"
#include "core/layout_text.h"
#include "idforge/time_format.h"

namespace idforge::cli {
nlohmann::ordered_json decoded_json(const Layout& layout, const DecodedId& decoded) {
  nlohmann::ordered_json out;
  out["id"] = std::to_string(decoded.id);
  out["layout"] = layout.name();
  out["unix_ms"] = decoded.unix_ms;
  out["time"] = format_iso8601_utc(decoded.unix_ms);
  for (const auto& [key, value] : decoded_field_values(decoded)) out[key] = value;
  return out;
}

std::string decoded_text(const Layout& layout, const DecodedId& decoded) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"id", std::to_string(decoded.id)},
      {"layout", layout.name()},
      {"unix_ms", std::to_string(decoded.unix_ms)},
      {"time", format_iso8601_utc(decoded.unix_ms)},
  };
  for (const FieldValue& field : decoded.fields) {
    if (field.role == FieldRole::kTime) continue;
    rows.emplace_back(field.name, std::to_string(field.value));
  }
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());

  std::string text;
  for (const auto& [key, value] : rows) {
    text += fmt::format("{:<{}}  {}\n", key + ":", width + 1, value);
  }
  text += "\n";
  text += bit_diagram(layout, decoded.id);
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace idforge::cli
