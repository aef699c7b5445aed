// `idforge layout` and `idforge layouts`: how a layout cuts an ID, and what it can
// hold (nodes, IDs per second, the date its time field runs out).
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "idforge/time_format.h"

namespace idforge::cli {
namespace {

struct LayoutCommandFlags {
  LayoutFlags layout;
  bool list = false;
  bool json = false;
};

// Whole rates print as integers (4096000, not 4.096e+06 or 4096000.0).
bool is_whole(double value) { return std::floor(value) == value && value < 1e18; }

std::string rate_text(double value) {
  return is_whole(value) ? fmt::format("{}", static_cast<uint64_t>(value))
                         : fmt::format("{:.2f}", value);
}

std::string bits_note(const Layout& layout) {
  if (layout.total_bits() == 64) return "64 bits, read as unsigned";
  if (layout.total_bits() == 63) return "63 bits; the sign bit stays 0";
  return fmt::format("{} bits", layout.total_bits());
}

nlohmann::ordered_json layout_json(const Layout& layout) {
  nlohmann::ordered_json out;
  out["name"] = layout.name();
  out["bits"] = layout.total_bits();
  out["epoch_ms"] = layout.epoch_ms();
  out["epoch"] = format_iso8601_utc(layout.epoch_ms());
  out["tick_ms"] = layout.tick_ms();
  nlohmann::ordered_json fields = nlohmann::ordered_json::array();
  for (size_t i = 0; i < layout.fields().size(); ++i) {
    const Field& field = layout.fields()[i];
    fields.push_back({{"name", field.name},
                      {"bits", field.bits},
                      {"shift", layout.shift(static_cast<int>(i))},
                      {"role", field_role_name(field.role)}});
  }
  out["fields"] = std::move(fields);
  Capacity cap = layout.capacity();
  nlohmann::ordered_json capacity;
  capacity["max_nodes"] = cap.max_nodes;
  capacity["ids_per_tick"] = cap.ids_per_tick;
  if (is_whole(cap.max_ids_per_second)) {
    capacity["max_ids_per_second"] = static_cast<uint64_t>(cap.max_ids_per_second);
  } else {
    capacity["max_ids_per_second"] = cap.max_ids_per_second;
  }
  capacity["last_unix_ms"] = cap.last_unix_ms;
  capacity["last_time"] = format_iso8601_utc(cap.last_unix_ms);
  out["capacity"] = std::move(capacity);
  return out;
}

void print_layout_text(const Layout& layout) {
  fmt::print("Layout {} ({})\n", layout.name(), bits_note(layout));
  fmt::print("  {:<12} {:>4} {:>5}  {}\n", "field", "bits", "shift", "role");
  for (size_t i = 0; i < layout.fields().size(); ++i) {
    const Field& field = layout.fields()[i];
    fmt::print("  {:<12} {:>4} {:>5}  {}\n", field.name, field.bits,
               layout.shift(static_cast<int>(i)), field_role_name(field.role));
  }
  fmt::print("Epoch: {} ({})\n", layout.epoch_ms(), format_iso8601_utc(layout.epoch_ms()));
  fmt::print("Tick:  {} ms\n", layout.tick_ms());
  Capacity cap = layout.capacity();
  fmt::print("Capacity:\n");
  fmt::print("  max nodes:             {}\n", cap.max_nodes);
  fmt::print("  IDs per tick:          {}\n", cap.ids_per_tick);
  fmt::print("  max IDs per second:    {} per node\n", rate_text(cap.max_ids_per_second));
  fmt::print("  time field runs out:   {}\n", format_iso8601_utc(cap.last_unix_ms));
}

int run_list(const LayoutCommandFlags& flags) {
  std::vector<Layout> layouts;
  for (const std::string& name : Layout::preset_names()) {
    LayoutFlags preset = flags.layout;
    preset.layout = name;
    Result<Layout> layout = resolve_layout(preset);
    if (!layout.ok()) return fail(layout.status());
    layouts.push_back(std::move(layout).value());
  }
  if (flags.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Layout& layout : layouts) out.push_back(layout_json(layout));
    fmt::print("{}\n", out.dump());
    return kExitOk;
  }
  for (const Layout& layout : layouts) {
    fmt::print("{:<10} {:<48} tick {:>4} ms  epoch {}\n", layout.name(), describe_fields(layout),
               layout.tick_ms(), format_iso8601_utc(layout.epoch_ms()));
  }
  return kExitOk;
}

int run_layout(const LayoutCommandFlags& flags) {
  if (flags.list) {
    if (!flags.layout.layout.empty()) {
      return fail(Status::InvalidArgument("--list shows every preset; drop the layout name"));
    }
    return run_list(flags);
  }
  Result<Layout> layout = resolve_layout(flags.layout);
  if (!layout.ok()) return fail(layout.status());
  if (flags.json) {
    fmt::print("{}\n", layout_json(*layout).dump());
  } else {
    print_layout_text(*layout);
  }
  return kExitOk;
}

}  // namespace

void add_layout_commands(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<LayoutCommandFlags>();
  CLI::App* cmd =
      app.add_subcommand("layout", "Show a layout's fields and capacity (default: twitter)");
  cmd->add_option("layout", flags->layout.layout,
                  "Preset name or custom spec 'time:41,datacenter:5,worker:5,sequence:12'")
      ->type_name("NAME|SPEC");
  add_layout_flags(*cmd, flags->layout, /*with_layout_option=*/false);
  cmd->add_flag("--list", flags->list, "List the presets");
  cmd->add_flag("--json", flags->json, "Print JSON");
  cmd->footer(
      "Examples:\n"
      "  idforge layout sonyflake\n"
      "  idforge layout time:40,shard:10,sequence:13 --epoch 2024-01-01");
  cmd->callback([flags, &exit_status] { exit_status = run_layout(*flags); });

  auto list_flags = std::make_shared<LayoutCommandFlags>();
  list_flags->list = true;
  CLI::App* list = app.add_subcommand("layouts", "List the preset layouts");
  add_layout_flags(*list, list_flags->layout, /*with_layout_option=*/false);
  list->add_flag("--json", list_flags->json, "Print a JSON array of layouts");
  list->footer("Example:\n  idforge layouts");
  list->callback([list_flags, &exit_status] { exit_status = run_list(*list_flags); });
}

}  // namespace idforge::cli
