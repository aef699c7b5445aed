// The line protocol the network runtime's tests (net_server_test.cc, net_tls_test.cc)
// run as their session, so they test the runtime and not a real protocol:
//   PING -> PONG, ECHO x -> x, BIG n -> n 'x's, SLOW -> DONE (a kBlocking job of
//   Hooks::job_ms), THROW -> a kBlocking job that throws, QUIT -> BYE and close;
//   anything else -> ERR; on_timeout answers TIMEOUT.
#pragma once

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "server/net/session.h"

namespace idforge::server {

struct Hooks {
  std::atomic<int> jobs_started{0};
  std::atomic<int> jobs_done{0};
  std::atomic<int64_t> job_ms{50};
  std::atomic<int> flushes{0};  // feeds that stopped early with kFlush
};

class LineSession : public Session {
 public:
  explicit LineSession(Hooks& hooks) : hooks_(hooks) {}

  Step feed(std::string_view in, std::string& out) override {
    Step step;
    for (;;) {
      const size_t nl = in.find('\n', step.consumed);
      if (nl == std::string_view::npos) return step;
      const std::string_view line = in.substr(step.consumed, nl - step.consumed);
      step.consumed = nl + 1;
      if (line == "PING") {
        out += "PONG\n";
      } else if (line.starts_with("ECHO ")) {
        out.append(line.substr(5));
        out += '\n';
      } else if (line.starts_with("BIG ")) {
        size_t n = 0;
        std::from_chars(line.data() + 4, line.data() + line.size(), n);
        out.append(n, 'x');
        out += '\n';
      } else if (line == "SLOW") {
        step.next = Next::kBlocking;
        step.blocking = [hooks = &hooks_](std::string& o) {
          hooks->jobs_started.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(hooks->job_ms.load()));
          o += "DONE\n";
          hooks->jobs_done.fetch_add(1);
        };
        return step;
      } else if (line == "THROW") {
        step.next = Next::kBlocking;
        step.blocking = [](std::string&) { throw std::runtime_error("backend exploded"); };
        return step;
      } else if (line == "QUIT") {
        out += "BYE\n";
        step.next = Next::kClose;
        return step;
      } else {
        out += "ERR\n";
      }
      if (out.size() >= kFlushBytes && step.consumed < in.size()) {
        hooks_.flushes.fetch_add(1);
        step.next = Next::kFlush;
        return step;
      }
    }
  }
  void on_timeout(std::string& out) override { out += "TIMEOUT\n"; }

 private:
  Hooks& hooks_;
};

}  // namespace idforge::server
