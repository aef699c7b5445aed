#include "layout_text.h"

#include <algorithm>

namespace idforge {
namespace {

// A custom layout may name a field like one of the fixed keys; the field then gets a
// prefix rather than replacing the id or the time.
std::string field_key(const std::string& name) {
  for (std::string_view reserved : {"id", "layout", "unix_ms", "time"}) {
    if (name == reserved) return "field_" + name;
  }
  return name;
}

}  // namespace

Result<Layout> resolve_layout_spec(std::string_view spec, int64_t epoch_ms, int64_t tick_ms) {
  if (spec.empty()) spec = "twitter";
  // A word without ':' can only be a preset; say which exist rather than how a custom
  // spec failed to parse.
  if (spec.find(':') == std::string_view::npos && !Layout::preset(spec).ok()) {
    std::string presets;
    for (const std::string& name : Layout::preset_names()) {
      presets += (presets.empty() ? "" : ", ") + name;
    }
    return Status::InvalidArgument("unknown layout '" + std::string(spec) +
                                   "' (presets: " + presets + ")");
  }
  Result<Layout> layout = Layout::parse(spec, epoch_ms, tick_ms);
  if (!layout.ok()) {
    return Status(layout.status().code(),
                  "invalid layout '" + std::string(spec) + "': " + layout.status().message());
  }
  return layout;
}

std::vector<std::pair<std::string, uint64_t>> decoded_field_values(const DecodedId& decoded) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const FieldValue& field : decoded.fields) {
    if (field.role == FieldRole::kTime) continue;
    std::string key = field_key(field.name);
    auto same =
        std::find_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == key; });
    if (same != out.end()) {
      same->second = field.value;
    } else {
      out.emplace_back(std::move(key), field.value);
    }
  }
  return out;
}

}  // namespace idforge
