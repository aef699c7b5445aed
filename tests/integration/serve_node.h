// A real `idforge serve` process on free loopback ports, and a small blocking HTTP client
// to talk to it: what the cluster tests (etcd, ZooKeeper) start and poll. The process
// is started and stopped by test_support::ServeChild (support/serve_launch.h).
//
// Not thread-safe, except HttpClient, of which each thread has its own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "idforge/status.h"
#include "support/serve_launch.h"
#include "support/wire.h"

namespace idforge::integration {

// One answer of an HTTP GET: status, body, and whether the server closes the connection.
using HttpReply = test_support::HttpReply;

// GETs over one keep-alive connection to host:port (127.0.0.1 unless given; an IPv4
// address), opened again after any error. Every wait is bounded (a server that hangs
// accepts but never answers). The socket belongs to the network namespace of the thread
// that calls get() while none is open.
class HttpClient {
 public:
  explicit HttpClient(int port, std::string host = "127.0.0.1")
      : port_(port), host_(std::move(host)) {}

  // IoError for a connection that failed or a reply that did not come in time.
  Result<HttpReply> get(const std::string& target, std::chrono::milliseconds timeout);

 private:
  int port_;
  std::string host_;
  test_support::Connection conn_;  // support/wire.h
};

// A running `idforge serve` on free ports of `host` (127.0.0.1 unless given), with `args`
// after the ports and --data-dir; its stdout and stderr in files of `dir`. The
// destructor ends it (SIGKILL).
class ServeNode {
 public:
  // launch() and then await(20 s).
  static Result<std::unique_ptr<ServeNode>> start(const std::string& dir,
                                                  const std::vector<std::string>& args,
                                                  const std::vector<std::string>& prefix = {},
                                                  const std::string& host = "127.0.0.1");
  // Spawns it without waiting; await() waits until it prints its ports. A node whose
  // lease has a start delay listens only after it, so tests launch several at once.
  // `prefix` runs it under another command: {"/usr/bin/prlimit", "--nofile=300"}, or
  // {"/usr/sbin/ip", "netns", "exec", NAME} with `host` an address of that namespace.
  static Result<std::unique_ptr<ServeNode>> launch(const std::string& dir,
                                                   const std::vector<std::string>& args,
                                                   const std::vector<std::string>& prefix = {},
                                                   const std::string& host = "127.0.0.1");
  Status await(std::chrono::milliseconds limit);
  // After await(): waits until /readyz?part=`part` answers 200 ("snowflake": a lease with
  // a start delay lets the server listen before it issues Snowflake IDs). Asks from the
  // calling thread's network namespace.
  Status await_ready(const std::string& part, std::chrono::milliseconds limit);
  ~ServeNode();
  ServeNode(const ServeNode&) = delete;
  ServeNode& operator=(const ServeNode&) = delete;

  const std::string& host() const { return host_; }
  int http_port() const { return http_port_; }
  int resp_port() const { return resp_port_; }
  // SIGTERM and wait for a clean exit: Ok, or how it ended and its stderr's end.
  Status stop();
  std::string stderr_tail(int lines = 20) const;
  std::string stderr_text() const;

 private:
  ServeNode() = default;
  test_support::ServeChild child_;  // stdout and stderr in DIR/serve.out and DIR/serve.err
  std::string host_;
  int http_port_ = 0;
  int resp_port_ = 0;
};

}  // namespace idforge::integration
