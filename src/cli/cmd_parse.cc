// `idforge parse`: the fields, time and bit diagram of one Snowflake ID.
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/decoded_output.h"

namespace idforge::cli {
namespace {

struct ParseFlags {
  std::string id;
  LayoutFlags layout;
  bool json = false;
};

int run_parse(const ParseFlags& flags) {
  Result<uint64_t> id = parse_number(flags.id, "ID");
  if (!id.ok()) return fail(id.status());
  Result<Layout> layout = resolve_layout(flags.layout);
  if (!layout.ok()) return fail(layout.status());
  const int bits = layout->total_bits();
  if (bits < 64 && (*id >> bits) != 0) {
    return fail(Status::OutOfRange(
        fmt::format("ID {} does not fit layout '{}', whose IDs have {} bits (largest {})", *id,
                    layout->name(), bits, (uint64_t{1} << bits) - 1)));
  }
  Result<DecodedId> decoded = layout->decode(*id);
  if (!decoded.ok()) return fail(decoded.status());

  if (flags.json) {
    fmt::print("{}\n", decoded_json(*layout, *decoded).dump());
  } else {
    fmt::print("{}", decoded_text(*layout, *decoded));
  }
  return kExitOk;
}

}  // namespace

void add_parse_command(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<ParseFlags>();
  CLI::App* cmd = app.add_subcommand("parse", "Decode a Snowflake ID into its time and fields");
  cmd->add_option("id", flags->id, "The ID, in decimal")->type_name("ID")->required();
  add_layout_flags(*cmd, flags->layout);
  cmd->add_flag("--json", flags->json, "Print one JSON object");
  cmd->footer(
      "Examples:\n"
      "  idforge parse 910499571847892992\n"
      "  idforge parse 175928847299117063 --layout discord --json");
  cmd->callback([flags, &exit_status] { exit_status = run_parse(*flags); });
}

}  // namespace idforge::cli
