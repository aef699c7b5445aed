// One TCP connection of the client to a server: a non-blocking socket with a read buffer,
// where every operation waits with poll() for at most what is left of the request's
// deadline (docs/clients.md: the timeout covers connect, send and the whole answer), and
// also wakes when the client is destroyed (its wake pipe becomes readable).
//
// Errors, by what the caller does with them:
//   DeadlineExceeded  "timed out after N ms": the server failed.
//   Unavailable       the connection failed (refused, reset, closed by the server): the
//                     server failed, unless this was a kept-alive connection and nothing
//                     of the answer had come (the server closed it while idle).
//   IoError           the bytes are not an answer: the server failed.
//                     Also "the client is closed" when the wake pipe fired.
//
// Not thread-safe: one request uses a connection at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "idforge/status.h"
#include "tcp/tcp_socket.h"

namespace idforge::client {

using Clock = tcp::Clock;
// When one request must be done, and its timeout for the message.
using Deadline = tcp::Deadline;

class Connection {
 public:
  // Resolves `host` and connects to the first address that accepts within the deadline.
  static Result<std::unique_ptr<Connection>> open(const std::string& host, uint16_t port,
                                                  const Deadline& deadline, int wake_fd);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Status send_all(std::string_view data, const Deadline& deadline);
  // One line without its CRLF; IoError when none ends within `limit` bytes.
  Result<std::string> read_line(const Deadline& deadline, size_t limit);
  // Exactly `n` bytes.
  Result<std::string> read_exact(size_t n, const Deadline& deadline);
  // Everything until the server closes, at most `limit` bytes.
  Result<std::string> read_to_eof(const Deadline& deadline, size_t limit);

  // Bytes received and not read yet: a connection with any is not reused.
  size_t buffered() const { return buf_.size() - pos_; }

  bool used = false;       // answered a request before: kept alive and reused
  bool got_bytes = false;  // bytes of the current answer arrived
  bool reusable = true;    // false once the server said it closes the connection

 private:
  explicit Connection(tcp::TcpSocket socket) : socket_(std::move(socket)) {}
  // One recv() into the buffer; Unavailable at the server's close.
  Status fill(const Deadline& deadline);

  tcp::TcpSocket socket_;
  std::string buf_;
  size_t pos_ = 0;  // buf_[pos_..] is unread
};

using tcp::timed_out;  // "timed out after N ms"

}  // namespace idforge::client
