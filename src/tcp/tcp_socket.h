// TcpSocket: one TCP connection on a non-blocking socket where every operation waits with
// poll() for at most what is left of a deadline, and optionally also wakes when its owner
// makes a pipe readable. What the C++ client (src/client/connection.h) and the etcd
// registry's connection (src/coord/etcd/etcd_connection.h) build their protocols on.
//
//   Result<TcpSocket> s = TcpSocket::connect("127.0.0.1", "2379", Deadline::after(1000ms));
//   IDFORGE_RETURN_IF_ERROR(s->send_all(request, deadline));
//   IDFORGE_ASSIGN_OR_RETURN(size_t n, s->recv_some(buf, deadline));  // 0: closed
//
// Errors: DeadlineExceeded "timed out after N ms" (N: the deadline's timeout); Unavailable
// with the socket call's words ("connection refused", "connection reset", ...; a host
// name's address is named: "connection refused by 10.0.0.7:2379"), or the wake's words.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "idforge/status.h"

namespace idforge::tcp {

using Clock = std::chrono::steady_clock;

// When an operation must be done, and the timeout its message names.
struct Deadline {
  Clock::time_point at;
  int64_t timeout_ms = 0;

  static Deadline after(std::chrono::milliseconds timeout) {
    return {Clock::now() + timeout, timeout.count()};
  }
};

// "timed out after N ms".
Status timed_out(const Deadline& deadline);

// The words for a socket call's errno: "connection refused", "connection reset",
// "connection closed while sending" (EPIPE); strerror's for anything else.
std::string socket_error_text(int err);

// A pipe whose read end, once readable, ends every wait with Unavailable(`why`): how an
// owner stops calls under way from another thread. `why` must outlive the socket.
struct Wake {
  int fd = -1;
  std::string_view why;
};

class TcpSocket {
 public:
  // Connects to the first address of `host` that accepts within the deadline. An address
  // is used as it is; a name is looked up first, which the deadline does not bound
  // (getaddrinfo cannot be cancelled). TCP_NODELAY: small requests, each answered first.
  static Result<TcpSocket> connect(const std::string& host, const std::string& port,
                                   const Deadline& deadline, Wake wake = {});

  TcpSocket() = default;
  ~TcpSocket() { close(); }
  TcpSocket(TcpSocket&& other) noexcept;
  TcpSocket& operator=(TcpSocket&& other) noexcept;
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;

  bool is_open() const { return fd_ >= 0; }
  void close();

  // Waits until the socket is ready for `events` (POLLIN, POLLOUT); POLLERR and POLLHUP
  // count as ready: the call that follows says what happened.
  Status wait(short events, const Deadline& deadline);
  // All of `bytes` (no SIGPIPE).
  Status send_all(std::string_view bytes, const Deadline& deadline);
  // Waits for bytes, then one recv() into `buf`: how many came, 0 when the peer closed.
  Result<size_t> recv_some(std::span<char> buf, const Deadline& deadline);

 private:
  TcpSocket(int fd, Wake wake) : fd_(fd), wake_(wake) {}

  int fd_ = -1;
  Wake wake_;
};

}  // namespace idforge::tcp
