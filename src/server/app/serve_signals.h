// ServeSignals: how `idforge serve` is stopped and reloaded (docs/operations.md,
// "Stopping"): SIGTERM or SIGINT stop it, SIGHUP re-reads the certificate and the tokens,
// and a second SIGTERM or SIGINT during the shutdown exits at once.
//
//   ServeSignals signals = ServeSignals::block();   // first, before any thread starts
//   ... ServerApp::start(config) ...
//   int signal = signals.wait(*app);                // SIGHUP: app->reload()
//   app->stop();                                    // a second signal: _Exit(1)
//
// The signals are blocked in every thread (threads inherit the mask of the thread that
// starts them), so they stay pending for wait()'s sigwait instead of interrupting a
// random thread. Thread safety: block() and wait() from the main thread.
#pragma once

#include <csignal>

namespace idforge::server {

class ServerApp;

class ServeSignals {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread it
  // starts later), restores their default action (a parent may have left them ignored,
  // and an ignored signal is discarded before sigwait could see it), and ignores SIGPIPE:
  // a client that goes away mid-answer must not end the server.
  static ServeSignals block();

  // Waits for SIGTERM or SIGINT, reloading `app` on each SIGHUP; logs serve.stopping
  // with the signal and the app's shutdown_grace_ms. From then on a second SIGTERM or SIGINT ends
  // the process at once (serve.abandoned, exit status 1): the operator will not wait for the grace
  // period or a slow coordinator, and the lease then expires by its TTL. Returns the signal.
  int wait(ServerApp& app) const;

 private:
  ServeSignals() = default;
  sigset_t stop_{};     // SIGINT, SIGTERM
  sigset_t signals_{};  // and SIGHUP
};

}  // namespace idforge::server
