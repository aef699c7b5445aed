// ServerApp: `idforge serve` assembled from the server's parts, callable without the
// binary. start() loads the TLS certificate and the tokens, starts the IdService (stores,
// worker lease), binds the HTTP and RESP listeners of the configuration on one NetServer
// and starts its loops; stop() stops accepting, lets in-flight requests finish and
// releases the lease. Signals are the caller's (serve_signals.h): a test starts an app on
// free ports (port 0), asks it for IDs and stops it, all in one process.
//
//   Result<std::unique_ptr<ServerApp>> app = ServerApp::start(config);
//   fmt::print("{}\n", (*app)->listener("http")->url);   // http://127.0.0.1:41234/
//   (*app)->ready();                                     // systemd: READY=1, watchdog
//   ...                                                  // SIGHUP: (*app)->reload()
//   Status released = (*app)->stop();
//
// Thread safety: start, ready, reload and stop are called from one controlling thread;
// service() may be used from any thread while the app runs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/serve_config.h"
#include "idforge/status.h"
#include "server/net/net_server.h"
#include "server/service/id_service.h"

namespace idforge::server {

class Auth;
class TlsContext;
class Watchdog;

// One listener the app bound.
struct AppListener {
  std::string key;    // its setting: "http", "resp", "plain_http", "plain_resp"
  Endpoint endpoint;  // the address bound (port 0 resolved)
  bool tls = false;
  std::string url;  // "http://127.0.0.1:8080/", "rediss://127.0.0.1:6380", ...
};

// The step start() failed at, which decides `idforge serve`'s exit status: a certificate or
// tokens file that does not load is a setting to fix (2); the service's error by its code;
// a listener that cannot bind, or loops that do not start, a failure (1).
enum class StartStep { kSecurity, kService, kListeners };

class ServerApp {
 public:
  // Errors name the setting at fault, as the user gave it (setting_subject). `failed_at`,
  // when given, is set to the step that failed. A failure after the service started
  // releases its lease before returning.
  static Result<std::unique_ptr<ServerApp>> start(const config::ServeConfig& config,
                                                  StartStep* failed_at = nullptr);
  ~ServerApp();  // stop(), its error logged
  ServerApp(const ServerApp&) = delete;
  ServerApp& operator=(const ServerApp&) = delete;

  const config::ServeConfig& config() const { return config_; }
  const std::vector<AppListener>& listeners() const { return listeners_; }
  // The listener of setting `key`; null when it is not configured.
  const AppListener* listener(std::string_view key) const;
  IdService& service() { return *service_; }

  // Under systemd (Type=notify): READY=1 naming the listeners, and the watchdog when the
  // unit has WatchdogSec=; no-ops otherwise (systemd_notify.h). Called once the
  // listeners' addresses are announced, since READY=1 tells systemd they are.
  void ready();

  // SIGHUP's work (docs/operations.md, "Security"): re-reads the certificate and the
  // tokens, each on its own; one that fails keeps what it had. Each result is logged.
  void reload();

  // Tells systemd it is stopping, stops accepting, lets in-flight requests finish (up
  // to shutdown_grace_ms) and releases the worker lease. The release's error (the slot
  // then stays taken until its TTL runs out), logged as serve.lease_release_failed.
  // Idempotent.
  Status stop();

 private:
  explicit ServerApp(const config::ServeConfig& config);
  // Binds every configured listener and starts the loops.
  Status listen_all();

  const config::ServeConfig config_;
  std::shared_ptr<TlsContext> tls_;  // null: plain TCP
  std::shared_ptr<Auth> auth_;       // null: no tokens
  std::unique_ptr<IdService> service_;
  // Declared after the service, so destroyed before it: sessions call the service.
  std::unique_ptr<NetServer> net_;
  std::vector<AppListener> listeners_;
  std::unique_ptr<Watchdog> watchdog_;
  bool serving_ = false;  // the loops started: stop() drains them
  bool stopped_ = false;
  Status stop_status_ = Status::Ok();
};

}  // namespace idforge::server
