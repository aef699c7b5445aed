// `idforge serve` as every test harness starts it: the command line, the spawn, the
// two "listening" lines on stdout that tell its ports, and the stop (a signal, a
// bounded wait, then SIGKILL). The harnesses (tests/e2e/serve_process.h,
// tests/integration/serve_node.h, tests/clients/client_cluster.h, tests/torture/cluster.h)
// wrap it with what their tests need: HTTP and RESP clients, restarts on the same
// ports, fake clocks, their own error texts.
//
// Not thread-safe: one thread drives a ServeChild. A child started with
// die_with_parent must be started from a thread that outlives it (support/process.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idforge/status.h"
#include "support/process.h"

namespace idforge::test_support {

// How to start one `idforge serve`; initializers on every member as in SpawnOptions.
//   PREFIX... BIN serve --http HOST:HTTP_PORT --resp HOST:RESP_PORT --data-dir DIR ARGS...
struct ServeLaunch {
  std::string bin{};  // the idforge binary
  // A command it runs under: {"/usr/bin/prlimit", "--nofile=300"}, or
  // {"/usr/sbin/ip", "netns", "exec", NAME} with `host` an address of that namespace.
  std::vector<std::string> prefix{};
  std::string host = "127.0.0.1";
  int http_port = 0;  // 0: the kernel picks; the listening line tells which
  int resp_port = 0;
  std::string data_dir{};
  std::vector<std::string> args{};  // after --data-dir
  // "NAME=value" added to the environment. The test's own IDFORGE_*, NOTIFY_SOCKET and
  // WATCHDOG_* variables are never passed on: a developer's IDFORGE_CONFIG or
  // IDFORGE_LOG_FORMAT must not change what a test starts, nor a server started by a
  // test notify the service manager the test runs under.
  std::vector<std::string> env{};
  std::string out_path{};        // stdout, truncated (the listening lines are read from it)
  std::string err_path{};        // stderr; empty: the test's own
  bool append_err = false;       // as SpawnOptions::append_err
  bool die_with_parent = false;  // as SpawnOptions::die_with_parent
};

// The ports a server printed.
struct ServePorts {
  int http = 0;
  int resp = 0;
};

// The ports of the two listening lines in a server's stdout,
//   idforge serve: http http://HOST:PORT/
//   idforge serve: resp redis://HOST:PORT
// nullopt until both are there whole (a line is read only once its newline is).
std::optional<ServePorts> listening_ports(std::string_view out);

class ServeChild {
 public:
  ServeChild() = default;
  ~ServeChild();  // SIGKILL and reap if it still runs
  ServeChild(const ServeChild&) = delete;
  ServeChild& operator=(const ServeChild&) = delete;

  // Spawns the server (a previous one must have ended). IoError when it could not
  // start. Does not wait: several servers may be launched before any is awaited (a
  // server with a lease start delay listens only after it).
  Status launch(const ServeLaunch& how);
  // Waits until stdout holds both listening lines. Unavailable when the server ended
  // first (last_exit() says how), DeadlineExceeded after `limit` (it still runs then). The
  // message names what happened and, when `stderr_lines` > 0, ends with ": " and that
  // many last lines of what the server wrote to stderr since launch().
  Result<ServePorts> await_ports(std::chrono::milliseconds limit, int stderr_lines = 20);

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  void send_signal(int signal) const;
  // Reaps the server if it has ended: how, else nullopt (also when none was started).
  std::optional<ExitInfo> try_reap();
  // Waits up to `timeout` for it to end; nullopt while it still runs.
  std::optional<ExitInfo> wait(std::chrono::milliseconds timeout);
  // SIGCONT (a stopped server handles `signal` only once resumed), `signal`, and waits up
  // to `timeout`. How it ended; nullopt when it had to be killed (SIGKILL) or none ran.
  std::optional<ExitInfo> stop(std::chrono::milliseconds timeout, int signal = SIGTERM);
  // SIGKILL and reap.
  void kill();
  // How the last server ended, once reaped here; nullopt while it runs.
  const std::optional<ExitInfo>& last_exit() const { return last_exit_; }

  const std::string& out_path() const { return out_path_; }
  const std::string& err_path() const { return err_path_; }
  std::string stdout_text() const;
  // The whole stderr file, earlier starts included when it is appended to.
  std::string stderr_text() const;
  // What the server wrote to stderr since launch().
  std::string stderr_since_launch() const;
  // The last `lines` lines of stderr_since_launch().
  std::string stderr_tail(int lines) const;

 private:
  // Records that the server ended.
  void ended(const ExitInfo& info);

  pid_t pid_ = -1;
  std::string out_path_;
  std::string err_path_;
  size_t err_offset_ = 0;  // the stderr file's size at launch()
  std::optional<ExitInfo> last_exit_;
};

}  // namespace idforge::test_support
