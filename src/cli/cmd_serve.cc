// `idforge serve`: the ID server. Loads the configuration (serve_config.h), starts the
// IdService (stores, worker lease), the HTTP and RESP listeners on one NetServer, prints
// where it listens, and runs until SIGTERM or SIGINT; then stops accepting, lets
// in-flight requests finish and releases the lease.
#include <fmt/format.h>
#include <pthread.h>
#include <sys/resource.h>

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
#include "cli/worker_lease.h"
#include "config/serve_config.h"
#include "config/serve_settings.h"
#include "log/log.h"
#include "server/auth.h"
#include "server/http_session.h"
#include "server/id_service.h"
#include "server/net/net_server.h"
#include "server/net/tls_context.h"
#include "server/resp_session.h"
#include "server/systemd_notify.h"

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
using config::setting_subject;
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

// What SIGHUP re-reads (docs/operations.md, "Security"): the certificate and the tokens.
// Loaded before the service starts, so a bad file fails at once, before a lease is taken.
struct Security {
  std::shared_ptr<server::TlsContext> tls;  // null: plain TCP
  std::shared_ptr<server::Auth> auth;       // null: no tokens
};

Result<Security> load_security(const ServeConfig& config) {
  Security security;
  if (!config.tls_cert.empty()) {
    Result<std::shared_ptr<server::TlsContext>> tls =
        server::TlsContext::load({config.tls_cert, config.tls_key, config.tls_client_ca});
    if (!tls.ok()) {
      // The message starts with the setting at fault ("tls_key /k.pem: ..."): named as
      // the user gave it (--tls-key, IDFORGE_TLS_KEY or FILE:LINE).
      const Status status = tls.status();  // a copy: the view below points into it
      std::string_view message = status.message();
      std::string_view key = "tls_cert";
      for (std::string_view k : {"tls_cert", "tls_key", "tls_client_ca"}) {
        if (message.starts_with(k) && message.substr(k.size()).starts_with(' ')) {
          key = k;
          message.remove_prefix(k.size() + 1);
        }
      }
      return Status::InvalidArgument(fmt::format("{}: {}", setting_subject(config, key), message));
    }
    security.tls = std::move(tls).value();
  }
  if (!config.tokens_file.empty()) {
    Result<std::shared_ptr<server::Auth>> auth = server::Auth::load(config.tokens_file);
    if (!auth.ok()) {
      return Status::InvalidArgument(
          fmt::format("{}: {}", setting_subject(config, "tokens_file"), auth.status().message()));
    }
    security.auth = std::move(auth).value();
  }
  return security;
}

// SIGHUP: each part is re-read on its own; a part that fails keeps what it had.
void reload_security(const Security& security) {
  if (!security.tls && !security.auth) {
    log::info("serve.reload", {{"result", "nothing to re-read: no tls_cert, no tokens_file"}});
    return;
  }
  if (security.tls) {
    const Status reloaded = security.tls->reload();
    if (reloaded.ok()) {
      log::info("tls.reloaded", {{"cert", security.tls->files().cert}});
    } else {
      log::error("tls.reload_failed",
                 {{"error", reloaded.message()}, {"kept", "the certificate loaded before"}});
    }
  }
  if (security.auth) {
    const Status reloaded = security.auth->reload();
    if (reloaded.ok()) {
      log::info("tokens.reloaded", {{"tokens", security.auth->token_count()}});
    } else {
      log::error("tokens.reload_failed",
                 {{"error", reloaded.message()}, {"kept", "the tokens loaded before"}});
    }
  }
}

bool is_loopback(const server::Endpoint& endpoint) {
  const std::string& host = endpoint.host;
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// One line per listener that others can reach without TLS or without tokens: the
// defaults listen on loopback, so this is a choice an operator should see made.
void warn_if_exposed(std::string_view key, const server::Endpoint& endpoint, bool tls,
                     bool tokens) {
  if (is_loopback(endpoint) || (tls && tokens)) return;
  std::string_view risk = !tokens ? "no tokens_file: anyone who reaches it may issue every kind "
                                    "of ID and read every tag's counts"
                                  : "no TLS: tokens and IDs cross the network in clear text";
  log::warn("serve.exposed", {{"listener", key},
                              {"address", endpoint.to_string()},
                              {"tls", tls ? "on" : "off"},
                              {"tokens", tokens ? "on" : "off"},
                              {"risk", risk}});
}

// A listener's line on stdout (scripts and tests read them) and its URL.
std::string listener_url(std::string_view scheme, const server::Endpoint& endpoint,
                         std::string_view tail) {
  return fmt::format("{}://{}{}", scheme, endpoint.to_string(), tail);
}

// What a connection refused over limits.max_connections is told before it is closed:
// Redis's own words, and an HTTP 503 a load balancer retries elsewhere.
constexpr const char* kRespRefusal = "-ERR max number of clients reached\r\n";
constexpr const char* kHttpRefusal =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 30\r\n"
    "Connection: close\r\nRetry-After: 1\r\n\r\nmax number of clients reached\n";

// Descriptors kept for the server's own work whatever the clients hold: high-water
// marks, served marks and fleet records being written, store and coordinator
// connections, SQLite's files, the log (Redis keeps 32; idforge has more of its own).
constexpr size_t kReservedFds = 128;

// Raises the soft limit on open files to the hard one (as Redis does), then caps the
// client connections so that they can never take the descriptors the server needs for
// its own work: with every descriptor held by clients, marks could not be written and
// leases not renewed, and Snowflake would stop for everyone.
size_t connections_within_fd_limit(size_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  if (limit.rlim_cur < limit.rlim_max) {
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      log::info("serve.fd_limit_raised", {{"from", static_cast<uint64_t>(before)},
                                          {"to", static_cast<uint64_t>(limit.rlim_cur)}});
    } else {
      limit.rlim_cur = before;
    }
  }
  if (limit.rlim_cur == RLIM_INFINITY) return wanted;
  const size_t usable = limit.rlim_cur > kReservedFds * 2
                            ? static_cast<size_t>(limit.rlim_cur) - kReservedFds
                            : static_cast<size_t>(limit.rlim_cur) / 2;
  if (wanted <= usable) return wanted;
  log::warn("serve.max_connections_capped",
            {{"max_connections", static_cast<uint64_t>(wanted)},
             {"capped_to", static_cast<uint64_t>(usable)},
             {"fd_limit", static_cast<uint64_t>(limit.rlim_cur)},
             {"reserved", static_cast<uint64_t>(kReservedFds)},
             {"message",
              "limits.max_connections is above what the open-file limit leaves once "
              "the server's own descriptors are kept; raise the limit (LimitNOFILE= "
              "in the unit, ulimit -n) to allow more"}});
  return usable;
}

