// EtcdConnection: one keep-alive HTTP/1.1 connection to one etcd member, for
// EtcdClient (etcd_client.h), which owns one or more per member and uses each from one
// thread at a time.
//
// A TcpSocket (tcp/tcp_socket.h) where every step waits for what is left of its
// deadline; the answer is read by HttpAnswerParser (http_answer.h). Errors, by what the
// caller does with them:
//   DeadlineExceeded  "timed out after N ms": the member is slow or gone; etcd may have
//                     acted on the request.
//   Unavailable       the connection failed: refused, reset, or closed by the server.
//                     With `*answered` false on a kept-alive connection, etcd closed it
//                     while idle and never read the request.
//   IoError           the bytes are not an HTTP answer ("bad HTTP answer: ...").
// Any error closes the connection.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "idforge/status.h"
#include "tcp/tcp_socket.h"

namespace idforge::coord {

class EtcdConnection {
 public:
  // POST `path` with the JSON `body`, to `host` (the Host header: "HOST:PORT").
  struct Request {
    std::string_view host;
    std::string_view path;
    std::string_view body;
  };
  struct Answer {
    int status = 0;
    std::string body;
  };

  EtcdConnection() = default;
  ~EtcdConnection() { close(); }
  EtcdConnection(const EtcdConnection&) = delete;
  EtcdConnection& operator=(const EtcdConnection&) = delete;

  bool is_open() const { return socket_.is_open(); }

  // Connects within `timeout` (closing the connection held before), to the first of
  // `host`'s addresses that accepts. A host name is looked up first, which `timeout`
  // does not bound (getaddrinfo cannot be cancelled); an address is not looked up.
  Status connect(const std::string& host, const std::string& port,
                 std::chrono::milliseconds timeout);

  // Sends `request` and reads the answer into `*answer`, both within `timeout`.
  // `*answered` tells whether any byte of an answer arrived (a request on a connection
  // the server had closed got none). Closes when the server does not keep it alive.
  Status exchange(const Request& request, Answer* answer, std::chrono::milliseconds timeout,
                  bool* answered);

  void close();

 private:
  Status fail(Status status);

  tcp::TcpSocket socket_;
};

}  // namespace idforge::coord
