// Internals of NetServer (net_server.h): one event loop and one connection. Not a public
// interface; only net_server.cc and net_connection.cc include it.
//
// Threading: a Loop and every Connection on it are touched only by that loop's thread,
// with two exceptions, both ordered by a post() through the io_context or the worker pool:
// a Connection is built on its listener's loop and handed to its own loop, and while a
// kBlocking job runs on a worker the job (and only the job) writes the connection's
// output buffer and session. NetShared is read by every thread; its counters are atomics.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "core/thread_annotations.h"
#include "server/net/net_spin.h"
#include "server/net/session.h"
#include "server/net/tls_context.h"

namespace idforge::server::net {

using Clock = std::chrono::steady_clock;
// Sockets and timers bound to one io_context's executor: no type-erased executor on the
// hot path.
using Executor = boost::asio::io_context::executor_type;
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using Acceptor = boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Executor>;
using Timer = boost::asio::basic_waitable_timer<Clock, boost::asio::wait_traits<Clock>, Executor>;

// What every loop and connection shares: limits, counters and the worker pool.
struct NetShared {
  // Limits; a duration of zero means no limit.
  Clock::duration idle_timeout{};
  Clock::duration request_timeout{};
  size_t max_pending_bytes = 0;
  size_t max_connections = 0;

  // Relaxed is enough for the counters: each is read on its own (stats, the drain wait
  // re-reads under `mu`), and no other memory is published through them.
  std::atomic<uint64_t> open{0};
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> oversized{0};
  std::atomic<uint64_t> tls_handshake_failures{0};  // failed or timed out

  // Set once by shutdown(); a connection that starts after it closes at once. Relaxed:
  // shutdown() then posts to every loop, and that post orders the store before the loop's
  // later reads.
  std::atomic<bool> stopping{false};
  // shutdown() waits on `drained` for `open` to reach 0. `mu` guards no member (`open` is
  // an atomic): it only closes the gap between the waiter's check and its sleep.
  Mutex mu;
  std::condition_variable drained;

  boost::asio::thread_pool* pool = nullptr;

  // A connection closed: count it, and wake shutdown() when the last one goes.
  void connection_closed();
};

class Connection;

// One io_context run by one thread, and the connections it serves.
struct Loop {
  explicit Loop(NetShared& s) : shared(s) {}

  NetShared& shared;
  boost::asio::io_context ctx{1};  // one thread runs it
  boost::asio::executor_work_guard<Executor> guard{ctx.get_executor()};
  std::thread thread;
  // Open connections on this loop, so shutdown can reach them. Loop thread only.
  std::unordered_set<Connection*> connections;
  // Periodic check of idle and request deadlines: one timer per loop instead of one
  // re-armed per request, which would cost a cancel and a handler on every read.
  Timer sweep_timer{ctx};
  Clock::duration sweep_every{};
  bool sweeping = true;
  Clock::duration spin{};  // NetOptions::io_spin_us

  void arm_sweep();
  // Runs handlers until the context stops (net_server.cc's thread body); between them
  // an idle loop polls for a while or sleeps, as SpinPolicy (net_spin.h) decides.
  void run();
  // Calls `fn` on each connection; `fn` may close (and so unregister) that connection.
  template <typename Fn>
  void for_each_connection(Fn fn) {
    for (auto it = connections.begin(); it != connections.end();) {
      Connection* c = *it++;
      fn(*c);
    }
  }
};

// One client connection: reads bytes, drives its Session, writes answers in order. The
// Loop and shutdown reach it through this interface (rarely: sweeps, shutdown); the
// per-read and per-write work is in StreamConnection<Stream> (net_connection.cc), one
// class for plain TCP and one for TLS, so a plain connection pays no virtual call or
// TLS check on its hot path.
//
// Owned by shared_ptrs held in its pending handlers (read, write, a worker job); the
// Loop keeps only a raw pointer, removed on close.
class Connection {
 public:
  virtual ~Connection() = default;

  // All on the loop thread.
  virtual void start() = 0;
  // Shutdown: finish the requests already received (and their jobs), write the answers,
  // then close; a connection waiting for bytes closes now, after Session::on_timeout
  // (plain TCP; a TLS one just closes).
  virtual void drain() = 0;
  // Closes now. A job still running finishes on its worker; its answer is dropped.
  virtual void abort() = 0;
  // Closes the connection if a deadline passed.
  virtual void check_timeouts(Clock::time_point now) = 0;
};

// A connection for a socket accepted for `loop` (not started: post start() to the loop).
// With `tls`, it speaks TLS with the context current now (a reload later does not change
// it); without, plain TCP.
std::shared_ptr<Connection> make_connection(Loop& loop, Socket socket,
                                            std::unique_ptr<Session> session,
                                            const TlsContext* tls);

}  // namespace idforge::server::net
