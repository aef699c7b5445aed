// async_read_when_ready: an async read on a plain TCP socket that tries the socket at
// once only when it may hold data, and otherwise waits for epoll to say so.
//
//   async_read_when_ready(socket, boost::asio::buffer(p, n),
//                         [](const boost::system::error_code& ec, size_t n) { ... });
//
// Why: Asio's async_read_some always tries the socket first (a speculative recv) and
// treats only end of stream as "drained". For a request-answer protocol the client's
// next request is almost never there right after the answer, so that first recv finds
// nothing on nearly every request: at full speed, 0.97 empty reads per unpipelined
// request (perf stat, docs/benchmarks.md "System calls per request"). Here a read that
// returned less than its buffer also counts as drained (done_and_exhausted), so the next
// read goes straight to epoll's queue, which is edge-triggered: data that arrives after
// the drained read raises a new edge, and Asio's reactor then runs the read. A read that
// filled its buffer (pipelining) is tried at once next time, as before. Waiting with
// async_wait instead would cost an epoll_ctl per read.
//
// This reaches into Asio's reactor (boost/asio/detail), so it is built only for the
// epoll reactor of the Boost versions it was checked with; elsewhere it is
// async_read_some (-DIDFORGE_READ_WHEN_READY=0 chooses that path anywhere: the network
// tests run on both, idforge_net_portable_tests on the other). The socket must be in
// non-blocking mode (StreamConnection::start).
#pragma once

#include <boost/asio/execution/context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/query.hpp>
#include <boost/version.hpp>
#include <cstddef>
#include <utility>

#ifndef IDFORGE_READ_WHEN_READY
#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && \
    BOOST_VERSION >= 107400 && BOOST_VERSION < 107500
#define IDFORGE_READ_WHEN_READY 1
#else
#define IDFORGE_READ_WHEN_READY 0
#endif
#endif
#if IDFORGE_READ_WHEN_READY
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>
#endif

namespace idforge::server::net {

#if IDFORGE_READ_WHEN_READY
namespace ready_read_detail {

namespace asio_detail = boost::asio::detail;

// The socket's reactor state is a protected member of basic_socket; a pointer to it
// taken through a derived class reaches it on any socket of that type.
template <typename Socket>
struct SocketImpl : Socket {
  static auto& of(Socket& s) { return (s.*(&SocketImpl::impl_)).get_implementation(); }
};

// Hands `op` to the epoll reactor of the socket's io_context for the socket's read or
// write queue (epoll_reactor::read_op, write_op): the one place that reaches into Asio's
// reactor. The reactor tries the op at once unless the last op on that queue said the
// socket was drained (done_and_exhausted), and otherwise runs it on epoll's next edge; a
// closed socket completes it with an error.
template <typename Socket>
void start_reactor_op(Socket& socket, int queue, asio_detail::reactor_op* op) {
  auto& impl = SocketImpl<Socket>::of(socket);
  boost::asio::execution_context& ctx =
      boost::asio::query(socket.get_executor(), boost::asio::execution::context);
  boost::asio::use_service<asio_detail::epoll_reactor>(ctx).start_op(
      queue, impl.socket_, impl.reactor_data_, op, /*is_continuation=*/false,
      /*allow_speculative=*/true);
}

template <typename Handler>
class ReadOp final : public asio_detail::reactor_op {
 public:
  ReadOp(int fd, boost::asio::mutable_buffer buffer, Handler handler)
      : reactor_op(boost::system::error_code(), &ReadOp::perform_read, &ReadOp::complete),
        fd_(fd),
        buffer_(buffer),
        handler_(std::move(handler)) {}

 private:
  // Asio's own non-blocking recv (EINTR, would-block, end of stream); only the verdict
  // differs: fewer bytes than the buffer means the socket is drained.
  static status perform_read(reactor_op* base) {
    auto* op = static_cast<ReadOp*>(base);
    if (!asio_detail::socket_ops::non_blocking_recv1(op->fd_, op->buffer_.data(),
                                                     op->buffer_.size(), 0, /*is_stream=*/true,
                                                     op->ec_, op->bytes_transferred_)) {
      return not_done;
    }
    if (op->ec_ && op->ec_ != boost::asio::error::eof) return done;
    return op->bytes_transferred_ < op->buffer_.size() ? done_and_exhausted : done;
  }

  // Run by the scheduler; owner is null when the io_context is destroyed with the op
  // still queued, and the handler must then not run.
  static void complete(void* owner, asio_detail::operation* base, const boost::system::error_code&,
                       std::size_t) {
    auto* op = static_cast<ReadOp*>(base);
    Handler handler = std::move(op->handler_);
    const boost::system::error_code ec = op->ec_;
    const size_t n = op->bytes_transferred_;
    delete op;
    if (owner != nullptr) handler(ec, n);
  }

  int fd_;
  boost::asio::mutable_buffer buffer_;
  Handler handler_;
};

}  // namespace ready_read_detail
#endif

template <typename Socket, typename Handler>
void async_read_when_ready(Socket& socket, boost::asio::mutable_buffer buffer, Handler handler) {
#if IDFORGE_READ_WHEN_READY
  namespace asio_detail = boost::asio::detail;
  auto& impl = ready_read_detail::SocketImpl<Socket>::of(socket);
  if ((impl.state_ & asio_detail::socket_ops::non_blocking) != 0 && buffer.size() > 0) {
    ready_read_detail::start_reactor_op(
        socket, asio_detail::epoll_reactor::read_op,
        new ready_read_detail::ReadOp<Handler>(impl.socket_, buffer, std::move(handler)));
    return;
  }
#endif
  socket.async_read_some(buffer, std::move(handler));
}

}  // namespace idforge::server::net
