// RespParser: splits a Redis client's bytes into commands. Two forms, as Redis reads
// them: a RESP array of bulk strings (`*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n`), chosen when
// the first byte is '*', and otherwise an inline command, one line split on spaces with
// Redis's quoting (`INCR "my tag"\r\n`, `PING 'it''s'`, `\n`/`\xNN` escapes inside double
// quotes, `\'` inside single quotes).
//
//   RespParser parser;
//   RespParser::Outcome r = parser.parse(in);   // in: the unconsumed bytes
//   r.kind == kCommand: parser.args() is the command; drop r.consumed bytes of `in`
//   r.kind == kEmpty:   an empty line, `*0` or `*-1`: drop r.consumed bytes, nothing to do
//   r.kind == kNeedMore: call again with the same bytes and more appended
//   r.kind == kError:   answer "-ERR Protocol error: <r.error>" and close
//
// Incremental: between calls it remembers how far into the pending command it got (as
// offsets from the front of `in`), so a command that trickles in byte by byte costs
// O(its length) in total, not O(length^2). The caller must pass the pending command's
// bytes again, from its first byte; if `in` is shorter than what was seen, the parser
// starts over. Memory is bounded by the limits below whatever the input. One parser per
// connection; not thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idforge::server {

inline constexpr size_t kRespMaxBulkBytes = 64 * 1024;    // one bulk string
inline constexpr size_t kRespMaxArgs = 1024;              // elements of one command
inline constexpr size_t kRespMaxInlineBytes = 64 * 1024;  // one inline line, without CRLF

class RespParser {
 public:
  enum class Kind { kNeedMore, kCommand, kEmpty, kError };
  struct Outcome {
    Kind kind = Kind::kNeedMore;
    size_t consumed = 0;     // kCommand, kEmpty: bytes of `in` the command took
    std::string_view error;  // kError: what was wrong ("invalid bulk length")
  };

  Outcome parse(std::string_view in);

  // The last command's arguments, the name first; never empty after kCommand. Views
  // into the `in` of that parse() call (arrays) or into the parser (inline commands):
  // valid until the next parse() or until `in` changes.
  std::span<const std::string_view> args() const { return args_; }

  // Forgets any partial command.
  void reset();

 private:
  enum class Mode { kStart, kArray, kInline };
  enum class Number { kOk, kNeedMore, kBad };

  // The common case in one pass: a whole array of bulk strings, each header short.
  // False (args_ left empty) for anything else; parse_array() then reads it from the
  // start and gives the answer, error or wait.
  bool parse_whole_array(std::string_view in, size_t& consumed);
  Outcome parse_array(std::string_view in);
  Outcome parse_inline(std::string_view in);
  // Reads the digits of a `*N\r\n` / `$N\r\n` header whose digits start at `from`.
  // kOk sets `value` and `end` (the offset past its CRLF).
  static Number read_number(std::string_view in, size_t from, long long& value, size_t& end);
  // Splits one inline line as Redis's sdssplitargs does; false on unbalanced quotes.
  bool split_inline(std::string_view line);
  // The rest of a quoted part from `p` (just past its opening `quote`) into inline_buf_,
  // up to and past the closing quote; false (error_ set) if it is not closed properly.
  bool read_quoted(std::string_view line, size_t& p, char quote);
  Outcome fail(std::string message);

  Mode mode_ = Mode::kStart;
  // kArray: elements announced; -1 until the `*N` header is read.
  long long expected_ = -1;
  // kArray: length of the bulk string whose `$N` header was read, -1 between elements.
  long long bulk_len_ = -1;
  size_t pos_ = 0;                                // kArray: offset of the next unread byte
  size_t scanned_ = 0;                            // kInline: bytes already searched for '\n'
  std::vector<std::pair<size_t, size_t>> spans_;  // offset and length of each argument
  std::string inline_buf_;                        // unquoted inline arguments
  std::vector<std::string_view> args_;
  std::string error_;
};

}  // namespace idforge::server
