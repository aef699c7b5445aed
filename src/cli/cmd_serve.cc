// `idforge serve`: the ID server. Loads the configuration (serve_config.h), starts the
// IdService (stores, worker lease), the HTTP and RESP listeners on one NetServer, prints
// where it listens, and runs until SIGTERM or SIGINT; then stops accepting, lets
// in-flight requests finish and releases the lease.
#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/segment_stores.h"
#include "cli/serve_config.h"
#include "cli/serve_settings.h"
#include "cli/worker_lease.h"
#include "log/log.h"
#include "server/http_session.h"
#include "server/id_service.h"
#include "server/net_server.h"
#include "server/resp_session.h"
#include "server/systemd_notify.h"

namespace idforge::cli {
namespace {

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
    option->description(fmt::format("{} [{}, config key {}; default {}]", setting.help, setting.env,
                                    setting.key, settings::default_shown(spec)));
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

// A listener that could not start, named by the setting that chose its address.
int listen_failed(const ServeConfig& config, std::string_view key, const Status& status) {
  std::string_view message = status.message();
  // NetServer prefixes the listener's name, which the setting's name replaces.
  const std::string prefix = fmt::format("{}: ", key);
  if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
  print_error(fmt::format("{}: {}", setting_subject(config, key), message));
  return kExitFailure;
}

// Releases the lease; a failure is worth a line, since the slot then stays taken until
// its TTL runs out.
int stop_service(server::IdService& service, int status) {
  Status stopped = service.stop();
  if (!stopped.ok()) {
    log::error("serve.lease_release_failed", {{"error", stopped.message()}});
    if (status == kExitOk) status = kExitFailure;
  }
  log::info("serve.stopped", {{"exit_status", status}});
  return status;
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

int serve(const ServeConfig& config) {
  // Block the stop signals before any thread exists: threads inherit the mask, so the
  // signals stay pending for sigwait() below instead of interrupting a random thread.
  // A parent may have left them ignored (a non-interactive shell's background job), and
  // an ignored signal is discarded before sigwait could see it.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  // A client that goes away mid-answer must not end the server.
  std::signal(SIGPIPE, SIG_IGN);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // docs/operations.md, "Worker ids": the identity is host:port unless configured, so a restarted
  // server gets its old slot back and two servers on one host keep theirs apart.
  server::ServiceConfig service_config = config.service;
  if (service_config.identity.empty()) {
    Result<server::Endpoint> endpoint = server::parse_endpoint(config.http);
    if (endpoint.ok() && endpoint->port != 0) {
      service_config.identity = fmt::format("{}:{}", host_name(), endpoint->port);
    }
  }
  Result<std::unique_ptr<server::IdService>> started =
      server::IdService::start(std::move(service_config));
  if (!started.ok()) return fail(started.status());
  std::unique_ptr<server::IdService> service = std::move(started).value();

  // Declared after the service, so destroyed before it: sessions call the service.
  server::NetServer net(config.net);
  Result<server::Endpoint> http =
      net.listen(config.http, "http", server::make_http_session_factory(*service));
  if (!http.ok()) return stop_service(*service, listen_failed(config, "http", http.status()));
  Result<server::Endpoint> resp =
      net.listen(config.resp, "resp", server::make_resp_session_factory(*service));
  if (!resp.ok()) return stop_service(*service, listen_failed(config, "resp", resp.status()));
  Status running = net.start();
  if (!running.ok()) {
    print_error(running.message());
    return stop_service(*service, kExitFailure);
  }

  // Scripts and tests read these two lines for the bound ports (port 0 picks one).
  fmt::print("idforge serve: http http://{}/\n", http->to_string());
  fmt::print("idforge serve: resp redis://{}\n", resp->to_string());
  std::fflush(stdout);
  log::info("serve.listening", {{"http", http->to_string()}, {"resp", resp->to_string()}});
  // Under systemd (Type=notify): started, and the watchdog if the unit has WatchdogSec=;
  // no-ops otherwise (server/systemd_notify.h).
  server::notify_ready(
      fmt::format("serving http://{}/ and redis://{}", http->to_string(), resp->to_string()));
  std::unique_ptr<server::Watchdog> watchdog = server::start_systemd_watchdog(net, *service);

  int signal = 0;
  while (sigwait(&stop_signals, &signal) != 0) {
  }
  log::info("serve.stopping", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
                               {"grace_ms", config.shutdown_grace_ms}});
  // A second signal means the operator will not wait for the grace period or a slow
  // coordinator; the lease then expires by its TTL.
  std::thread([stop_signals] {
    int again = 0;
    while (sigwait(&stop_signals, &again) != 0) {
    }
    log::error("serve.abandoned",
               {{"reason",
                 "second signal: exiting without finishing requests or releasing the "
                 "lease"}});
    std::_Exit(kExitFailure);
  }).detach();

  // systemd expects no ping once stopping, and the loops are about to stop.
  watchdog.reset();
  server::notify_stopping("shutting down: finishing requests, releasing the worker lease");
  net.shutdown(std::chrono::milliseconds(config.shutdown_grace_ms));
  log::info("serve.drained", {{"next", "releasing the worker lease"}});
  return stop_service(*service, kExitOk);
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
      "SIGTERM or SIGINT: stop accepting, finish in-flight requests (up to\n"
      "shutdown_grace_ms), release the worker lease, exit 0. Invalid settings exit 2.\n"
      "Examples:\n"
      "  idforge serve                                  # SQLite + local worker ids in "
      "./idforge-data\n"
      "  idforge serve --http 0.0.0.0:8080 --resp 0.0.0.0:6380 --data-dir /var/lib/idforge\n"
      "  idforge serve --config /etc/idforge/cluster.toml\n"
      "  idforge serve --store postgres://idforge@db1:5432/ids --registry etcd://10.0.0.6:2379\n"
      "  IDFORGE_ADMIN_TOKEN_FILE=/run/secrets/idforge-admin idforge serve\n"
      "  idforge serve --config cluster.toml --max-count 1000 --print-config");
  cmd->callback([flags, cmd, &exit_status] { exit_status = run_serve(*cmd, *flags); });
}

}  // namespace idforge::cli
