// Session: what a protocol (HTTP, RESP) does with one connection's bytes. The network
// runtime (net_server.h) owns sockets, timers and threads; a session owns parsing and
// answering, and never touches a socket. That split lets the fuzzers and unit tests
// drive a session with plain strings.
//
//   runtime: read bytes -> in
//   loop:    Step s = session.feed(in, out)      // may answer several pipelined requests
//            erase s.consumed bytes from in
//            s.next == kBlocking: run s.blocking(out) on the worker pool, then loop again
//            s.next == kNeedMore: write out, read more
//            s.next == kFlush:    write out, then loop again without reading
//            s.next == kClose:    write out, then close
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace idforge::server {

class AccessLog;  // server/net/access_log.h

class Session {
 public:
  enum class Next {
    kNeedMore,  // answered every complete request in `in`; read more bytes
    kBlocking,  // the next request must wait on a backend: run `blocking` off the I/O thread
    kClose,     // write `out`, then close the connection (QUIT, Connection: close, bad input)
    // Write `out`, then call feed() again on the rest, even when no input is left, after
    // the loop has served its other connections. For `out` that reached kFlushBytes, and
    // for a large batch made in slices (limits.batch_slice). Bounds the
    // memory one connection's pipelined requests can make the server hold: without it,
    // 1 MiB of pipelined "ID.UUID7 10000" would be answered as gigabytes at once.
    kFlush,
  };
  static constexpr size_t kFlushBytes = 256 * 1024;
  struct Step {
    size_t consumed = 0;  // bytes of `in` fully handled (their answers are in `out`)
    Next next = Next::kNeedMore;
    // Set with kBlocking: answers one request (whose bytes are counted in `consumed`)
    // by appending to `out`. Runs on a worker thread; must not touch the session
    // concurrently with feed() (the runtime never calls feed() while it runs).
    std::function<void(std::string& out)> blocking;
  };

  virtual ~Session() = default;
  // Handles as many complete requests at the front of `in` as it can without blocking,
  // appending their answers to `out` in order. Never throws, never blocks.
  virtual Step feed(std::string_view in, std::string& out) = 0;
  // The runtime is closing the connection (idle, request too slow, shutdown); a session
  // may append a last answer (HTTP: 408) to `out`.
  virtual void on_timeout(std::string& out) { (void)out; }

  // The sampled access log (NetOptions::access_log_sample), set by the runtime before
  // the first feed() when it is on; the session asks it about every request. It
  // outlives the session and its jobs.
  void set_access_log(const AccessLog* log) { access_log_ = log; }

 protected:
  const AccessLog* access_log_ = nullptr;  // null: no access log
};

using SessionFactory = std::function<std::unique_ptr<Session>()>;

}  // namespace idforge::server
