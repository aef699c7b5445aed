// `idforge serve` as systemd runs a Type=notify unit with WatchdogSec= (the Debian
// package's idforge.service): the test plays systemd's part, a unix datagram socket
// named by NOTIFY_SOCKET, with WATCHDOG_USEC set small. READY=1 must come from the
// server's own process after its two start-up lines (both listeners bound, the lease
// held), WATCHDOG=1 every half interval, STOPPING=1 once SIGTERM starts the drain (and
// no ping after it), then exit 0. Sending READY=1 before the two lines fails the first
// test ("READY=1 came before the http line"). The watchdog's checks (a stuck event loop
// stops the pings) are tested in tests/server/systemd_watchdog_test.cc.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "serve_process.h"
#include "support/serve_launch.h"

namespace idforge::e2e {
namespace {

using Clock = std::chrono::steady_clock;

struct Event {
  std::string message;        // the datagram's text
  pid_t sender = 0;           // from SCM_CREDENTIALS
  std::string stdout_before;  // what the server had written to stdout when it arrived
};

// systemd's end of sd_notify(3): a datagram socket whose messages carry the sender's
// credentials, and the server started (test_support::ServeChild) with NOTIFY_SOCKET
// pointing at it.
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

    // ServeChild passes on none of the test's own NOTIFY_SOCKET and WATCHDOG_*; only these.
    test_support::ServeLaunch how;
    how.bin = IDFORGE_BIN;
    how.data_dir = dir.path() + "/data";
    how.env = extra_env;
    how.env.push_back("NOTIFY_SOCKET=" + socket_path_);
    how.out_path = dir.path() + "/stdout";
    how.err_path = dir.path() + "/stderr";
    const Status launched = child_.launch(how);
    if (!launched.ok()) throw std::runtime_error(launched.to_string());
  }

  ~NotifiedServer() {
    child_.kill();
    if (sock_ >= 0) ::close(sock_);
  }

  pid_t pid() const { return child_.pid(); }
  std::string stderr_text() const { return child_.stderr_text(); }

  // Collects notifications for `duration`, or until one starts with `until` (when not
  // empty); returns whether that one came.
  bool collect(std::chrono::milliseconds duration, std::string_view until = {}) {
    const Clock::time_point end = Clock::now() + duration;
    while (Clock::now() < end) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      pollfd fds[1] = {{sock_, POLLIN, 0}};
      if (::poll(fds, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("poll");
      }
      if ((fds[0].revents & POLLIN) == 0) continue;
      Event event = receive();
      const bool done = !until.empty() && event.message.starts_with(until);
      events.push_back(std::move(event));
      if (done) return true;
    }
    return until.empty();
  }

  // Waits for the process, collecting notifications meanwhile; its exit status,
  // 128 + signal, or -1 after `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    const Clock::time_point end = Clock::now() + timeout;
    while (Clock::now() < end) {
      if (std::optional<test_support::ExitInfo> exit = child_.try_reap()) {
        return exit->signaled ? 128 + exit->signal : exit->code;
      }
      collect(std::chrono::milliseconds(20));
    }
    return -1;
  }

  std::vector<Event> events;

 private:
  // One datagram with its sender. The server wrote to stdout before it sent, so what
  // the file holds now is all it had written by then.
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
    event.stdout_before = child_.stdout_text();
    return event;
  }

  std::string socket_path_;
  int sock_ = -1;
  test_support::ServeChild child_;
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