int serve(const ServeConfig& config) {
  // Block the signals before any thread exists: threads inherit the mask, so the signals
  // stay pending for sigwait() below instead of interrupting a random thread. A parent
  // may have left them ignored (a non-interactive shell's background job), and an
  // ignored signal is discarded before sigwait could see it.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigset_t signals = stop_signals;
  sigaddset(&signals, SIGHUP);  // re-read certificate and tokens
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  // A client that goes away mid-answer must not end the server.
  std::signal(SIGPIPE, SIG_IGN);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Result<Security> loaded = load_security(config);
  if (!loaded.ok()) {
    print_error(loaded.status().message());
    return kExitUsage;
  }
  const Security security = std::move(loaded).value();

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

  server::HttpOptions http_options;
  http_options.auth = security.auth;
  http_options.limits.rate = static_cast<double>(config.connection_rate);
  http_options.limits.burst = static_cast<uint32_t>(config.connection_burst);
  server::RespOptions resp_options;
  resp_options.auth = security.auth;
  resp_options.limits = http_options.limits;
  const bool tls = security.tls != nullptr;
  const bool tokens = security.auth != nullptr;

  // Declared after the service, so destroyed before it: sessions call the service.
  server::NetOptions net_options = config.net;
  net_options.max_connections = connections_within_fd_limit(net_options.max_connections);
  net_options.on_refused = [s = service.get()] { s->metrics().record_connection_refused(); };
  server::NetServer net(net_options);
  struct Listening {
    std::string_view key;
    server::Endpoint endpoint;
    bool tls;
  };
  std::vector<Listening> listening;
  struct ListenerSetting {
    std::string_view key;
    const std::string& address;
    bool is_http;
    bool plain;  // never TLS: the plain listeners beside TLS ones
  };
  const ListenerSetting listeners[] = {{"http", config.http, true, false},
                                       {"resp", config.resp, false, false},
                                       {"plain_http", config.plain_http, true, true},
                                       {"plain_resp", config.plain_resp, false, true}};
  for (const auto& [key, address, is_http, plain] : listeners) {
    if (address.empty()) continue;
    Result<server::Endpoint> bound =
        net.listen(address, std::string(key),
                   is_http ? server::make_http_session_factory(*service, http_options)
                           : server::make_resp_session_factory(*service, resp_options),
                   plain ? nullptr : security.tls, is_http ? kHttpRefusal : kRespRefusal);
    if (!bound.ok()) return stop_service(*service, listen_failed(config, key, bound.status()));
    listening.push_back({key, *bound, tls && !plain});
  }
  Status running = net.start();
  if (!running.ok()) {
    print_error(running.message());
    return stop_service(*service, kExitFailure);
  }

  // Scripts and tests read these lines for the bound ports (port 0 picks one).
  std::vector<log::Field> fields;
  std::vector<std::string> urls;
  for (const Listening& l : listening) {
    const bool is_http = l.key.ends_with("http");
    const std::string url = is_http ? listener_url(l.tls ? "https" : "http", l.endpoint, "/")
                                    : listener_url(l.tls ? "rediss" : "redis", l.endpoint, "");
    fmt::print("idforge serve: {} {}\n", l.key, url);
    urls.push_back(url);
  }
  std::fflush(stdout);
  for (size_t i = 0; i < listening.size(); ++i) fields.push_back({listening[i].key, urls[i]});
  fields.push_back({"tls", tls ? "on" : "off"});
  fields.push_back({"tokens", tokens ? "on" : "off"});
  log::write(log::Level::kInfo, "serve.listening", fields);
  for (const Listening& l : listening) warn_if_exposed(l.key, l.endpoint, l.tls, tokens);
  // Under systemd (Type=notify): started, and the watchdog if the unit has WatchdogSec=;
  // no-ops otherwise (server/systemd_notify.h).
  server::notify_ready(fmt::format("serving {}", fmt::join(urls, " and ")));
  std::unique_ptr<server::Watchdog> watchdog = server::start_systemd_watchdog(net, *service);

  int signal = 0;
  while (true) {
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal != SIGHUP) break;
    reload_security(security);
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
