// Two real `idforge serve` processes for the C++ client's tests and benchmark, as the
// Python and JavaScript clients' tests run them: each its own data dir and identity,
// sharing a worker-id registry (local:SHARED/workers: different worker ids) and a segment
// store (sqlite:SHARED/segments.db: shared counters), so together they never issue the
// same ID. On /dev/shm when it is writable (the servers fsync their marks, and a disk
// busy with builds can stall an fsync long enough for a 503).
//
// Not thread-safe: one test thread starts, stops and signals the servers.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/serve_launch.h"

namespace idforge::client_test {

class ServerProc {
 public:
  ServerProc(std::string bin, std::string root, std::string shared, std::string name);
  ~ServerProc();  // SIGKILL if running
  ServerProc(const ServerProc&) = delete;
  ServerProc& operator=(const ServerProc&) = delete;

  // Starts on the ports it had (any free ones the first time) and waits for the two
  // "listening" lines; false with the reason in *error.
  bool start(std::string* error);
  void kill9();
  // SIGSTOP, and waits until every thread of the process has stopped.
  void sigstop();
  void sigcont();
  // SIGTERM, SIGKILL after 5 s.
  void terminate();
  bool running() const { return child_.running(); }
  bool stopped() const { return stopped_; }

  std::string http() const { return "http://127.0.0.1:" + std::to_string(http_port_); }
  std::string resp() const { return "redis://127.0.0.1:" + std::to_string(resp_port_); }

 private:
  std::string bin_;
  std::string name_;
  std::string data_dir_;
  std::string shared_;
  std::string out_path_;
  std::string err_path_;
  test_support::ServeChild child_;
  bool stopped_ = false;
  uint16_t http_port_ = 0;
  uint16_t resp_port_ = 0;
};

class Cluster {
 public:
  // Creates `tags` (step 100: the two servers take many ranges from the shared store) and
  // starts A and B; null with the reason in *error.
  static std::unique_ptr<Cluster> start(const std::string& bin,
                                        const std::vector<std::string>& tags, std::string* error);
  ~Cluster();  // stops both, removes the directory

  ServerProc& a() { return *a_; }
  ServerProc& b() { return *b_; }
  // Both running and not stopped again (after a test that stopped or killed one).
  void heal();

 private:
  Cluster() = default;
  std::string root_;
  std::unique_ptr<ServerProc> a_;
  std::unique_ptr<ServerProc> b_;
};

// A TCP server on 127.0.0.1 that answers whatever it receives with the same bytes: for the
// answers a real server gives only when something is broken (a 503, a proxy's 401, ...),
// and for servers a test switches between answering and failing.
class FakeServer {
 public:
  explicit FakeServer(std::string answer);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  uint16_t port() const { return port_; }
  // Reads that got bytes, over all connections.
  int requests() const;
  // What it answers from now on; "" answers nothing (a server that never replies).
  void set_answer(std::string answer);

 private:
  struct State;
  std::shared_ptr<State> state_;
  uint16_t port_ = 0;
};

}  // namespace idforge::client_test
