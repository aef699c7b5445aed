// `idforge serve` as systemd runs a Type=notify unit with WatchdogSec= (the Debian
// package's idforge.service): the test plays systemd's part, a unix datagram socket
// named by NOTIFY_SOCKET, with WATCHDOG_USEC set small. READY=1 must come from the
// server's own process after its two start-up lines (both listeners bound, the lease
// held), WATCHDOG=1 every half interval, STOPPING=1 once SIGTERM starts the drain (and
// no ping after it), then exit 0. Sending READY=1 before the two lines fails the first
// test ("READY=1 came before the http line"). The watchdog's checks (a stuck event loop
// stops the pings) are tested in tests/server/systemd_watchdog_test.cc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "serve_process.h"

extern char** environ;

namespace idforge::e2e {
namespace {

using Clock = std::chrono::steady_clock;

struct Event {
  std::string message;        // the datagram's text
  pid_t sender = 0;           // from SCM_CREDENTIALS
  std::string stdout_before;  // what the server had written to stdout when it arrived
};

// systemd's end of sd_notify(3): a datagram socket whose messages carry the sender's
// credentials, and the server started with NOTIFY_SOCKET pointing at it.
class NotifiedServer {
 public:
  NotifiedServer(const TempDir& dir, const std::vector<std::string>& extra_env) {
    socket_path_ = dir.path() + "/notify";
    sock_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock_ < 0) throw std::runtime_error("socket");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(sock_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("bind " + socket_path_);
    }
    const int on = 1;
    ::setsockopt(sock_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);

    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view var(*e);
      if (var.starts_with("IDFORGE_") || var.starts_with("NOTIFY_SOCKET=") ||
          var.starts_with("WATCHDOG_")) {
        continue;
      }
      env.emplace_back(var);
    }
    env.push_back("NOTIFY_SOCKET=" + socket_path_);
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<std::string> args = {
        IDFORGE_BIN, "serve",       "--http",     "127.0.0.1:0",
        "--resp",    "127.0.0.1:0", "--data-dir", dir.path() + "/data"};
    stderr_path_ = dir.path() + "/stderr";

    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv = pointers(args);
    std::vector<char*> envp = pointers(env);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    stdout_fd_ = out[0];
    if (rc != 0) throw std::runtime_error("posix_spawn " IDFORGE_BIN);
    ::fcntl(stdout_fd_, F_SETFL, O_NONBLOCK);
  }

  ~NotifiedServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
    if (sock_ >= 0) ::close(sock_);
  }

  pid_t pid() const { return pid_; }
  const std::string& stdout_text() const { return stdout_; }
  std::string stderr_text() const {
    std::ifstream in(stderr_path_);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Collects notifications for `duration`, or until one starts with `until` (when not
  // empty); returns whether that one came.
  bool collect(std::chrono::milliseconds duration, std::string_view until = {}) {
    const Clock::time_point end = Clock::now() + duration;
    while (Clock::now() < end) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      pollfd fds[2] = {{sock_, POLLIN, 0}, {stdout_fd_, POLLIN, 0}};
      if (::poll(fds, 2, static_cast<int>(std::max<int64_t>(left.count(), 1))) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("poll");
      }
      read_stdout();
      if ((fds[0].revents & POLLIN) == 0) continue;
      Event event = receive();
      const bool done = !until.empty() && event.message.starts_with(until);
      events.push_back(std::move(event));
      if (done) return true;
    }
    return until.empty();
  }

  // Waits for the process; its exit status, 128 + signal, or -1 after `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    const Clock::time_point end = Clock::now() + timeout;
    while (Clock::now() < end) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
        return -1;
      }
      collect(std::chrono::milliseconds(20));
    }
    return -1;
  }

  std::vector<Event> events;

 private:
  static std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }

  void read_stdout() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
      if (n <= 0) return;
      stdout_.append(buf, static_cast<size_t>(n));
    }
  }

  // One datagram with its sender. The server wrote to stdout before it sent, so what
  // the pipe holds now is all it had written by then.
  Event receive() {
    char data[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{data, sizeof data};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(sock_, &msg, 0);
    if (n < 0) throw std::runtime_error("recvmsg");
    Event event;
    event.message.assign(data, static_cast<size_t>(n));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        event.sender = cred.pid;
      }
    }
    read_stdout();
    event.stdout_before = stdout_;
    return event;
  }

  std::string socket_path_;
  std::string stderr_path_;
  int sock_ = -1;
  int stdout_fd_ = -1;
  pid_t pid_ = -1;
  std::string stdout_;
};

