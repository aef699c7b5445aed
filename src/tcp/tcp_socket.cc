#include "tcp/tcp_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <utility>

#include "core/text.h"

namespace idforge::tcp {
namespace {

int ms_left(const Deadline& deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline.at - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1'000'000));
}

// "127.0.0.1:2379", "[::1]:2379": where a host name led.
std::string address_of(const addrinfo& ai) {
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> port{};
  if (::getnameinfo(ai.ai_addr, ai.ai_addrlen, host.data(), host.size(), port.data(), port.size(),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  const std::string shown(host.data());
  return (ai.ai_family == AF_INET6 ? "[" + shown + "]" : shown) + ":" + port.data();
}

}  // namespace

Status timed_out(const Deadline& deadline) {
  return Status::DeadlineExceeded("timed out after " + std::to_string(deadline.timeout_ms) + " ms");
}

std::string socket_error_text(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "connection refused";
    case ECONNRESET:
      return "connection reset";
    case EPIPE:
      return "connection closed while sending";
    default:
      return text::errno_text(err);
  }
}

Result<TcpSocket> TcpSocket::connect(const std::string& host, const std::string& port,
                                     const Deadline& deadline, Wake wake) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;  // an address: no lookup
  addrinfo* found = nullptr;
  int gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  const bool named = gai == EAI_NONAME;
  if (named) {
    hints.ai_flags = AI_NUMERICSERV;
    gai = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  }
  if (gai != 0) {
    return Status::Unavailable("cannot look up '" + host + "': " + ::gai_strerror(gai));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  Status last = Status::Unavailable("no address for '" + host + "'");
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    // A name's addresses are named in the error: which of them refused.
    const auto failed = [&](int err) {
      return Status::Unavailable(named ? socket_error_text(err) + " by " + address_of(*ai)
                                       : socket_error_text(err));
    };
    TcpSocket socket(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol),
        wake);
    if (!socket.is_open()) {
      last = failed(errno);
      continue;
    }
    if (::connect(socket.fd_, ai->ai_addr, ai->ai_addrlen) != 0) {
      int err = errno;
      if (err == EINPROGRESS) {
        last = socket.wait(POLLOUT, deadline);
        if (last.code() == StatusCode::kDeadlineExceeded) return last;  // no time for another
        if (!last.ok()) continue;
        socklen_t len = sizeof err;
        if (::getsockopt(socket.fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
      if (err != 0) {
        last = failed(err);
        continue;
      }
    }
    const int one = 1;
    ::setsockopt(socket.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return socket;
  }
  return last;
}

TcpSocket::TcpSocket(TcpSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), wake_(other.wake_) {}

TcpSocket& TcpSocket::operator=(TcpSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    wake_ = other.wake_;
  }
  return *this;
}

void TcpSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status TcpSocket::wait(short events, const Deadline& deadline) {
  for (;;) {
    pollfd fds[2] = {{fd_, events, 0}, {wake_.fd, POLLIN, 0}};
    const int timeout = ms_left(deadline);
    if (timeout <= 0) return timed_out(deadline);
    const int ready = ::poll(fds, wake_.fd >= 0 ? 2 : 1, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(socket_error_text(errno));
    }
    if (ready == 0) return timed_out(deadline);
    if (wake_.fd >= 0 && fds[1].revents != 0) return Status::Unavailable(std::string(wake_.why));
    if (fds[0].revents != 0) return Status::Ok();
  }
}

Status TcpSocket::send_all(std::string_view bytes, const Deadline& deadline) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);  // no SIGPIPE
    if (n >= 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      IDFORGE_RETURN_IF_ERROR(wait(POLLOUT, deadline));
    } else if (errno != EINTR) {
      return Status::Unavailable(socket_error_text(errno));
    }
  }
  return Status::Ok();
}

Result<size_t> TcpSocket::recv_some(std::span<char> buf, const Deadline& deadline) {
  // The answer is rarely there already: wait first, then read what came.
  IDFORGE_RETURN_IF_ERROR(wait(POLLIN, deadline));
  for (;;) {
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      IDFORGE_RETURN_IF_ERROR(wait(POLLIN, deadline));
    } else if (errno != EINTR) {
      return Status::Unavailable(socket_error_text(errno));
    }
  }
}

}  // namespace idforge::tcp
