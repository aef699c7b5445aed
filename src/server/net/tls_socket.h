// TlsSocket: a server-side TLS connection whose SSL object reads and writes the socket
// itself, driven by Asio's epoll reactor; the stream StreamConnection uses for TLS where
// async_read_when_ready is built (ready_read.h), and Asio's ssl::stream elsewhere.
//
//   TlsSocket tls(std::move(socket), context);   // socket accepted and non-blocking
//   tls.async_handshake(boost::asio::ssl::stream_base::server, [](error_code ec) {...});
//   tls.async_read_some(buffer, [](error_code ec, size_t n) {...});
//   tls.async_write(buffer, [](error_code ec, size_t n) {...});   // all of it
//
// Why: Asio's ssl::stream runs OpenSSL over a pair of memory buffers, so each request
// is copied through them and takes several passes through its TLS engine (each clearing
// OpenSSL's error queue and asking both buffers what they hold): 0.4-1.5 µs more user
// time a request than SSL_read on the socket (docs/benchmarks.md, "Server CPU per
// request"). Here OpenSSL's reads and writes are recv and send on the socket (a BIO of
// our own), and, as for plain TCP, a read that left the socket drained makes the next
// read wait on epoll's edge instead of trying first (read-ahead is on, so a read that
// did not drain the socket shows as one that filled OpenSSL's buffer).
//
// One operation at a time: StreamConnection never reads and writes at once.
#pragma once

#include "server/net/ready_read.h"

#if IDFORGE_READ_WHEN_READY

#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <utility>

namespace idforge::server::net {

class TlsSocket {
 public:
  // net::Socket (net_connection.h), which checks that the two agree.
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp,
                                                  boost::asio::io_context::executor_type>;

  // What the BIO tells the operation about the last recv or send.
  struct BioState {
    int fd = -1;
    bool read_drained = false;   // the last recv returned less than asked, or would block
    bool write_blocked = false;  // the last send took less than given, or would block
    int error = 0;               // errno of a failed recv or send
  };

  // The socket must be non-blocking before the first operation. When OpenSSL cannot make
  // the SSL object (out of memory), the handshake fails.
  TlsSocket(Socket socket, boost::asio::ssl::context& context);
  ~TlsSocket();
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  Socket& next_layer() { return socket_; }

  template <typename Handler>
  void async_handshake(boost::asio::ssl::stream_base::handshake_type, Handler handler) {
    start(Call::kHandshake, kReadQueue, nullptr, 0, 0,
          [h = std::move(handler)](const boost::system::error_code& ec, size_t) mutable { h(ec); });
  }
  template <typename Handler>
  void async_read_some(boost::asio::mutable_buffer buffer, Handler handler) {
    start(Call::kRead, kReadQueue, static_cast<char*>(buffer.data()), buffer.size(), 0,
          std::move(handler));
  }
  template <typename Handler>
  void async_write(boost::asio::const_buffer buffer, Handler handler) {
    start(Call::kWrite, kWriteQueue,
          const_cast<char*>(static_cast<const char*>(buffer.data())),  // only read
          buffer.size(), 0, std::move(handler));
  }

 private:
  enum class Call { kHandshake, kRead, kWrite };
  // One attempt at `call` (tls_socket.cc), run by the reactor: kDone with `ec` or the
  // byte count, kWait when the socket must become ready on `queue` first, kSwitch when
  // OpenSSL needs the other direction (a handshake that must write, say).
  enum class Step { kDone, kDoneDrained, kWait, kSwitch };
  Step step(Call call, int queue, char* data, size_t size, size_t& done,
            boost::system::error_code& ec);
  static constexpr int kReadQueue = boost::asio::detail::epoll_reactor::read_op;
  static constexpr int kWriteQueue = boost::asio::detail::epoll_reactor::write_op;

  template <typename Handler>
  class Op;

  template <typename Handler>
  void start(Call call, int queue, char* data, size_t size, size_t done, Handler handler);

  Socket socket_;
  SSL* ssl_ = nullptr;
  BioState bio_;
};

template <typename Handler>
class TlsSocket::Op final : public boost::asio::detail::reactor_op {
 public:
  Op(TlsSocket& tls, Call call, int queue, char* data, size_t size, size_t sent, Handler handler)
      : reactor_op(boost::system::error_code(), &Op::perform, &Op::complete),
        tls_(tls),
        call_(call),
        queue_(queue),
        data_(data),
        size_(size),
        handler_(std::move(handler)) {
    bytes_transferred_ = sent;  // a write resumed on the other queue keeps its count
  }

 private:
  static status perform(reactor_op* base) {
    auto* op = static_cast<Op*>(base);
    switch (op->tls_.step(op->call_, op->queue_, op->data_, op->size_, op->bytes_transferred_,
                          op->ec_)) {
      case Step::kDone:
        return done;
      case Step::kDoneDrained:
        return done_and_exhausted;
      case Step::kWait:
        return not_done;
      case Step::kSwitch:
        op->switch_ = true;
        return done;
    }
    return done;
  }

  // Run by the scheduler; owner is null when the io_context is destroyed with the op
  // still queued, and the handler must then not run.
  static void complete(void* owner, boost::asio::detail::operation* base,
                       const boost::system::error_code&, size_t) {
    auto* op = static_cast<Op*>(base);
    Handler handler = std::move(op->handler_);
    TlsSocket& tls = op->tls_;
    const boost::system::error_code ec = op->ec_;
    const size_t n = op->bytes_transferred_;
    const bool switch_queue = op->switch_ && !ec;
    const Call call = op->call_;
    const int queue = op->queue_ == kReadQueue ? kWriteQueue : kReadQueue;
    char* data = op->data_;
    const size_t size = op->size_;
    delete op;
    if (owner == nullptr) return;
    if (switch_queue) {
      tls.start(call, queue, data, size, n, std::move(handler));
      return;
    }
    handler(ec, n);
  }

  TlsSocket& tls_;
  Call call_;
  int queue_;
  char* data_;
  size_t size_;
  bool switch_ = false;
  Handler handler_;
};

template <typename Handler>
void TlsSocket::start(Call call, int queue, char* data, size_t size, size_t done, Handler handler) {
  ready_read_detail::start_reactor_op(
      socket_, queue, new Op<Handler>(*this, call, queue, data, size, done, std::move(handler)));
}

}  // namespace idforge::server::net

#endif  // IDFORGE_READ_WHEN_READY
