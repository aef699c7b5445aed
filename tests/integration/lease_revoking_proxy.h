// LeaseRevokingProxy: stands between an etcd registry and a real etcd, forwards every
// request, and once, before the first transaction that follows a lease grant, revokes
// that lease on etcd. The registry's walk over the slots then outlives its grant, as a
// walk that loses many races on a slow etcd does, but every time and at once: etcd itself
// answers the transaction "requested lease not found".
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "coord/etcd/etcd_connection.h"

namespace idforge::integration {

class LeaseRevokingProxy {
 public:
  explicit LeaseRevokingProxy(std::string upstream_port)
      : upstream_port_(std::move(upstream_port)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), len) != 0 ||
        ::listen(listener_, 8) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &len) != 0) {
      ADD_FAILURE() << "proxy: cannot listen";
      return;
    }
    port_ = std::to_string(ntohs(address.sin_port));
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;  // shut down
        std::lock_guard lock(mu_);
        connections_.emplace_back([this, fd] {
          serve(fd);
          ::close(fd);
        });
      }
    });
  }
  // Destroy the registry first: its connections' threads end when it closes them.
  ~LeaseRevokingProxy() {
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    for (std::thread& t : connections_) t.join();
    ::close(listener_);
  }
  LeaseRevokingProxy(const LeaseRevokingProxy&) = delete;
  LeaseRevokingProxy& operator=(const LeaseRevokingProxy&) = delete;

  const std::string& port() const { return port_; }
  // The lease revoked behind the registry's back; empty until then.
  std::string revoked() const {
    std::lock_guard lock(mu_);
    return revoked_;
  }

 private:
  static constexpr std::chrono::milliseconds kTimeout{5000};

  // One request's path and body; false at the close.
  static bool read_request(int fd, std::string* path, std::string* body) {
    std::string in;
    char buf[4096];
    for (;;) {
      const size_t head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const size_t at = in.find("Content-Length: ");
        const size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
        if (in.size() >= head_end + 4 + length) {
          const size_t path_start = in.find(' ') + 1;
          *path = in.substr(path_start, in.find(' ', path_start) - path_start);
          *body = in.substr(head_end + 4, length);
          return true;
        }
      }
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in.append(buf, static_cast<size_t>(n));
    }
  }

  // `"ID":"123"` of a grant's answer.
  static std::string lease_id(std::string_view answer) {
    const size_t at = answer.find("\"ID\":\"");
    if (at == std::string_view::npos) return "";
    const size_t start = at + 6;
    return std::string(answer.substr(start, answer.find('"', start) - start));
  }

  void serve(int fd) {
    coord::EtcdConnection upstream;
    const std::string host = "127.0.0.1:" + upstream_port_;
    if (!upstream.connect("127.0.0.1", upstream_port_, kTimeout).ok()) return;
    std::string path;
    std::string body;
    std::string granted;
    while (read_request(fd, &path, &body)) {
      if (path == "/v3/kv/txn" && !granted.empty()) {
        std::lock_guard lock(mu_);
        if (revoked_.empty()) {
          coord::EtcdConnection::Answer gone;
          bool answered = false;
          const std::string revoke = "{\"ID\":\"" + granted + "\"}";
          EXPECT_TRUE(
              upstream.exchange({host, "/v3/lease/revoke", revoke}, &gone, kTimeout, &answered)
                  .ok());
          EXPECT_EQ(gone.status, 200) << gone.body;
          revoked_ = granted;
        }
      }
      coord::EtcdConnection::Answer answer;
      bool answered = false;
      if (!upstream.exchange({host, path, body}, &answer, kTimeout, &answered).ok()) return;
      if (path == "/v3/lease/grant") granted = lease_id(answer.body);
      const std::string out = "HTTP/1.1 " + std::to_string(answer.status) +
                              " X\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(answer.body.size()) + "\r\n\r\n" + answer.body;
      if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
        return;
      }
    }
  }

  const std::string upstream_port_;
  std::string port_;
  int listener_ = -1;
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> connections_;
  std::string revoked_;
};

}  // namespace idforge::integration
