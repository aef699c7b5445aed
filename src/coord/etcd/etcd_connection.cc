#include "coord/etcd/etcd_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

namespace idforge::coord {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;

// A status() over a large slot space reads every taken slot in one answer; anything
// past this is not an etcd we understand.
constexpr uint64_t kMaxAnswerBytes = 256u << 20;

}  // namespace

EtcdConnection::ErrorCode EtcdConnection::connect(const std::string& host, const std::string& port,
                                                  std::chrono::milliseconds timeout) {
  close();
  ErrorCode ec;
  tcp::resolver::results_type endpoints;
  const boost::asio::ip::address address = boost::asio::ip::make_address(host, ec);
  tcp::resolver resolver(ioc_);
  if (!ec) {
    endpoints = resolver.resolve(address.to_string(), port,
                                 tcp::resolver::numeric_host | tcp::resolver::numeric_service, ec);
  } else {
    // Synchronous: a name lookup is not bounded by the timeout. Use an address in the
    // URL where that matters.
    endpoints = resolver.resolve(host, port, tcp::resolver::numeric_service, ec);
  }
  if (ec) return ec;
  stream_.expires_after(timeout);
  stream_.async_connect(endpoints, [&](ErrorCode e, const tcp::endpoint&) { ec = e; });
  run();
  if (ec) return ec;
  stream_.socket().set_option(tcp::no_delay(true), ec);  // small requests, answered at once
  open_ = true;
  return {};
}

EtcdConnection::ErrorCode EtcdConnection::exchange(const Request& request, Response* response,
                                                   std::chrono::milliseconds timeout,
                                                   bool* answered) {
  *answered = false;
  ErrorCode ec;
  stream_.expires_after(timeout);  // one deadline for the write and the read
  http::async_write(stream_, request, [&](ErrorCode e, size_t) { ec = e; });
  run();
  if (ec) return fail(ec);
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  http::async_read(stream_, buffer_, parser, [&](ErrorCode e, size_t) { ec = e; });
  run();
  *answered = parser.got_some();
  if (ec) return fail(ec);
  *response = parser.release();
  if (!response->keep_alive()) close();
  return {};
}

void EtcdConnection::close() {
  ErrorCode ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  buffer_.clear();
  open_ = false;
}

void EtcdConnection::run() {
  ioc_.restart();
  ioc_.run();
}

EtcdConnection::ErrorCode EtcdConnection::fail(ErrorCode ec) {
  close();
  return ec;
}

}  // namespace idforge::coord
