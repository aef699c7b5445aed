// TcpProxy: a loopback TCP forwarder to one port, for tests that need a coordinator
// to vanish for one client while it stays up for others. cut() drops every connection
// and refuses new ones until heal(): the client sees its server vanish, the server a
// silent client (so a session or lease expires on the server's schedule).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace idforge::integration {

class TcpProxy {
 public:
  explicit TcpProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(0);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "proxy: cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~TcpProxy() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    for (auto& [a, b] : pairs_) close_pair(a, b);
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  void cut() { cut_ = true; }
  void heal() { cut_ = false; }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }
  static void close_pair(int a, int b) {
    ::close(a);
    ::close(b);
  }
  // Copies what `from` has to `to`; false when either side is done.
  static bool pump(int from, int to) {
    char buf[16384];
    const ssize_t n = ::read(from, buf, sizeof(buf));
    if (n <= 0) return false;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = ::write(to, buf + sent, static_cast<size_t>(n - sent));
      if (w <= 0) return false;
      sent += w;
    }
    return true;
  }

  // One thread, poll(): etcd's answers here are small, so a blocking write is fine.
  void loop() {
    while (!done_) {
      if (cut_) {
        for (auto& [a, b] : pairs_) close_pair(a, b);
        pairs_.clear();
      }
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
      for (auto& [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      std::vector<std::pair<int, int>> alive;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        const auto [a, b] = pairs_[i];
        const short ra = fds[1 + 2 * i].revents;
        const short rb = fds[2 + 2 * i].revents;
        bool ok = true;
        if (ra & (POLLIN | POLLHUP | POLLERR)) ok = pump(a, b);
        if (ok && (rb & (POLLIN | POLLHUP | POLLERR))) ok = pump(b, a);
        if (ok) {
          alive.emplace_back(a, b);
        } else {
          close_pair(a, b);
        }
      }
      pairs_ = std::move(alive);
      // After the pumps: fds has no entry for a pair accepted now.
      if (fds[0].revents & POLLIN) accept_one();
    }
  }

  void accept_one() {
    const int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client < 0) return;
    if (cut_) {
      ::close(client);
      return;
    }
    const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(upstream_port_);
    if (upstream < 0 ||
        ::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(client);
      if (upstream >= 0) ::close(upstream);
      return;
    }
    pairs_.emplace_back(client, upstream);
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> cut_{false};
  std::atomic<bool> done_{false};
  std::vector<std::pair<int, int>> pairs_;  // (client, upstream); the loop's thread only
  std::thread thread_;
};

}  // namespace idforge::integration
