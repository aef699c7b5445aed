// NetServer: the event-loop runtime under both protocols (docs/architecture.md, "Threads"). One
// io_context per I/O thread (default: one per core), connections spread round-robin
// over them; a worker pool runs the requests a Session marks kBlocking, so a slow
// store never stalls an I/O thread. Bounded: bytes pending per connection, idle time,
// time to finish a started request, connections.
//
//   NetServer net(options);
//   Result<Endpoint> http = net.listen("127.0.0.1:8080", "http", make_http_session);
//   net.start();            // returns at once; threads run the loops
//   ...
//   net.shutdown(grace);    // stop accepting, finish in-flight requests, close
//
// Thread safety: listen(), start() and shutdown() are called from one controlling thread,
// never from an I/O loop or a kBlocking job (shutdown joins those threads). stats() may
// be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "idforge/status.h"
#include "server/net/session.h"
#include "server/net/tls_context.h"

namespace idforge::server {

struct NetOptions {
  int io_threads = 0;       // 0: one per core
  int worker_threads = 32;  // run kBlocking requests (store round trips, admin)
  // How long an idle loop keeps polling (yielding its core to anyone runnable) before it
  // sleeps, while work keeps coming back within that time. 0: sleep at once.
  int64_t io_spin_us = 50;
  // Timeouts of 0 or less mean no limit. They are checked a few times per the shorter one,
  // so a connection closes up to an eighth of it (at most 250 ms) late.
  int64_t idle_timeout_ms = 60'000;     // no bytes from a connection with nothing pending
  int64_t request_timeout_ms = 10'000;  // a request started but not complete after this;
                                        // also bounds one write to a client not reading
  size_t max_pending_bytes = 1 << 20;   // unconsumed input per connection; beyond: close
  size_t max_connections = 10'000;      // beyond: accept, answer the refusal, close
  // Called for each connection refused over max_connections (a metric).
  std::function<void()> on_refused;
  // The access log (access_log.h): one request in N written as an `access` event; 0: off.
  uint64_t access_log_sample = 0;
};

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const;  // "127.0.0.1:8080", "[::1]:8080"
};

// "HOST:PORT" with an IPv4 address, "[IPv6]:PORT" or "localhost:PORT"; port 0 picks a
// free one. InvalidArgument names the text.
Result<Endpoint> parse_endpoint(std::string_view text);

struct NetStats {
  uint64_t connections_open = 0;
  uint64_t connections_total = 0;       // accepted and served (rejected ones not included)
  uint64_t connections_rejected = 0;    // over max_connections
  uint64_t timeouts = 0;                // closed for idle or slow requests
  uint64_t oversized = 0;               // closed for max_pending_bytes
  uint64_t tls_handshake_failures = 0;  // TLS handshakes that failed or timed out
};

class NetServer {
 public:
  explicit NetServer(NetOptions options);
  ~NetServer();  // shutdown(0) if still running
  NetServer(const NetServer&) = delete;
  NetServer& operator=(const NetServer&) = delete;

  // Binds and listens (before start()). Returns the bound endpoint (the real port when
  // 0 was asked). `name` labels the listener in logs and stats ("http", "resp").
  // "localhost" binds 127.0.0.1. IoError when the address cannot be bound.
  // With `tls` its connections speak TLS (the session sees the plaintext); null: plain TCP.
  // `refusal` is written to a plain connection refused over max_connections before it is
  // closed ("-ERR max number of clients reached" as Redis says it; an HTTP 503).
  Result<Endpoint> listen(std::string_view endpoint, std::string name, SessionFactory factory,
                          std::shared_ptr<TlsContext> tls = nullptr, std::string refusal = {});

  // Starts the I/O and worker threads; returns at once.
  Status start();
  // Stops accepting, lets in-flight requests finish and their answers be written for at
  // most `grace`, closes every connection and joins the threads. Idempotent.
  // A kBlocking job still running at `grace` is waited for (it writes into its
  // connection's buffer) but its answer is dropped: shutdown can outlast `grace` by the
  // longest such job, which IdService bounds.
  void shutdown(std::chrono::milliseconds grace);

  NetStats stats() const;

  // Whether every event loop runs a no-op posted to it within `within`: a loop stuck in
  // a handler (a bug, or a backend call that should have been kBlocking) fails it. For
  // the systemd watchdog (systemd_notify.h), which then stops pinging so systemd
  // restarts the process. Between start() and shutdown() only (loops that do not run
  // answer nothing); any thread; waits at most `within`.
  bool loops_responsive(std::chrono::milliseconds within) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idforge::server