size_t count_starting(const std::vector<Event>& events, std::string_view prefix, size_t from = 0) {
  size_t n = 0;
  for (size_t i = from; i < events.size(); ++i) n += events[i].message.starts_with(prefix);
  return n;
}

std::string listed(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) out += "[" + e.message + "] ";
  return out;
}

TEST(ServeSystemdTest, NotifiesReadyAfterTheStartLinesPingsTheWatchdogAndStopping) {
  TempDir dir("idforge-systemd-e2e");
  NotifiedServer server(dir, {"WATCHDOG_USEC=200000"});  // a ping every 100 ms

  ASSERT_TRUE(server.collect(std::chrono::milliseconds(15'000), "READY=1"))
      << listed(server.events) << server.stderr_text();
  const Event& ready = server.events.back();
  EXPECT_EQ(server.events.size(), 1u) << "notified before READY=1: " << listed(server.events);
  EXPECT_EQ(ready.sender, server.pid()) << "NotifyAccess=main takes only the main process";
  // Both listeners were bound, and their lines written, before READY=1.
  const std::string& lines = ready.stdout_before;
  const size_t http = lines.find("idforge serve: http http://127.0.0.1:");
  const size_t resp = lines.find("idforge serve: resp redis://127.0.0.1:");
  ASSERT_NE(http, std::string::npos) << "READY=1 came before the http line: " << lines;
  ASSERT_NE(resp, std::string::npos) << "READY=1 came before the resp line: " << lines;
  // The status names the addresses really bound.
  const std::string http_url = lines.substr(http + 20, lines.find('\n', http) - http - 20);
  const std::string resp_url = lines.substr(resp + 20, lines.find('\n', resp) - resp - 20);
  EXPECT_NE(ready.message.find("\nSTATUS=serving " + http_url + " and " + resp_url),
            std::string::npos)
      << ready.message;

  // 1.5 s: about 15 pings (a ping per interval would be 7), each from the server's
  // process.
  server.collect(std::chrono::milliseconds(1'500));
  const size_t pings = count_starting(server.events, "WATCHDOG=1");
  EXPECT_GE(pings, 10u) << listed(server.events);
  EXPECT_LE(pings, 25u) << listed(server.events);
  for (const Event& e : server.events) EXPECT_EQ(e.sender, server.pid()) << e.message;

  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  const size_t before_stop = server.events.size();
  EXPECT_EQ(server.wait(std::chrono::milliseconds(10'000)), 0) << server.stderr_text();
  size_t stopping = 0;
  for (size_t i = before_stop; i < server.events.size(); ++i) {
    if (server.events[i].message.starts_with("STOPPING=1")) {
      stopping = i;
      break;
    }
  }
  ASSERT_NE(stopping, 0u) << "no STOPPING=1 after SIGTERM: " << listed(server.events);
  EXPECT_EQ(count_starting(server.events, "WATCHDOG=1", stopping + 1), 0u)
      << "pinged after STOPPING=1: " << listed(server.events);
  EXPECT_EQ(count_starting(server.events, "READY=1"), 1u);
}

TEST(ServeSystemdTest, AWatchdogForAnotherProcessIsNotPinged) {
  // sd_watchdog_enabled(3): WATCHDOG_PID names the process systemd watches; a child
  // that inherited the variables must not ping in its parent's name.
  TempDir dir("idforge-systemd-e2e");
  NotifiedServer server(dir, {"WATCHDOG_USEC=200000", "WATCHDOG_PID=1"});
  ASSERT_TRUE(server.collect(std::chrono::milliseconds(15'000), "READY=1"))
      << listed(server.events) << server.stderr_text();
  server.collect(std::chrono::milliseconds(700));
  EXPECT_EQ(count_starting(server.events, "WATCHDOG=1"), 0u) << listed(server.events);
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  EXPECT_EQ(server.wait(std::chrono::milliseconds(10'000)), 0) << server.stderr_text();
  EXPECT_EQ(count_starting(server.events, "STOPPING=1"), 1u) << listed(server.events);
}

}  // namespace
}  // namespace idforge::e2e
