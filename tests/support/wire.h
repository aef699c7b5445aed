// The tests' one client of the server's wire: a TCP connection whose every wait has a
// deadline (a SIGSTOPped server accepts but never answers), and parsers for exactly the
// answers the tests ask for: HTTP/1.1 with Content-Length, and RESP integers, arrays of
// integers and errors. The torture run's clients, the integration tests' HttpClient
// (integration/serve_node.h) and the e2e tests' RawClient (e2e/serve_process.h) are
// built on it. Not thread-safe: one Connection per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idforge::test_support {

using Clock = std::chrono::steady_clock;

struct ConnectOptions {
  std::string host = "127.0.0.1";  // an IPv4 address
  int receive_buffer = 0;          // > 0: SO_RCVBUF before connecting (a client slow to read)
};

class Connection {
 public:
  Connection() = default;
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects to host:port; false with `error` set ("connection refused", ...).
  bool connect(int port, Clock::time_point deadline, std::string* error,
               const ConnectOptions& options = {});
  void close();
  bool is_open() const { return fd_ >= 0; }

  bool send_all(std::string_view data, Clock::time_point deadline, std::string* error);
  // Appends what arrives to buffer(); false on timeout, close or error (`error` says;
  // peer_closed() tells a close or reset from a timeout).
  bool read_more(Clock::time_point deadline, std::string* error);

  std::string& buffer() { return buffer_; }
  const std::string& buffer() const { return buffer_; }
  // The peer closed the connection (EOF) or reset it; the buffer keeps what came before.
  bool peer_closed() const { return peer_closed_; }
  bool peer_reset() const { return peer_reset_; }

 private:
  int fd_ = -1;
  std::string buffer_;
  bool peer_closed_ = false;
  bool peer_reset_ = false;
};

enum class ParseResult { kIncomplete, kDone, kBad };

struct HttpReply {
  int status = 0;
  std::string body;
  bool close = false;  // the server said Connection: close
};
// Takes one answer off the front of `buffer`.
ParseResult parse_http_reply(std::string& buffer, HttpReply* reply);

struct RespReply {
  bool is_error = false;
  std::string error;           // without the leading '-'
  std::vector<uint64_t> ints;  // ':' alone or the elements of an array of ':'
};
ParseResult parse_resp_reply(std::string& buffer, RespReply* reply);

// Decimal IDs one per line (`format=text`); false if a line is not a number.
bool parse_id_lines(std::string_view body, std::vector<uint64_t>* out);

// A RESP command as an array of bulk strings.
std::string resp_command(const std::vector<std::string>& args);

}  // namespace idforge::test_support
