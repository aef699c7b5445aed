// `idforge compose`: the ID a layout gives to a time and field values, e.g. the
// smallest ID at an instant, as the bound of a range query.
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/decoded_output.h"
#include "idforge/time_format.h"

namespace idforge::cli {
namespace {

struct ComposeFlags {
  std::string time;
  LayoutFlags layout;
  FieldFlags fields;
  bool json = false;
};

int run_compose(const ComposeFlags& flags) {
  Result<int64_t> unix_ms = parse_time(flags.time);
  if (!unix_ms.ok()) {
    return fail(Status::InvalidArgument(fmt::format("--time: {}", unix_ms.status().message())));
  }
  Result<Layout> layout = resolve_layout(flags.layout);
  if (!layout.ok()) return fail(layout.status());
  auto values = resolve_fields(*layout, flags.fields, /*allow_sequence=*/true);
  if (!values.ok()) return fail(values.status());
  Result<uint64_t> id = layout->compose_named(*unix_ms, *values);
  if (!id.ok()) return fail(id.status());

  if (!flags.json) {
    fmt::print("{}\n", *id);
    return kExitOk;
  }
  Result<DecodedId> decoded = layout->decode(*id);
  if (!decoded.ok()) return fail(decoded.status());
  fmt::print("{}\n", decoded_json(*layout, *decoded).dump());
  return kExitOk;
}

}  // namespace

void add_compose_command(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<ComposeFlags>();
  CLI::App* cmd =
      app.add_subcommand("compose", "Build the Snowflake ID for a time and field values");
  cmd->add_option("-t,--time", flags->time, "Unix ms or ISO-8601 (2017-09-20T13:43:08.849Z)")
      ->type_name("MS|ISO")
      ->required();
  add_field_flags(*cmd, flags->fields, /*with_sequence=*/true);
  add_layout_flags(*cmd, flags->layout);
  cmd->add_flag("--json", flags->json, "Print one JSON object, as `parse --json` does");
  cmd->footer(
      "Examples:\n"
      "  idforge compose --time 2017-09-20T13:43:08.849Z --datacenter 17 --worker 25\n"
      "  idforge compose --time 2024-01-01   # the smallest twitter ID of 2024");
  cmd->callback([flags, &exit_status] { exit_status = run_compose(*flags); });
}

}  // namespace idforge::cli
