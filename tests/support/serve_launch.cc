#include "support/serve_launch.h"

#include <signal.h>

#include <thread>

namespace idforge::test_support {
namespace {

using std::chrono::milliseconds;

// The port at the end of "...HOST:PORT" or "...HOST:PORT/", 0 when there is none. The
// last colon: the host may be an IPv6 address in brackets.
int endpoint_port(std::string_view endpoint) {
  if (endpoint.ends_with('/')) endpoint.remove_suffix(1);
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return 0;
  const std::string_view digits = endpoint.substr(colon + 1);
  if (digits.empty() || digits.size() > 5) return 0;
  int port = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return 0;
    port = port * 10 + (c - '0');
  }
  return port < 65536 ? port : 0;
}

}  // namespace

std::optional<ServePorts> listening_ports(std::string_view out) {
  constexpr std::string_view kHttp = "idforge serve: http http://";
  constexpr std::string_view kResp = "idforge serve: resp redis://";
  ServePorts ports;
  size_t begin = 0;
  for (size_t end = out.find('\n'); end != std::string_view::npos;
       begin = end + 1, end = out.find('\n', begin)) {
    const std::string_view line = out.substr(begin, end - begin);
    if (line.starts_with(kHttp)) ports.http = endpoint_port(line.substr(kHttp.size()));
    if (line.starts_with(kResp)) ports.resp = endpoint_port(line.substr(kResp.size()));
  }
  if (ports.http == 0 || ports.resp == 0) return std::nullopt;
  return ports;
}

ServeChild::~ServeChild() { kill(); }

Status ServeChild::launch(const ServeLaunch& how) {
  if (pid_ > 0)
    return Status::Internal("idforge serve is still running (pid " + std::to_string(pid_) + ")");
  std::vector<std::string> argv = how.prefix;
  const auto address = [&how](int port) { return how.host + ":" + std::to_string(port); };
  argv.insert(argv.end(), {how.bin, "serve", "--http", address(how.http_port), "--resp",
                           address(how.resp_port), "--data-dir", how.data_dir});
  argv.insert(argv.end(), how.args.begin(), how.args.end());
  out_path_ = how.out_path;
  err_path_ = how.err_path;
  // With append_err the file holds earlier starts: this one's text begins here.
  err_offset_ = how.append_err ? read_file(err_path_).size() : 0;
  last_exit_.reset();
  SpawnOptions options;
  options.env = how.env;
  // A developer's settings, and systemd's: a server a test starts must never notify or
  // ping the service manager the test itself may run under.
  options.drop_env_prefixes = {"IDFORGE_", "NOTIFY_SOCKET=", "WATCHDOG_"};
  options.out_path = how.out_path;
  options.err_path = how.err_path;
  options.append_err = how.append_err;
  options.die_with_parent = how.die_with_parent;
  pid_ = spawn(argv, options).pid;
  if (pid_ < 0) return Status::IoError("cannot start " + argv.front());
  return Status::Ok();
}

Result<ServePorts> ServeChild::await_ports(milliseconds limit, int stderr_lines) {
  const auto with_stderr = [&](std::string what) {
    if (stderr_lines > 0) what += ": " + stderr_tail(stderr_lines);
    return what;
  };
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (std::optional<ServePorts> ports = listening_ports(stdout_text())) return *ports;
    if (pid_ <= 0) return Status::Unavailable(with_stderr("idforge serve is not running"));
    if (std::optional<ExitInfo> info = try_reap()) {
      return Status::Unavailable(with_stderr("idforge serve ended (" + info->to_string() + ")"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::DeadlineExceeded(with_stderr("idforge serve printed no ports within " +
                                                  std::to_string(limit.count()) + " ms"));
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

void ServeChild::send_signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

void ServeChild::ended(const ExitInfo& info) {
  pid_ = -1;
  last_exit_ = info;
}

std::optional<ExitInfo> ServeChild::try_reap() {
  if (pid_ <= 0) return std::nullopt;
  std::optional<ExitInfo> info = test_support::try_reap(pid_);
  if (info) ended(*info);
  return info;
}

std::optional<ExitInfo> ServeChild::wait(milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  std::optional<ExitInfo> info = wait_for_exit(pid_, timeout);
  if (info) ended(*info);
  return info;
}

std::optional<ExitInfo> ServeChild::stop(milliseconds timeout, int signal) {
  if (pid_ <= 0) return std::nullopt;
  send_signal(SIGCONT);
  send_signal(signal);
  if (std::optional<ExitInfo> info = wait(timeout)) return info;
  kill();
  return std::nullopt;
}

void ServeChild::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ended(reap(pid_));
}

std::string ServeChild::stdout_text() const { return read_file(out_path_); }

std::string ServeChild::stderr_text() const { return read_file(err_path_); }

std::string ServeChild::stderr_since_launch() const {
  const std::string text = stderr_text();
  return err_offset_ < text.size() ? text.substr(err_offset_) : std::string();
}

std::string ServeChild::stderr_tail(int lines) const {
  return last_lines(stderr_since_launch(), lines);
}

}  // namespace idforge::test_support
