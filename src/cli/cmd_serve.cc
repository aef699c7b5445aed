// `idforge serve`: the ID server's command. Loads the configuration (serve_config.h),
// starts the server assembled (src/server/app/server_app.h: the IdService, the HTTP and
// RESP listeners), prints where it listens, and runs until SIGTERM or SIGINT
// (serve_signals.h); then stops accepting, lets in-flight requests finish and releases
// the lease.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/segment_stores.h"
#include "cli/worker_lease.h"
#include "config/serve_config.h"
#include "config/serve_settings.h"
#include "log/log.h"
#include "server/app/serve_signals.h"
#include "server/app/server_app.h"

namespace idforge::cli {
namespace {

namespace settings = config::settings;
using config::describe_settings;
using config::env_settings;
using config::format_serve_config;
using config::load_serve_config;
using config::serve_settings;
using config::ServeConfig;
using config::ServeSources;
using config::SettingInfo;
using config::settings_for_log;
using config::TextSetting;

struct ServeFlags {
  // Filled by the shared flag helpers; read back generically through the options'
  // raw results, so every setting goes through one parser (serve_config.cc).
  LayoutFlags layout;
  StoreFlags stores;
  RegistryFlags registry;
  std::string config;
  bool print_config = false;
  std::string describe;  // --describe-settings FORMAT
};

// The help groups, by the settings' TOML sections.
std::string group_of(std::string_view key) {
  const size_t dot = key.find('.');
  const std::string_view section = dot == std::string_view::npos ? "" : key.substr(0, dot);
  if (key.starts_with("tls_") || key.starts_with("plain_") || key == "tokens_file") {
    return "Security";
  }
  if (section.empty()) return "Server";
  if (section == "snowflake") return "Snowflake IDs";
  if (section == "segment") return "Segment IDs";
  if (section == "worker") return "Worker id";
  if (section == "limits") return "Limits";
  if (section == "log") return "Logs";
  return "Threads";
}

// Every setting gets its flag: the shared helpers register the ones other commands have
// too (--layout, --store, --registry, ...), the rest come from the settings table; all
// get the table's help text, naming each one's variable, key and default. Registered in
// the table's order, so --help lists them as docs/operations.md does.
void add_setting_flags(CLI::App& cmd, ServeFlags& flags) {
  // A helper registers its flags when the table reaches the last of them.
  const std::pair<std::string_view, std::function<void()>> helpers[] = {
      {"--tick-ms", [&] { add_layout_flags(cmd, flags.layout); }},
      {"--store", [&] { add_store_flags(cmd, flags.stores); }},
      {"--identity",
       [&] {
         add_registry_flags(cmd, flags.registry, /*required=*/false, /*with_identity=*/true);
       }},
  };
  constexpr std::string_view kHelperFlags[] = {"--layout",   "--epoch",    "--tick-ms", "--store",
                                               "--data-dir", "--registry", "--identity"};
  for (const SettingInfo& setting : serve_settings()) {
    for (const auto& [last, add] : helpers) {
      if (setting.flag == last) add();
    }
    if (std::find(std::begin(kHelperFlags), std::end(kHelperFlags), setting.flag) ==
        std::end(kHelperFlags)) {
      cmd.add_option(std::string(setting.flag))
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  for (const settings::Spec& spec : settings::all()) {
    const SettingInfo& setting = spec.info;
    CLI::Option* option = cmd.get_option(std::string(setting.flag));
    option->description(fmt::format("{} [{}, config key {}; default {}]", settings::help_of(spec),
                                    setting.env, setting.key, settings::default_shown(spec)));
    option->default_str("");  // the description says it
    option->type_name(std::string(setting.value_name));
    option->group(group_of(setting.key));
  }
}

// The flags the user gave, as text for the settings parser.
std::vector<TextSetting> given_flags(const CLI::App& cmd) {
  std::vector<TextSetting> given;
  for (const SettingInfo& setting : serve_settings()) {
    const CLI::Option* option = cmd.get_option_no_throw(std::string(setting.flag));
    if (option == nullptr || option->count() == 0) continue;
    given.push_back({std::string(setting.key), option->results(), std::string(setting.flag)});
  }
  return given;
}

// The start-up line: every effective setting (secrets masked) and, in `from`, where each
// one that is not at its default came from.
void log_settings(const ServeConfig& config) {
  const std::vector<std::pair<std::string, std::string>> values = settings_for_log(config);
  std::vector<std::string> sources;
  for (const auto& [key, value] : values) {
    const std::string source = setting_source(config, key);
    if (source != "default") sources.push_back(fmt::format("{}:{}", key, source));
  }
  const std::string from = fmt::format("{}", fmt::join(sources, ","));
  std::vector<log::Field> fields = {
      {"version", IDFORGE_VERSION},
      {"config_file", config.config_file.empty() ? std::string_view("none") : config.config_file},
      {"from", from}};
  for (const auto& [key, value] : values) fields.push_back({key, value});
  log::write(log::Level::kInfo, "serve.settings", fields);
}

// The server assembled (src/server/app/server_app.h), run until SIGTERM or SIGINT.
int serve(const ServeConfig& config) {
  // Before any thread exists, so every thread inherits the blocked signals.
  const server::ServeSignals signals = server::ServeSignals::block();
  server::StartStep failed_at = server::StartStep::kSecurity;
  Result<std::unique_ptr<server::ServerApp>> started = server::ServerApp::start(config, &failed_at);
  if (!started.ok()) {
    switch (failed_at) {
      case server::StartStep::kSecurity:
        print_error(started.status().message());
        return kExitUsage;
      case server::StartStep::kService:
        return fail(started.status());
      case server::StartStep::kListeners:
        print_error(started.status().message());
        log::info("serve.stopped", {{"exit_status", kExitFailure}});
        return kExitFailure;
    }
  }
  server::ServerApp& app = **started;
  // Scripts and tests read these lines for the bound ports (port 0 picks one), and
  // systemd is told READY only once they are written.
  for (const server::AppListener& l : app.listeners()) {
    fmt::print("idforge serve: {} {}\n", l.key, l.url);
  }
  std::fflush(stdout);
  app.ready();
  signals.wait(app);
  const int status = app.stop().ok() ? kExitOk : kExitFailure;
  log::info("serve.stopped", {{"exit_status", status}});
  return status;
}

int run_serve(const CLI::App& cmd, const ServeFlags& flags) {
  if (!flags.describe.empty()) {
    Result<std::string> text = describe_settings(flags.describe);
    if (!text.ok()) return fail(text.status());
    fmt::print("{}", *text);
    return kExitOk;
  }
  ServeSources sources;
  if (cmd.count("--config") > 0) {
    sources.config_file = flags.config;
    sources.config_origin = "--config";
    if (flags.config.empty()) return fail(Status::InvalidArgument("--config is empty"));
  } else if (const char* file = std::getenv("IDFORGE_CONFIG"); file != nullptr && *file != '\0') {
    sources.config_file = file;
    sources.config_origin = "IDFORGE_CONFIG";
  }
  sources.env = env_settings([](const char* name) { return std::getenv(name); });
  sources.flags = given_flags(cmd);

  Result<ServeConfig> config = load_serve_config(sources);
  if (!config.ok()) {
    print_error(config.status().message());
    return kExitUsage;
  }
  if (flags.print_config) {
    fmt::print("{}", format_serve_config(*config));
    return kExitOk;
  }
  // The table checked both words (serve_settings.cc).
  log::configure(log::parse_level(config->log_level).value(),
                 log::parse_format(config->log_format).value());
  log_settings(*config);
  return serve(*config);
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_status) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the ID server: HTTP (JSON API, web page, /metrics) and the Redis protocol");
  cmd->add_option("--config", flags->config,
                  "TOML config file [IDFORGE_CONFIG]; flags and IDFORGE_* variables override it")
      ->type_name("FILE");
  cmd->add_flag("--print-config", flags->print_config,
                "Print the effective configuration as TOML, each value with where it came from "
                "(admin token hidden), and exit");
  cmd->add_option("--describe-settings", flags->describe,
                  "Print every setting from the settings table and exit: markdown (the table of "
                  "docs/operations.md) or toml (a config file with every setting commented out "
                  "at its default)")
      ->type_name("FORMAT");
  add_setting_flags(*cmd, *flags);
  cmd->footer(
      "Every setting is a flag, an IDFORGE_* variable and a key of the --config file; flags\n"
      "win over variables, variables over the file, the file over defaults (all listed in\n"
      "docs/operations.md). Once listening it prints, on stdout:\n"
      "  idforge serve: http http://127.0.0.1:8080/\n"
      "  idforge serve: resp redis://127.0.0.1:6380\n"
      "With tls_cert the two listeners speak TLS (https://, rediss://); plain_http and\n"
      "plain_resp add plain ones. SIGHUP re-reads the certificate and the tokens file.\n"
      "SIGTERM or SIGINT: stop accepting, finish in-flight requests (up to\n"
      "shutdown_grace_ms), release the worker lease, exit 0. Invalid settings exit 2.\n"
      "Examples:\n"
      "  idforge serve                                  # SQLite + local worker ids in "
      "./idforge-data\n"
      "  idforge serve --http 0.0.0.0:8080 --resp 0.0.0.0:6380 --data-dir /var/lib/idforge\n"
      "  idforge serve --config /etc/idforge/cluster.toml\n"
      "  idforge serve --store postgres://idforge@db1:5432/ids --registry etcd://10.0.0.6:2379\n"
      "  IDFORGE_ADMIN_TOKEN_FILE=/run/secrets/idforge-admin idforge serve\n"
      "  idforge serve --http 0.0.0.0:8443 --resp 0.0.0.0:6380 --tls-cert cert.pem \\\n"
      "      --tls-key key.pem --tokens /etc/idforge/tokens\n"
      "  idforge serve --config cluster.toml --max-count 1000 --print-config");
  cmd->callback([flags, cmd, &exit_status] { exit_status = run_serve(*cmd, *flags); });
}

}  // namespace idforge::cli
