#include "server/app/serve_signals.h"

#include <pthread.h>

#include <cstdlib>
#include <thread>

#include "log/log.h"
#include "server/app/server_app.h"

namespace idforge::server {

ServeSignals ServeSignals::block() {
  ServeSignals s;
  sigemptyset(&s.stop_);
  sigaddset(&s.stop_, SIGINT);
  sigaddset(&s.stop_, SIGTERM);
  s.signals_ = s.stop_;
  sigaddset(&s.signals_, SIGHUP);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  std::signal(SIGPIPE, SIG_IGN);
  pthread_sigmask(SIG_BLOCK, &s.signals_, nullptr);
  return s;
}

int ServeSignals::wait(ServerApp& app) const {
  int signal = 0;
  while (true) {
    if (sigwait(&signals_, &signal) != 0) continue;
    if (signal != SIGHUP) break;
    app.reload();
  }
  log::info("serve.stopping", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"},
                               {"grace_ms", app.config().shutdown_grace_ms}});
  std::thread([stop = stop_] {
    int again = 0;
    while (sigwait(&stop, &again) != 0) {
    }
    log::error("serve.abandoned",
               {{"reason",
                 "second signal: exiting without finishing requests or releasing the "
                 "lease"}});
    std::_Exit(1);
  }).detach();
  return signal;
}

}  // namespace idforge::server
