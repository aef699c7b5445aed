// `idforge serve` as the end-to-end tests drive it: a server process in a fresh temporary
// data directory on free loopback ports, the two clients a user would point at it (curl
// and redis-cli), and raw TCP sockets for the bytes no well-behaved client sends
// (malformed requests, pipelining, binary garbage, stalled clients). The process itself
// is started and stopped by test_support::ServeChild (support/serve_launch.h).
//
// Not thread-safe: one test thread drives a ServeProcess and its RawClients.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "run_idforge.h"
#include "support/serve_launch.h"
#include "support/wire.h"

namespace idforge::e2e {

using std::chrono::milliseconds;

// Runs `argv[0]` (looked up in PATH) with `input` on stdin; stdout and stderr captured.
// A program still running after `timeout` is killed (exit 137, a note on stderr).
RunResult run_program(const std::vector<std::string>& argv, std::string_view input = {},
                      milliseconds timeout = milliseconds(15'000));

// A directory under /tmp, removed with everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "idforge-serve-e2e");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One HTTP answer as it came over the wire (curl -i, or a raw socket).
struct HttpAnswer {
  int status = 0;                                            // 0: no answer could be parsed
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  std::string raw;  // what was parsed, or curl's whole output and stderr when it failed

  // The first header of that (lower-case) name; empty when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // The body as JSON; a discarded value when it is not JSON.
  nlohmann::json json() const;
  // For assertion messages: the raw text, cut to a readable length.
  std::string summary() const;
};

// The complete answers at the front of `raw`, in order; a trailing incomplete one is left
// out. Bodies are framed by Content-Length, or chunked; an answer with neither takes the
// rest of `raw` (it ends at the close). `head`: answers to HEAD, which have no body.
std::vector<HttpAnswer> parse_http_answers(std::string_view raw, bool head = false);

// The complete RESP values (RESP2 and RESP3) at the front of `raw`, each as its raw text.
std::vector<std::string> parse_resp_replies(std::string_view raw);

// Is `body` a well-formed error of docs/api.md: {"error":{"code":CODE,"message":"..."}}
// with a non-empty message, served as JSON?
::testing::AssertionResult is_json_error(const HttpAnswer& answer, int status,
                                         std::string_view code);

// One line of the server's log in the text format (docs/operations.md, "Logs"):
// `TIME LEVEL EVENT KEY=VALUE...`, values unquoted and unescaped.
struct LogLine {
  std::string time;
  std::string level;
  std::string event;
  std::map<std::string, std::string, std::less<>> fields;
  std::string raw;

  bool has(std::string_view key) const { return fields.find(key) != fields.end(); }
  // The value, or "" when absent.
  std::string get(std::string_view key) const;
  // The value as a number, or -1 when absent or not a whole number.
  int64_t number(std::string_view key) const;
};
// Nullopt for a line that is not a log line (the listening lines, "idforge: ..." errors).
std::optional<LogLine> parse_log_line(std::string_view line);

struct ServeOptions {
  std::vector<std::string> flags;  // after `serve --http 127.0.0.1:0 --resp 127.0.0.1:0`
  std::vector<std::string> env;    // "NAME=value", added to the environment
  // Empty: a fresh data directory inside the server's temporary directory.
  std::string data_dir;
  // `idforge ARGS --data-dir DIR` commands run before the server starts (tag create ...).
  std::vector<std::vector<std::string>> setup;
  milliseconds start_timeout = milliseconds(15'000);
};

class ServeProcess {
 public:
  // Starts `idforge serve` and waits for the two "listening" lines. Null when it could
  // not: `*error` then says why, with the server's stderr.
  static std::unique_ptr<ServeProcess> start(const ServeOptions& options, std::string* error);
  ~ServeProcess();  // SIGKILL if still running; removes the temporary directory
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  pid_t pid() const { return child_.pid(); }
  uint16_t http_port() const { return http_port_; }
  uint16_t resp_port() const { return resp_port_; }
  const std::string& data_dir() const { return data_dir_; }
  // "http://127.0.0.1:PORT" followed by `path` ("/v1/snowflake").
  std::string url(std::string_view path) const;

  // `curl -sS --max-time 10 ARGS...`.
  RunResult curl(const std::vector<std::string>& args) const;
  // `curl -sS -i --max-time 10 EXTRA... URL(path)`, parsed. Status 0 when curl got no
  // answer (then `raw` holds curl's exit status and stderr).
  HttpAnswer http(std::string_view path, const std::vector<std::string>& extra = {}) const;
  // The same with HEAD (`curl -I`).
  HttpAnswer head(std::string_view path) const;
  // `redis-cli -h 127.0.0.1 -p PORT --no-raw ARGS...` with `input` on stdin: the
  // formatted output ("(integer) 5", "(error) ERR ...").
  RunResult redis(const std::vector<std::string>& args, std::string_view input = {}) const;

  // What the server wrote to stderr so far.
  std::string stderr_text() const;
  // Waits until stderr contains `needle`; false after `timeout`.
  bool wait_for_stderr(std::string_view needle, milliseconds timeout) const;
  // The log lines on stderr so far, parsed; only those of `event` when it is given.
  std::vector<LogLine> log_lines(std::string_view event = {}) const;
  // Waits until a log line of `event` is on stderr; false after `timeout`.
  bool wait_for_log(std::string_view event, milliseconds timeout) const;

  void send_signal(int signal) const;
  // Waits for the process to end: its exit status, 128 + a signal that ended it, or -1
  // when it still runs after `timeout`.
  int wait(milliseconds timeout);
  // SIGTERM (or `signal`) and wait; SIGKILL when it is still running after `timeout`
  // (then -1).
  int stop(int signal = SIGTERM, milliseconds timeout = milliseconds(10'000));
  bool running() const { return child_.running(); }

 private:
  ServeProcess() = default;

  std::unique_ptr<TempDir> dir_;
  std::string data_dir_;
  test_support::ServeChild child_;  // stdout and stderr in files of dir_
  uint16_t http_port_ = 0;
  uint16_t resp_port_ = 0;
};

// A plain TCP connection to 127.0.0.1:port, for bytes curl and redis-cli would not send.
class RawClient {
 public:
  // `receive_buffer` > 0 shrinks SO_RCVBUF before connecting (a client slow to read).
  explicit RawClient(uint16_t port, int receive_buffer = 0);

  bool connected() const { return conn_.is_open(); }
  // Sends all of `bytes`; false when the peer closed or reset the connection.
  bool send(std::string_view bytes);
  // Reads until `done(received())`, the peer closes, or `timeout`; returns done(...).
  bool read_until(const std::function<bool(std::string_view)>& done, milliseconds timeout);
  // Reads until the peer closes (EOF or reset); false when still open after `timeout`.
  bool read_until_closed(milliseconds timeout);
  // Reads whatever arrives within `duration`.
  void read_for(milliseconds duration);
  // Everything received so far.
  const std::string& received() const { return conn_.buffer(); }
  bool closed() const { return conn_.peer_closed(); }
  bool reset() const { return conn_.peer_reset(); }

 private:
  // One wait for bytes; false on timeout.
  bool read_some(milliseconds timeout);

  test_support::Connection conn_;  // support/wire.h
};

// Whether a new TCP connection to 127.0.0.1:port is accepted by the kernel.
bool can_connect(uint16_t port);

// One `idforge serve` for a whole gtest suite: `Suite` derives from
// SharedServeSuite<Suite> and says how to start it in `static ServeOptions
// suite_options()`. Each test fails at once, with the reason, if it did not start; at the
// end the server must stop with SIGTERM and exit 0.
template <typename Suite>
class SharedServeSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    server_ = ServeProcess::start(Suite::suite_options(), &error).release();
    start_error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->stop(), 0) << server_->stderr_text();
    }
    delete server_;
    delete start_error_;
    server_ = nullptr;
    start_error_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr) << *start_error_; }

  static inline ServeProcess* server_ = nullptr;
  static inline std::string* start_error_ = nullptr;
};

}  // namespace idforge::e2e
