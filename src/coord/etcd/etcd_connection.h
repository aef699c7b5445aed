// EtcdConnection: one keep-alive HTTP/1.1 connection to one etcd member and the
// io_context that drives it, for EtcdClient (etcd_client.h), which owns one or more
// per member and uses each from one thread at a time.
//
// Beast's timeouts apply to asynchronous operations only, so each step starts one and
// runs the context until it completes; tcp_stream's timer closes the socket at the
// deadline, which completes the operation with beast::error::timeout.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string>

namespace idforge::coord {

class EtcdConnection {
 public:
  using ErrorCode = boost::system::error_code;
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  bool is_open() const { return open_; }

  // Connects within `timeout` (closing the connection held before). A host name is
  // looked up first, which `timeout` does not bound (getaddrinfo cannot be cancelled).
  ErrorCode connect(const std::string& host, const std::string& port,
                    std::chrono::milliseconds timeout);

  // Sends `request` and reads the answer into `response`, both within `timeout`.
  // `*answered` tells whether any byte of an answer arrived (a request on a connection
  // the server had closed did not). Any error closes the connection.
  ErrorCode exchange(const Request& request, Response* response, std::chrono::milliseconds timeout,
                     bool* answered);

  void close();

 private:
  void run();
  ErrorCode fail(ErrorCode ec);

  boost::asio::io_context ioc_{1};
  boost::beast::tcp_stream stream_{ioc_};
  boost::beast::flat_buffer buffer_;
  bool open_ = false;
};

}  // namespace idforge::coord
