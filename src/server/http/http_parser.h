// HTTP/1.1 request parsing for the HTTP front end: the request at the front of a
// connection's input, percent-decoding, path segments and query parameters. Pure: no
// I/O, no clock, no global state; views point into the caller's bytes.
//
//   HttpRequestParser parser(limits);
//   HttpRequest request;
//   ParseResult r = parser.parse(in, &request);
//   kComplete: answer `request`, drop r.consumed bytes, parse the rest
//   kNeedMore: drop r.consumed bytes (blank lines before a request), read more
//   kError:    answer r.status and close
//
// What is accepted (RFC 9112, strictly): a request line `METHOD SP target SP HTTP/1.x`
// (origin-form, absolute-form or `*`), lines ending in CRLF or a bare LF, a CR anywhere
// else is an error; header names are tokens with the colon right after them; obs-fold
// lines are refused; HTTP/1.1 needs exactly one Host. Bodies come with Content-Length
// only: any Transfer-Encoding (chunked included) is answered 501 Not Implemented.
//
// A parser is used by one connection at a time (not thread-safe); the free functions
// are pure and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idforge::server {

struct HttpLimits {
  size_t max_request_line = 8192;   // bytes, without the line end; beyond: 414
  size_t max_header_bytes = 32768;  // header lines after the request line; beyond: 431
  size_t max_headers = 100;         // beyond: 431
  size_t max_body = 65536;          // Content-Length; beyond: 413
};

enum class HttpMethod { kGet, kHead, kPost, kPut, kDelete, kOptions, kPatch, kOther };

struct HttpRequest {
  HttpMethod method = HttpMethod::kOther;
  std::string_view method_text;
  std::string_view target;  // as sent
  std::string_view path;    // of the target, still percent-encoded ("*" for `*`)
  std::string_view query;   // after '?', still encoded; empty without one
  int version_minor = 1;    // HTTP/1.<minor>: 0 or 1
  // Whether the connection stays open after the answer: HTTP/1.1 unless
  // `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
  bool keep_alive = true;
  std::string_view host;           // empty when absent (allowed for HTTP/1.0 only)
  std::string_view authorization;  // the first Authorization header, trimmed
  uint64_t content_length = 0;
  std::string_view body;  // content_length bytes
};

struct ParseResult {
  enum class Kind { kNeedMore, kComplete, kError };
  Kind kind = Kind::kNeedMore;
  // kComplete: the request's bytes (blank lines before it included). kNeedMore: blank
  // lines before the next request, which the caller drops (the parser's progress is
  // kept relative to the bytes after them). kError: 0.
  size_t consumed = 0;
  int status = 0;           // kError: the HTTP status to answer
  std::string_view reason;  // kError: a short fixed text for the error message
};

// Finds the request at the front of a connection's input. The caller passes the same
// unconsumed bytes again, with more appended, after kNeedMore; progress is remembered
// so a request that arrives a byte at a time costs linear time, not quadratic. Any
// bytes are safe to pass, also ones that break that rule (progress is then only a hint).
class HttpRequestParser {
 public:
  explicit HttpRequestParser(HttpLimits limits = {}) : limits_(limits) {}

  // On kComplete, `request` holds views into `in`; the parser is ready for the next
  // request (at in.substr(consumed)). After kError, the connection is done.
  ParseResult parse(std::string_view in, HttpRequest* request);
  // Forgets the progress on a partial request (a new connection).
  void reset();

  const HttpLimits& limits() const { return limits_; }

 private:
  // Validates the head at the front of `head` (request line, headers and the blank line
  // that ends them) into `request` and sets `head_size`; 0 or the error status with
  // `reason`. Authoritative: the incremental scan in parse() only watches the limits.
  int parse_head(std::string_view head, HttpRequest* request, std::string_view* reason,
                 size_t* head_size) const;

  HttpLimits limits_;
  // Progress on the request after the leading blank lines: bytes up to `scanned_` are
  // complete lines (`lines_` of them, the request line first) with no blank line among
  // them. Once the head is complete, `head_size_` is its size and the parser waits for
  // `body_size_` more bytes.
  size_t scanned_ = 0;
  size_t lines_ = 0;
  size_t request_line_end_ = 0;  // where the header lines start, once lines_ > 0
  size_t head_size_ = 0;
  size_t body_size_ = 0;
};

// Decodes %XX escapes of `text` onto `out` (and '+' as a space when `plus_is_space`, as
// in query strings). False for a '%' not followed by two hex digits; `out` then holds a
// partial result.
bool percent_decode(std::string_view text, bool plus_is_space, std::string* out);

// The '/'-separated segments of a path, each percent-decoded ("%2F" stays inside its
// segment). "/v1/segment/order" has 3 segments; "/" has one empty segment.
class PathSegments {
 public:
  static constexpr size_t kMaxSegments = 8;

  // False for a malformed escape. A path with more than kMaxSegments segments parses
  // but reports too_many(), and matches no route.
  bool parse(std::string_view path);
  size_t size() const { return size_; }
  bool too_many() const { return too_many_; }
  std::string_view operator[](size_t i) const { return segments_[i]; }

 private:
  std::array<std::string_view, kMaxSegments> segments_{};
  size_t size_ = 0;
  bool too_many_ = false;
  std::string decoded_;  // backing store of decoded segments; reserved, never reallocated
};

// The parameters of a query string in order, keys and values percent-decoded with '+' as
// a space. `a=1&b=&c&&d=x=y` holds a=1, b="", c="", d="x=y" (empty items are skipped).
class QueryParams {
 public:
  // False for a malformed escape.
  bool parse(std::string_view query);
  const std::vector<std::pair<std::string_view, std::string_view>>& items() const { return items_; }
  // The first value of `key`, or nullopt.
  std::optional<std::string_view> get(std::string_view key) const;
  size_t count(std::string_view key) const;

 private:
  std::vector<std::pair<std::string_view, std::string_view>> items_;
  std::string decoded_;  // backing store of decoded text; reserved, never reallocated
};

}  // namespace idforge::server
