#include "server/net/net_server.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <exception>
#include <latch>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/quote.h"
#include "core/thread_annotations.h"
#include "core/thread_name.h"
#include "log/repeats.h"
#include "server/net/access_log.h"
#include "server/net/net_connection.h"

namespace idforge::server {

namespace asio = boost::asio;
using asio::ip::tcp;
using net::Clock;
using net::Connection;
using net::Loop;

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<Endpoint> parse_endpoint(std::string_view text) {
  auto bad = [text](std::string_view why) {
    return Status::InvalidArgument(fmt::format("{}: {}", quote_text(text), why));
  };
  Endpoint endpoint;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad("expected [IPv6]:PORT");
    }
    endpoint.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
    boost::system::error_code ec;
    asio::ip::make_address_v6(endpoint.host, ec);
    if (ec) return bad("the host in brackets is not an IPv6 address");
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("expected HOST:PORT");
    endpoint.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (endpoint.host.empty()) return bad("expected HOST:PORT, the host is missing");
    if (endpoint.host.find(':') != std::string::npos) {
      return bad("an IPv6 address needs brackets: [ADDRESS]:PORT");
    }
    boost::system::error_code ec;
    if (endpoint.host != "localhost") asio::ip::make_address_v4(endpoint.host, ec);
    if (ec) return bad("the host must be an IPv4 address, [IPv6] or localhost");
  }
  if (port.empty()) return bad("expected HOST:PORT, the port is missing");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad("the port must be a number in 0..65535");
  }
  endpoint.port = static_cast<uint16_t>(value);
  return endpoint;
}

namespace {

// A listening socket on one loop, handing accepted connections round-robin to all loops.
struct Listener {
  Listener(Loop& l, std::string n, SessionFactory f, std::shared_ptr<TlsContext> t, std::string r)
      : loop(l),
        name(std::move(n)),
        factory(std::move(f)),
        tls(std::move(t)),
        refusal(std::move(r)),
        acceptor(l.ctx),
        retry(l.ctx) {}
  Loop& loop;
  std::string name;
  SessionFactory factory;
  std::shared_ptr<TlsContext> tls;  // null: plain TCP
  std::string refusal;              // written to a refused plain connection
  log::RepeatLimiter refusals;      // net.connection_refused ... net.connections_accepted
  net::Acceptor acceptor;
  net::Timer retry;  // backs off after an accept error such as EMFILE
  // Failures that repeat while the cause lasts: logged once per run and window.
  log::RepeatLimiter accept_failures;
  log::RepeatLimiter session_failures;
};

// Timeouts are checked by a sweep a few times per the shorter limit: closing within
// an eighth past the limit is close enough, and a sweep of all connections stays rare.
Clock::duration sweep_interval(const NetOptions& o) {
  int64_t shortest = 0;
  for (int64_t ms : {o.idle_timeout_ms, o.request_timeout_ms}) {
    if (ms > 0 && (shortest == 0 || ms < shortest)) shortest = ms;
  }
  if (shortest == 0) return Clock::duration::zero();
  return std::chrono::milliseconds(std::clamp<int64_t>(shortest / 8, 2, 250));
}

}  // namespace

struct NetServer::Impl {
  enum class State { kIdle, kRunning, kStopped };

  explicit Impl(NetOptions o) : pool(static_cast<size_t>(std::max(1, o.worker_threads))) {
    if (o.access_log_sample > 0) access_log = std::make_unique<AccessLog>(o.access_log_sample);
    shared.idle_timeout = std::chrono::milliseconds(std::max<int64_t>(0, o.idle_timeout_ms));
    shared.request_timeout = std::chrono::milliseconds(std::max<int64_t>(0, o.request_timeout_ms));
    shared.max_pending_bytes = o.max_pending_bytes;
    shared.max_connections = o.max_connections;
    on_refused = std::move(o.on_refused);
    shared.pool = &pool;
    int threads = o.io_threads;
    if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
    threads = std::max(1, threads);
    const Clock::duration sweep = sweep_interval(o);
    for (int i = 0; i < threads; ++i) {
      loops.push_back(std::make_unique<Loop>(shared));
      loops.back()->sweep_every = sweep;
      loops.back()->spin = std::chrono::microseconds(std::max<int64_t>(0, o.io_spin_us));
    }
  }

