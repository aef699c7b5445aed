// A minimal blocking client over POSIX sockets for the torture run: one connection,
// deadlines on every wait (a SIGSTOPped server accepts but never answers), and parsers
// for exactly the answers it asks for: HTTP/1.1 with Content-Length, and RESP
// integers, arrays of integers and errors. Not thread-safe: one per client thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idforge::torture {

using Clock = std::chrono::steady_clock;

class Connection {
 public:
  Connection() = default;
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects to 127.0.0.1:port; false with `error` set ("connection refused", ...).
  bool connect(int port, Clock::time_point deadline, std::string* error);
  void close();
  bool is_open() const { return fd_ >= 0; }

  bool send_all(std::string_view data, Clock::time_point deadline, std::string* error);
  // Appends what arrives to buffer(); false on timeout, close or error (`error` says).
  bool read_more(Clock::time_point deadline, std::string* error);

  std::string& buffer() { return buffer_; }

 private:
  int fd_ = -1;
  std::string buffer_;
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

}  // namespace idforge::torture
