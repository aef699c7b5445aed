// `idforge serve` under systemd (Type=notify, WatchdogSec=; docs/operations.md,
// "Installing the Debian package"): the sd_notify(3) messages and the watchdog.
//
//   fmt::print(...);                                     // the two start-up lines
//   notify_ready("serving http://127.0.0.1:8080/ ...");  // READY=1
//   std::unique_ptr<Watchdog> watchdog = start_systemd_watchdog(net, *service);
//   ...                                                  // SIGTERM
//   notify_stopping("finishing in-flight requests");     // STOPPING=1
//   watchdog.reset();                                    // before net.shutdown()
//
// Without NOTIFY_SOCKET in the environment (not started by systemd) every message is a
// no-op, and without WATCHDOG_USEC (or with a WATCHDOG_PID naming another process)
// start_systemd_watchdog returns null: the server runs as it does anywhere else.
//
// The watchdog pings (WATCHDOG=1) every half interval, but only while every check
// passes: each event loop runs a posted no-op within a quarter of the interval, and the
// worker lease keeper's renew thread has gone round its loop within kKeeperStuckAfter.
// A keeper whose coordinator is down still goes round (each renew fails within the
// registry's timeouts); a stuck thread does not. While a check fails there is no ping,
// so systemd restarts the process once the interval passes; one log line
// (watchdog.stopped, with the reason) says why when the pings stop, another
// (watchdog.resumed) when they come back in time.
//
// Thread safety: notify_* may be called from any thread. A Watchdog runs one thread of
// its own; its destructor stops and joins it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"

namespace idforge::server {

class IdService;
class NetServer;

// READY=1 with STATUS=`status`: a Type=notify unit is started from here on.
void notify_ready(std::string_view status);
// STOPPING=1 with STATUS=`status`: the shutdown has begun (systemd no longer expects
// watchdog pings and waits up to TimeoutStopSec=).
void notify_stopping(std::string_view status);

// The longest the lease keeper's renew thread may go without a round before the
// watchdog counts it stuck: it comes round at least every LeaseKeeper::kRoundEvery
// (1 s) and after each renew, and every registry gives up on a renew within a few
// seconds (etcd at most 2 s per member, ZooKeeper and Redis by their timeouts).
inline constexpr std::chrono::seconds kKeeperStuckAfter{30};

struct WatchdogOptions {
  // systemd restarts the process after this long without a ping (WATCHDOG_USEC).
  std::chrono::microseconds interval{0};
  // Each returns "" while healthy, else one line saying what is wrong. Run in order on
  // the watchdog's thread every half interval; the first failure skips the ping.
  std::vector<std::function<std::string()>> checks;
  // Sends one ping; default: sd_notify(0, "WATCHDOG=1").
  std::function<void()> ping;
  // Called when the pings stop (`why`: the failing check's line) and when they resume
  // (`why` empty). Default: a log line (watchdog.stopped, watchdog.resumed) and the
  // unit's STATUS=, which `systemctl status idforge` shows.
  std::function<void(const std::string& why)> on_change;
};

class Watchdog {
 public:
  // Starts the thread; the first round (checks, then a ping) runs at once.
  explicit Watchdog(WatchdogOptions options);
  ~Watchdog();  // stops and joins the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void run() IDFORGE_EXCLUDES(mu_);

  WatchdogOptions options_;
  Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ IDFORGE_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// The server's checks (above) for a watchdog of `interval`; `keeper_stuck_after` is
// shorter in tests. `net` must be running; both must outlive the checks.
std::vector<std::function<std::string()>> server_watchdog_checks(
    const NetServer& net, const IdService& service, std::chrono::microseconds interval,
    std::chrono::steady_clock::duration keeper_stuck_after = kKeeperStuckAfter);

// A Watchdog with the server's checks when systemd asked for one (sd_watchdog_enabled),
// else null. `net` and `service` must outlive it.
std::unique_ptr<Watchdog> start_systemd_watchdog(const NetServer& net, const IdService& service);

}  // namespace idforge::server
