#include "cli/http_get.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

namespace idforge::cli {
namespace {

using Steady = std::chrono::steady_clock;

constexpr size_t kMaxReply = 8 << 20;

int ms_left(Steady::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits until `fd` is ready for `events`; false at the deadline.
bool wait_for(int fd, short events, Steady::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<HttpGetReply> http_get(const std::string& base_url, const std::string& path,
                              std::chrono::milliseconds timeout) {
  constexpr std::string_view kScheme = "http://";
  std::string_view rest(base_url);
  if (!rest.starts_with(kScheme)) {
    return Status::InvalidArgument(
        fmt::format("server URL '{}' must be http://HOST:PORT", base_url.substr(0, 200)));
  }
  rest.remove_prefix(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || rest.find('/') != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("server URL '{}' must be http://HOST:PORT", base_url.substr(0, 200)));
  }
  const std::string host(rest.substr(0, colon));
  const std::string port(rest.substr(colon + 1));
  int port_number = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), port_number);
  if (ec != std::errc() || end != port.data() + port.size() || port_number < 1 ||
      port_number > 65535) {
    return Status::InvalidArgument(fmt::format("server URL '{}' has no valid port", base_url));
  }

  const auto deadline = Steady::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::Unavailable(fmt::format("{}: {}", base_url, ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, ::freeaddrinfo);
  Fd sock;
  std::string why = "no address";
  for (addrinfo* a = addrs.get(); a != nullptr && sock.fd < 0; a = a->ai_next) {
    Fd s;
    s.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s.fd < 0) continue;
    if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    if (!wait_for(s.fd, POLLOUT, deadline)) {
      why = "timed out";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = std::strerror(err);
      continue;
    }
    std::swap(sock.fd, s.fd);
  }
  if (sock.fd < 0) return Status::Unavailable(fmt::format("{}: cannot connect: {}", base_url, why));

  const std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json\r\n\r\n", path,
      host);
  for (size_t sent = 0; sent < request.size();) {
    if (!wait_for(sock.fd, POLLOUT, deadline)) {
      return Status::Unavailable(fmt::format("{}: timed out sending", base_url));
    }
    const ssize_t n = ::send(sock.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return Status::Unavailable(fmt::format("{}: {}", base_url, std::strerror(errno)));
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[16384];
  for (;;) {
    if (!wait_for(sock.fd, POLLIN, deadline)) {
      return Status::Unavailable(
          fmt::format("{}: no answer within {} ms", base_url, timeout.count()));
    }
    const ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Status::Unavailable(fmt::format("{}: {}", base_url, std::strerror(errno)));
    }
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxReply) {
      return Status::IoError(fmt::format("{}: answer larger than {} bytes", base_url, kMaxReply));
    }
  }
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody": the server closes after one answer, so the
  // body is whatever follows the head (the server does not chunk).
  const size_t head_end = reply.find("\r\n\r\n");
  if (reply.compare(0, 9, "HTTP/1.1 ") != 0 || head_end == std::string::npos || reply.size() < 12) {
    return Status::IoError(fmt::format("{}: the answer is not HTTP", base_url));
  }
  HttpGetReply out;
  std::from_chars(reply.data() + 9, reply.data() + 12, out.status);
  out.body = reply.substr(head_end + 4);
  return out;
}

}  // namespace idforge::cli