  void accept_next(Listener& l);
  void on_accept(Listener& l, Loop& target, const boost::system::error_code& ec,
                 net::Socket socket);
  // Runs `fn(loop)` on every loop's thread and waits until all have run.
  template <typename Fn>
  void on_every_loop(Fn fn);
  void shutdown(std::chrono::milliseconds grace) IDFORGE_EXCLUDES(control);

  net::NetShared shared;
  asio::thread_pool pool;
  std::vector<std::unique_ptr<Loop>> loops;          // after pool: jobs post to loops
  std::vector<std::unique_ptr<Listener>> listeners;  // after loops: acceptors use them
  std::atomic<size_t> next_loop{0};                  // round-robin; relaxed, any order will do
  Mutex control;                                     // listen, start, shutdown
  State state IDFORGE_GUARDED_BY(control) = State::kIdle;
  std::unique_ptr<AccessLog> access_log;  // null: off; outlives every session and job
  std::function<void()> on_refused;       // NetOptions::on_refused
  log::RepeatLimiter loop_failures;       // exceptions out of a loop's handlers
};

void NetServer::Impl::accept_next(Listener& l) {
  const size_t i = next_loop.fetch_add(1, std::memory_order_relaxed) % loops.size();
  Loop& target = *loops[i];
  // The socket is created on the target loop's io_context, so its reactor is that loop's.
  l.acceptor.async_accept(
      target.ctx, [this, &l, &target](const boost::system::error_code& ec, net::Socket socket) {
        on_accept(l, target, ec, std::move(socket));
      });
}

