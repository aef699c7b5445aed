#include "server/app/server_app.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>

#include <chrono>
#include <utility>

#include "log/log.h"
#include "server/app/systemd_notify.h"
#include "server/auth/auth.h"
#include "server/http/http_session.h"
#include "server/net/tls_context.h"
#include "server/resp/resp_session.h"

namespace idforge::server {
namespace {

using config::ServeConfig;
using config::setting_subject;

Result<std::shared_ptr<TlsContext>> load_tls(const ServeConfig& config) {
  if (config.tls_cert.empty()) return std::shared_ptr<TlsContext>();
  Result<std::shared_ptr<TlsContext>> tls =
      TlsContext::load({config.tls_cert, config.tls_key, config.tls_client_ca});
  if (tls.ok()) return tls;
  // The message starts with the setting at fault ("tls_key /k.pem: ..."): named as the
  // user gave it (--tls-key, IDFORGE_TLS_KEY or FILE:LINE).
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

Result<std::shared_ptr<Auth>> load_auth(const ServeConfig& config) {
  if (config.tokens_file.empty()) return std::shared_ptr<Auth>();
  Result<std::shared_ptr<Auth>> auth = Auth::load(config.tokens_file);
  if (auth.ok()) return auth;
  return Status::InvalidArgument(
      fmt::format("{}: {}", setting_subject(config, "tokens_file"), auth.status().message()));
}

bool is_loopback(const Endpoint& endpoint) {
  const std::string& host = endpoint.host;
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// One line per listener that others can reach without TLS or without tokens: the
// defaults listen on loopback, so this is a choice an operator should see made.
void warn_if_exposed(std::string_view key, const Endpoint& endpoint, bool tls, bool tokens) {
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

}  // namespace

ServerApp::ServerApp(const ServeConfig& config) : config_(config) {}

ServerApp::~ServerApp() {
  stop().ignore_error();  // logged by stop()
}

Result<std::unique_ptr<ServerApp>> ServerApp::start(const ServeConfig& config,
                                                    StartStep* failed_at) {
  StartStep unused{};
  StartStep& step = failed_at != nullptr ? *failed_at : unused;
  std::unique_ptr<ServerApp> app(new ServerApp(config));
  // Loaded before the service starts, so a bad file fails at once, before a lease is taken.
  step = StartStep::kSecurity;
  Result<std::shared_ptr<TlsContext>> tls = load_tls(config);
  if (!tls.ok()) return tls.status();
  app->tls_ = std::move(tls).value();
  Result<std::shared_ptr<Auth>> auth = load_auth(config);
  if (!auth.ok()) return auth.status();
  app->auth_ = std::move(auth).value();

  // docs/operations.md, "Worker ids": the identity is host:port unless configured, so a
  // restarted server gets its old slot back and two servers on one host keep theirs apart.
  step = StartStep::kService;
  ServiceConfig service_config = config.service;
  if (service_config.identity.empty()) {
    Result<Endpoint> endpoint = parse_endpoint(config.http);
    if (endpoint.ok() && endpoint->port != 0) {
      service_config.identity = fmt::format("{}:{}", host_name(), endpoint->port);
    }
  }
  Result<std::unique_ptr<IdService>> started = IdService::start(std::move(service_config));
  if (!started.ok()) return started.status();
  app->service_ = std::move(started).value();

  step = StartStep::kListeners;
  if (Status listening = app->listen_all(); !listening.ok()) {
    // The lease is released here, not left to its TTL; a failure is logged by stop().
    app->stop().ignore_error();
    return listening;
  }
  return app;
}

Status ServerApp::listen_all() {
  HttpOptions http_options;
  http_options.auth = auth_;
  http_options.limits.rate = static_cast<double>(config_.connection_rate);
  http_options.limits.burst = static_cast<uint32_t>(config_.connection_burst);
  RespOptions resp_options;
  resp_options.auth = auth_;
  resp_options.limits = http_options.limits;

  NetOptions net_options = config_.net;
  net_options.max_connections = connections_within_fd_limit(net_options.max_connections);
  net_options.on_refused = [s = service_.get()] { s->metrics().record_connection_refused(); };
  net_ = std::make_unique<NetServer>(net_options);
  struct ListenerSetting {
    std::string_view key;
    const std::string& address;
    bool is_http;
    bool plain;  // never TLS: the plain listeners beside TLS ones
  };
  const ListenerSetting settings[] = {{"http", config_.http, true, false},
                                      {"resp", config_.resp, false, false},
                                      {"plain_http", config_.plain_http, true, true},
                                      {"plain_resp", config_.plain_resp, false, true}};
  for (const auto& [key, address, is_http, plain] : settings) {
    if (address.empty()) continue;
    Result<Endpoint> bound =
        net_->listen(address, std::string(key),
                     is_http ? make_http_session_factory(*service_, http_options)
                             : make_resp_session_factory(*service_, resp_options),
                     plain ? nullptr : tls_, is_http ? kHttpRefusal : kRespRefusal);
    if (!bound.ok()) {
      // NetServer prefixes the listener's name, which the setting's name replaces.
      const Status failed = bound.status();  // a copy: the view below points into it
      std::string_view message = failed.message();
      const std::string prefix = fmt::format("{}: ", key);
      if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
      return Status(failed.code(), fmt::format("{}: {}", setting_subject(config_, key), message));
    }
    const bool tls = tls_ != nullptr && !plain;
    const std::string scheme = is_http ? (tls ? "https" : "http") : (tls ? "rediss" : "redis");
    listeners_.push_back(
        {std::string(key), *bound, tls,
         fmt::format("{}://{}{}", scheme, bound->to_string(), is_http ? "/" : "")});
  }
  if (Status running = net_->start(); !running.ok()) return running;
  serving_ = true;

  std::vector<log::Field> fields;
  for (const AppListener& l : listeners_) fields.push_back({l.key, l.url});
  fields.push_back({"tls", tls_ ? "on" : "off"});
  fields.push_back({"tokens", auth_ ? "on" : "off"});
  log::write(log::Level::kInfo, "serve.listening", fields);
  for (const AppListener& l : listeners_) {
    warn_if_exposed(l.key, l.endpoint, l.tls, auth_ != nullptr);
  }
  return Status::Ok();
}

const AppListener* ServerApp::listener(std::string_view key) const {
  for (const AppListener& l : listeners_) {
    if (l.key == key) return &l;
  }
  return nullptr;
}

void ServerApp::ready() {
  std::vector<std::string> urls;
  for (const AppListener& l : listeners_) urls.push_back(l.url);
  notify_ready(fmt::format("serving {}", fmt::join(urls, " and ")));
  watchdog_ = start_systemd_watchdog(*net_, *service_);
}

void ServerApp::reload() {
  if (!tls_ && !auth_) {
    log::info("serve.reload", {{"result", "nothing to re-read: no tls_cert, no tokens_file"}});
    return;
  }
  if (tls_) {
    const Status reloaded = tls_->reload();
    if (reloaded.ok()) {
      log::info("tls.reloaded", {{"cert", tls_->files().cert}});
    } else {
      log::error("tls.reload_failed",
                 {{"error", reloaded.message()}, {"kept", "the certificate loaded before"}});
    }
  }
  if (auth_) {
    const Status reloaded = auth_->reload();
    if (reloaded.ok()) {
      log::info("tokens.reloaded", {{"tokens", auth_->token_count()}});
    } else {
      log::error("tokens.reload_failed",
                 {{"error", reloaded.message()}, {"kept", "the tokens loaded before"}});
    }
  }
}

Status ServerApp::stop() {
  if (stopped_) return stop_status_;
  stopped_ = true;
  if (serving_) {
    // systemd expects no ping once stopping, and the loops are about to stop.
    watchdog_.reset();
    notify_stopping("shutting down: finishing requests, releasing the worker lease");
    net_->shutdown(std::chrono::milliseconds(config_.shutdown_grace_ms));
    log::info("serve.drained", {{"next", "releasing the worker lease"}});
  }
  if (service_ != nullptr) {
    stop_status_ = service_->stop();
    if (!stop_status_.ok()) {
      log::error("serve.lease_release_failed", {{"error", stop_status_.message()}});
    }
  }
  return stop_status_;
}

}  // namespace idforge::server
