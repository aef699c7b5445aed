#include "server/app/systemd_notify.h"

#include <fmt/format.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <utility>

#include "log/log.h"
#include "server/net/net_server.h"
#include "server/service/id_service.h"

namespace idforge::server {
namespace {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// One notification; a STATUS= text is one line, so newlines become spaces. Without
// NOTIFY_SOCKET, sd_notify does nothing and returns 0; a failure to send is not worth
// stopping the server for.
void notify(std::string_view fields, std::string_view status) {
  std::string message(fields);
  if (!status.empty()) {
    std::string line(status);
    std::replace(line.begin(), line.end(), '\n', ' ');
    message += (message.empty() ? "STATUS=" : "\nSTATUS=") + line;
  }
  sd_notify(0, message.c_str());
}

int64_t ms_of(Steady::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

}  // namespace

void notify_ready(std::string_view status) { notify("READY=1", status); }

void notify_stopping(std::string_view status) { notify("STOPPING=1", status); }

Watchdog::Watchdog(WatchdogOptions options) : options_(std::move(options)) {
  if (!options_.ping) options_.ping = [] { sd_notify(0, "WATCHDOG=1"); };
  if (!options_.on_change) {
    options_.on_change = [interval_ms = ms_of(options_.interval)](const std::string& why) {
      if (why.empty()) {
        log::info("watchdog.resumed", {{"interval_ms", interval_ms}});
        notify("", "watchdog: every check passes again");
      } else {
        // systemd kills and restarts the server once interval_ms pass without a ping.
        log::error("watchdog.stopped", {{"reason", why}, {"restart_after_ms", interval_ms}});
        notify("", "watchdog: not pinging systemd: " + why);
      }
    };
  }
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::run() {
  // systemd's own advice (sd_watchdog_enabled(3)): ping every half interval, so one late
  // round is not yet a restart.
  const Steady::duration period =
      std::max<Steady::duration>(options_.interval / 2, milliseconds(1));
  std::string failing;  // why the last round did not ping; "" when it did
  Steady::time_point next = Steady::now();
  for (;;) {
    std::string why;
    for (const auto& check : options_.checks) {
      why = check();
      if (!why.empty()) break;
    }
    if (why.empty()) {
      options_.ping();
      if (!failing.empty()) options_.on_change("");
    } else if (failing.empty()) {
      options_.on_change(why);
    }
    failing = std::move(why);
    // After a slow round (a check that waited its whole bound), go on from now rather
    // than catch up with a burst.
    next = std::max(next + period, Steady::now());
    MutexLock lock(mu_);
    while (!stopping_ && lock.wait_until(wake_, next)) {
    }
    if (stopping_) return;
  }
}

std::vector<std::function<std::string()>> server_watchdog_checks(
    const NetServer& net, const IdService& service, std::chrono::microseconds interval,
    Steady::duration keeper_stuck_after) {
  // A quarter of the interval: the round (both checks) ends well within the half
  // interval between pings, and a loop busy for that long is stuck, not slow.
  const milliseconds loop_bound =
      std::max(std::chrono::duration_cast<milliseconds>(interval / 4), milliseconds(1));
  std::vector<std::function<std::string()>> checks;
  checks.push_back([&net, loop_bound]() -> std::string {
    if (net.loops_responsive(loop_bound)) return "";
    return fmt::format("an event loop did not run a posted no-op within {} ms", loop_bound.count());
  });
  checks.push_back([&service, keeper_stuck_after]() -> std::string {
    const Steady::duration since = Steady::now() - service.lease_keeper_last_round();
    if (since < keeper_stuck_after) return "";
    return fmt::format(
        "the worker lease keeper's renew thread has not come round its loop for {} ms (limit "
        "{} ms)",
        ms_of(since), ms_of(keeper_stuck_after));
  });
  return checks;
}

std::unique_ptr<Watchdog> start_systemd_watchdog(const NetServer& net, const IdService& service) {
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID, if set, is this process.
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return nullptr;
  WatchdogOptions options;
  options.interval = std::chrono::microseconds(usec);
  options.checks = server_watchdog_checks(net, service, options.interval);
  log::info("watchdog.started", {{"interval_ms", ms_of(options.interval)}});
  return std::make_unique<Watchdog>(std::move(options));
}

}  // namespace idforge::server