void NetServer::Impl::on_accept(Listener& l, Loop& target, const boost::system::error_code& ec,
                                net::Socket socket) {
  if (ec == asio::error::operation_aborted || !l.acceptor.is_open()) return;
  if (ec) {
    const int code = ec.value();
    if (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM) {
      // Out of descriptors or memory: retrying at once would spin the loop.
      l.accept_failures.fail(log::Level::kError, "net.accept_failed",
                             {{"listener", l.name}, {"error", ec.message()}});
      l.retry.expires_after(std::chrono::milliseconds(50));
      l.retry.async_wait([this, &l](const boost::system::error_code& wait_ec) {
        if (!wait_ec && l.acceptor.is_open()) accept_next(l);
      });
    } else {  // the client went away before accept (ECONNABORTED and the like)
      accept_next(l);
    }
    return;
  }
  boost::system::error_code ignored;
  if (shared.stopping.load(std::memory_order_relaxed)) {
    socket.close(ignored);
    return;
  }
  if (shared.open.fetch_add(1, std::memory_order_relaxed) >= shared.max_connections) {
    shared.open.fetch_sub(1, std::memory_order_relaxed);
    shared.rejected.fetch_add(1, std::memory_order_relaxed);
    if (on_refused) on_refused();
    l.refusals.fail(log::Level::kWarn, "net.connection_refused",
                    {{"listener", l.name}, {"max_connections", shared.max_connections}});
    // Said once, without waiting: a client that does not read gets nothing. A TLS client
    // could not read plaintext, so it only sees the close.
    if (!l.tls && !l.refusal.empty()) {
      [[maybe_unused]] const ssize_t sent = ::send(socket.native_handle(), l.refusal.data(),
                                                   l.refusal.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    socket.close(ignored);
  } else {
    l.refusals.recover(log::Level::kInfo, "net.connections_accepted", {{"listener", l.name}});
    shared.total.fetch_add(1, std::memory_order_relaxed);
    // Accepting works again: the end of a run of failures, if there was one.
    l.accept_failures.recover(log::Level::kInfo, "net.accept_recovered", {{"listener", l.name}});
    std::unique_ptr<Session> session;
    try {
      session = l.factory();
    } catch (const std::exception& e) {  // keep accepting; start() closes a sessionless one
      l.session_failures.fail(log::Level::kError, "net.session_failed",
                              {{"listener", l.name}, {"error", e.what()}});
    }
    if (session) {
      l.session_failures.recover(log::Level::kInfo, "net.session_recovered",
                                 {{"listener", l.name}});
      if (access_log) session->set_access_log(access_log.get());
    }
    std::shared_ptr<Connection> conn =
        net::make_connection(target, std::move(socket), std::move(session), l.tls.get());
    asio::post(target.ctx, [conn] { conn->start(); });
  }
  accept_next(l);
}

template <typename Fn>
void NetServer::Impl::on_every_loop(Fn fn) {
  std::latch done(static_cast<std::ptrdiff_t>(loops.size()));
  for (auto& loop : loops) {
    asio::post(loop->ctx, [&fn, &done, l = loop.get()] {
      fn(*l);
      done.count_down();
    });
  }
  done.wait();
}

void NetServer::Impl::shutdown(std::chrono::milliseconds grace) {
  MutexLock lock(control);
  if (state == State::kStopped) return;
  const Clock::time_point deadline = Clock::now() + grace;
  shared.stopping.store(true, std::memory_order_relaxed);
  boost::system::error_code ignored;
  if (state == State::kIdle) {  // no thread ever ran: nothing is open but the acceptors
    for (auto& l : listeners) l->acceptor.close(ignored);
    pool.join();
    state = State::kStopped;
    return;
  }

  // 1. No new connections; each connection finishes the requests it has received.
  on_every_loop([this](Loop& loop) {
    for (auto& l : listeners) {
      if (&l->loop != &loop) continue;
      boost::system::error_code ec;
      l->acceptor.close(ec);
      l->retry.cancel();
    }
    loop.for_each_connection([](Connection& c) { c.drain(); });
  });

  // 2. Wait for them, at most `grace`.
  {
    MutexLock wait_lock(shared.mu);
    while (shared.open.load(std::memory_order_relaxed) != 0 &&
           wait_lock.wait_until(shared.drained, deadline)) {
    }
  }

  // 3. Close what is left. A job still running keeps its connection object alive (not
  //    its socket) until it returns.
  on_every_loop([](Loop& loop) {
    loop.for_each_connection([](Connection& c) { c.abort(); });
    loop.sweeping = false;
    loop.sweep_timer.cancel();
  });

  // 4. Wait for the worker jobs. They cannot be abandoned: each writes into its
  //    connection's buffer and session. They are bounded (IdService bounds every wait on
  //    a backend), so this returns, though it may take longer than `grace`.
  pool.join();

  // 5. Stop the loops. Handlers still queued (completions of the closes above) are
  //    destroyed with the io_contexts, releasing their connections.
  for (auto& loop : loops) {
    loop->guard.reset();
    loop->ctx.stop();
  }
  for (auto& loop : loops) {
    if (loop->thread.joinable()) loop->thread.join();
  }
  state = State::kStopped;
}

NetServer::NetServer(NetOptions options) : impl_(std::make_unique<Impl>(options)) {}

NetServer::~NetServer() { shutdown(std::chrono::milliseconds(0)); }

Result<Endpoint> NetServer::listen(std::string_view endpoint, std::string name,
                                   SessionFactory factory, std::shared_ptr<TlsContext> tls,
                                   std::string refusal) {
  IDFORGE_ASSIGN_OR_RETURN(Endpoint parsed, parse_endpoint(endpoint));
  MutexLock lock(impl_->control);
  if (impl_->state == Impl::State::kStopped) {
    return Status::Unavailable(fmt::format("{}: the server is shut down", name));
  }
  const std::string& host = parsed.host;
  // localhost means the IPv4 loopback: no resolver, and the same address on every host.
  boost::system::error_code ec;
  const asio::ip::address address =
      host == "localhost" ? asio::ip::address(asio::ip::address_v4::loopback())
                          : asio::ip::make_address(host, ec);  // checked by parse_endpoint
  Loop& loop = *impl_->loops[impl_->listeners.size() % impl_->loops.size()];
  auto listener = std::make_unique<Listener>(loop, name, std::move(factory), std::move(tls),
                                             std::move(refusal));
  tcp::acceptor::endpoint_type bind_to(address, parsed.port);
  auto fail = [&](std::string_view what) {
    return Status::IoError(
        fmt::format("{}: cannot {} {}: {}", name, what, parsed.to_string(), ec.message()));
  };
  if (listener->acceptor.open(bind_to.protocol(), ec)) return fail("open a socket for");
  listener->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (listener->acceptor.bind(bind_to, ec)) return fail("bind");
  if (listener->acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    return fail("listen on");
  }
  const tcp::endpoint bound = listener->acceptor.local_endpoint(ec);
  if (ec) return fail("read the address of");
  Listener& l = *listener;
  impl_->listeners.push_back(std::move(listener));
  // Before start() the loops do not run yet; start() begins accepting.
  if (impl_->state == Impl::State::kRunning) {
    asio::post(loop.ctx, [impl = impl_.get(), &l] { impl->accept_next(l); });
  }
  return Endpoint{bound.address().to_string(), bound.port()};
}

Status NetServer::start() {
  MutexLock lock(impl_->control);
  if (impl_->state != Impl::State::kIdle) {
    return Status::InvalidArgument("NetServer::start: already started or shut down");
  }
  for (auto& l : impl_->listeners) impl_->accept_next(*l);
  for (size_t i = 0; i < impl_->loops.size(); ++i) {
    Loop* l = impl_->loops[i].get();
    l->arm_sweep();
    l->thread = std::thread([l, i, impl = impl_.get()] {
      name_this_thread("idforge-io-" + std::to_string(i));
      for (;;) {
        try {
          l->run();
          return;
        } catch (const std::exception& e) {  // a bug in a handler; keep serving the others
          impl->loop_failures.fail(log::Level::kError, "net.loop_error", {{"error", e.what()}});
        }
      }
    });
  }
  impl_->state = Impl::State::kRunning;
  return Status::Ok();
}

void NetServer::shutdown(std::chrono::milliseconds grace) { impl_->shutdown(grace); }

bool NetServer::loops_responsive(std::chrono::milliseconds within) const {
  // Shared with the posted handlers: a loop that answers after we gave up (or never,
  // when its io_context is destroyed with the handler queued) still finds it alive.
  struct Probe {
    Mutex mu;
    std::condition_variable answered;
    size_t left IDFORGE_GUARDED_BY(mu) = 0;
  };
  auto probe = std::make_shared<Probe>();
  const Clock::time_point deadline = Clock::now() + within;
  MutexLock lock(probe->mu);
  probe->left = impl_->loops.size();  // the loops are made in the constructor, never changed
  for (const auto& loop : impl_->loops) {
    asio::post(loop->ctx, [probe] {
      MutexLock answer(probe->mu);
      if (--probe->left == 0) probe->answered.notify_all();
    });
  }
  while (probe->left > 0) {
    if (!lock.wait_until(probe->answered, deadline)) return probe->left == 0;
  }
  return true;
}

NetStats NetServer::stats() const {
  const net::NetShared& s = impl_->shared;
  NetStats out;
  out.connections_open = s.open.load(std::memory_order_relaxed);
  out.connections_total = s.total.load(std::memory_order_relaxed);
  out.connections_rejected = s.rejected.load(std::memory_order_relaxed);
  out.timeouts = s.timeouts.load(std::memory_order_relaxed);
  out.oversized = s.oversized.load(std::memory_order_relaxed);
  out.tls_handshake_failures = s.tls_handshake_failures.load(std::memory_order_relaxed);
  return out;
}

}  // namespace idforge::server
