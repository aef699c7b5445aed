// The `idforge` subcommands. Each add_*_command registers one subcommand on the root
// app with its flags, help text and example; when the user picks it, its callback
// does the work and leaves the process exit status in `exit_status`.
#pragma once

#include <CLI/CLI.hpp>

namespace idforge::cli {

void add_next_command(CLI::App& app, int& exit_status);
void add_parse_command(CLI::App& app, int& exit_status);
void add_compose_command(CLI::App& app, int& exit_status);
void add_uuid7_command(CLI::App& app, int& exit_status);
void add_uuid4_command(CLI::App& app, int& exit_status);
void add_ulid_command(CLI::App& app, int& exit_status);
void add_inspect_command(CLI::App& app, int& exit_status);
void add_layout_commands(CLI::App& app, int& exit_status);  // `layout` and `layouts`
void add_bench_command(CLI::App& app, int& exit_status);
void add_tag_command(CLI::App& app, int& exit_status);  // `tag create|list|show|set-step`
void add_worker_command(CLI::App& app, int& exit_status);
void add_migrate_command(CLI::App& app, int& exit_status);  // `migrate from-leaf|from-tinyid`
void add_serve_command(CLI::App& app, int& exit_status);    // the server (cmd_serve.cc)

// Builds the app, parses argv and runs the chosen command. Returns the exit status;
// CLI11's exceptions are handled here, anything else escapes to main().
int run(int argc, char** argv);

}  // namespace idforge::cli
