// HttpAnswerParser: reads one HTTP/1.1 answer to a POST from bytes fed as they arrive,
// for EtcdConnection (etcd_connection.h). Pure: no I/O, no clock.
//
// What etcd's JSON gateway (Go's net/http) sends: a status line, headers, and a body by
// Content-Length, or chunked (Go chunks an answer it did not buffer whole: large ones),
// or up to the close. Header names in any letter case; chunk extensions and trailers
// are read and dropped; 1xx answers are skipped; 204 and 304 carry no body. Anything
// else that is not HTTP/1.x (another transfer coding, a malformed line, a head over
// kMaxHeadBytes, a body over the limit) is an error with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace idforge::coord {

struct HttpAnswer {
  int status = 0;
  std::string body;
  // False when the server closes the connection after this answer: it said so
  // (Connection: close, or HTTP/1.0 without keep-alive) or the body ran to the close.
  bool keep_alive = true;
};

class HttpAnswerParser {
 public:
  enum class Step { kMore, kDone, kBad };

  // The status line and headers together, and so the trailers.
  static constexpr size_t kMaxHeadBytes = 64 * 1024;

  explicit HttpAnswerParser(uint64_t body_limit) : body_limit_(body_limit) {}

  // Takes the next bytes of the connection. kDone once the answer is whole; bytes past
  // its end are not read (extra() counts them). kBad: error() says why. After kDone or
  // kBad, feed() takes nothing more and returns the same.
  Step feed(std::string_view bytes);
  // The server closed the connection: kDone when the body runs to the close, else kBad.
  Step close();

  // Whether any byte of the answer arrived.
  bool got_some() const { return got_some_; }
  // Bytes fed after the answer's end (a server that sent more than one answer).
  size_t extra() const { return extra_; }
  const std::string& error() const { return error_; }
  // The answer, whole after kDone.
  HttpAnswer& answer() { return answer_; }

 private:
  enum class State {
    kStatusLine,
    kHeaders,
    kBody,         // body_left_ bytes to go
    kBodyToClose,  // everything until the close
    kChunkSize,
    kChunkData,  // body_left_ bytes of this chunk to go
    kChunkEnd,   // the CRLF after a chunk's data
    kTrailers,
    kDone,
    kBad,
  };

  // Moves bytes of `in` into line_ up to a line's end; true with the line (without its
  // CRLF or LF) in line_ once one is whole.
  bool take_line(std::string_view* in);
  bool on_status_line(std::string_view line);
  bool on_header(std::string_view line);
  // After the empty line: how the body comes.
  bool on_head_end();
  bool on_chunk_size(std::string_view line);
  // Appends up to `n` bytes of `in` to the body; how many it took.
  size_t take_body(std::string_view* in, uint64_t n);
  // Stops at the error `why`; false, for the callers' returns.
  bool bad(std::string why);

  const uint64_t body_limit_;
  State state_ = State::kStatusLine;
  HttpAnswer answer_;
  std::string line_;
  bool line_whole_ = false;  // line_ is a whole line, read already
  size_t head_bytes_ = 0;
  uint64_t body_left_ = 0;
  bool http_10_ = false;
  bool chunked_ = false;
  bool has_length_ = false;
  uint64_t length_ = 0;
  bool close_said_ = false;
  bool keep_alive_said_ = false;
  bool got_some_ = false;
  size_t extra_ = 0;
  std::string error_;
};

}  // namespace idforge::coord
