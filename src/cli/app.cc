// The root of the `idforge` command line: registers every subcommand, parses, and
// turns CLI11's exceptions into one line and an exit status.
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/common.h"
#include "log/log.h"

#ifndef IDFORGE_VERSION
#define IDFORGE_VERSION "unknown"
#endif

namespace idforge::cli {
namespace {

std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!names.empty()) names += ", ";
    names += sub->get_name();
  }
  return names;
}

bool is_command(const CLI::App& app, std::string_view word) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(std::string(word))) return true;
  }
  return false;
}

int on_parse_error(const CLI::App& app, const CLI::ParseError& error) {
  // --help and --version arrive as exceptions with exit code 0; CLI11 prints them.
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);

  std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) {
    if (error.get_name() == "RequiredError") {
      print_error(
          fmt::format("a command is required: {} (see 'idforge --help')", command_names(app)));
    } else {
      print_error(fmt::format("{} (see 'idforge --help')", error.what()));
    }
  } else {
    print_error(
        fmt::format("{} (see 'idforge {} --help')", error.what(), chosen.front()->get_name()));
  }
  return kExitUsage;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app("Unique IDs: Snowflake (any layout), UUIDv7, UUIDv4 and ULID", "idforge");
  app.set_version_flag("--version", "idforge " IDFORGE_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  idforge next --count 3 --worker 7\n"
      "  idforge parse 910499571847892992\n"
      "  idforge serve                  # HTTP on 127.0.0.1:8080, Redis protocol on :6380\n"
      "Run 'idforge COMMAND --help' for a command's flags.");

  int exit_status = kExitOk;
  add_next_command(app, exit_status);
  add_parse_command(app, exit_status);
  add_compose_command(app, exit_status);
  add_uuid7_command(app, exit_status);
  add_uuid4_command(app, exit_status);
  add_ulid_command(app, exit_status);
  add_inspect_command(app, exit_status);
  add_layout_commands(app, exit_status);
  add_bench_command(app, exit_status);
  add_tag_command(app, exit_status);
  add_worker_command(app, exit_status);
  add_migrate_command(app, exit_status);
  add_serve_command(app, exit_status);

  // CLI11 reports a mistyped command, or an unknown option before any command, as a
  // missing command; name the word instead.
  if (argc > 1) {
    std::string_view first = argv[1];
    if (first.size() > 1 && first[0] == '-') {
      std::string name(first.substr(0, first.find('=')));
      if (app.get_option_no_throw(name) == nullptr) {
        print_error(fmt::format("unknown option '{}' (see 'idforge --help')", name));
        return kExitUsage;
      }
    } else if (!is_command(app, first)) {
      print_error(fmt::format("unknown command '{}' (commands: {})", first, command_names(app)));
      return kExitUsage;
    }
  }

  // A one-shot command reports in its own output and error line; from its backends (a
  // lease renewal that fails while `worker acquire` holds it, a store guard's refusal)
  // only warnings and errors reach stderr. `idforge serve` sets its own level and format
  // from its settings once they are loaded (cmd_serve.cc).
  log::configure(log::Level::kWarn, log::Format::kText);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return on_parse_error(app, error);
  }
  return exit_status;
}

}  // namespace idforge::cli
