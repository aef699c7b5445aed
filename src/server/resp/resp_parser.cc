#include "server/resp/resp_parser.h"

#include <algorithm>
#include <cstring>

#include "core/quote.h"

namespace idforge::server {
namespace {

// What ends an unquoted inline argument and what separates arguments. Unlike Redis
// (which reads the line as a C string), a NUL byte is an ordinary character here.
bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// The character a backslash escape inside double quotes stands for (Redis's set; any
// other character stands for itself).
char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A header's digits beyond this cannot be within any limit; stop reading there so a
// header never waits on an unbounded line.
constexpr int kMaxHeaderDigits = 10;

}  // namespace

void RespParser::reset() {
  mode_ = Mode::kStart;
  expected_ = -1;
  bulk_len_ = -1;
  pos_ = 0;
  scanned_ = 0;
  spans_.clear();
}

RespParser::Outcome RespParser::fail(std::string message) {
  reset();
  error_ = std::move(message);
  return {Kind::kError, 0, error_};
}

RespParser::Outcome RespParser::parse(std::string_view in) {
  args_.clear();
  if (mode_ != Mode::kStart) {
    // The caller must hand back the pending command from its first byte; if what it
    // passes cannot be that, start over rather than trust stale offsets.
    const bool array = mode_ == Mode::kArray;
    if (in.empty() || (in[0] == '*') != array || in.size() < (array ? pos_ : scanned_)) {
      reset();
    }
  }
  if (mode_ == Mode::kStart) {
    if (in.empty()) return {};
    size_t consumed = 0;
    if (in[0] == '*' && parse_whole_array(in, consumed)) return {Kind::kCommand, consumed, {}};
    mode_ = in[0] == '*' ? Mode::kArray : Mode::kInline;
  }
  return mode_ == Mode::kArray ? parse_array(in) : parse_inline(in);
}

RespParser::Number RespParser::read_number(std::string_view in, size_t from, long long& value,
                                           size_t& end) {
  size_t i = from;
  bool negative = false;
  if (i < in.size() && in[i] == '-') {
    negative = true;
    ++i;
  }
  long long v = 0;
  int digits = 0;
  for (; i < in.size(); ++i) {
    const char c = in[i];
    if (c >= '0' && c <= '9') {
      if (++digits > kMaxHeaderDigits) return Number::kBad;
      v = v * 10 + (c - '0');
      continue;
    }
    if (c != '\r' || digits == 0) return Number::kBad;
    if (i + 1 >= in.size()) return Number::kNeedMore;
    if (in[i + 1] != '\n') return Number::kBad;
    value = negative ? -v : v;
    end = i + 2;
    return Number::kOk;
  }
  return Number::kNeedMore;
}

bool RespParser::parse_whole_array(std::string_view in, size_t& consumed) {
  const char* p = in.data() + 1;  // past the '*'
  const char* const end = in.data() + in.size();
  // Digits and CRLF. Five digits cover every limit; longer headers (leading zeros) are
  // left to parse_array().
  auto header = [&p, end](size_t& value) {
    const char* const first = p;
    size_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      if (p - first == 5) return false;
      v = v * 10 + static_cast<size_t>(*p++ - '0');
    }
    if (p == first || end - p < 2 || p[0] != '\r' || p[1] != '\n') return false;
    p += 2;
    value = v;
    return true;
  };
  size_t count = 0;
  if (!header(count) || count == 0 || count > kRespMaxArgs) return false;
  for (size_t i = 0; i < count; ++i) {
    size_t len = 0;
    if (p == end || *p++ != '$' || !header(len) || len > kRespMaxBulkBytes ||
        static_cast<size_t>(end - p) < len + 2 || p[len] != '\r' || p[len + 1] != '\n') {
      args_.clear();
      return false;
    }
    args_.emplace_back(p, len);
    p += len + 2;
  }
  consumed = static_cast<size_t>(p - in.data());
  return true;
}

RespParser::Outcome RespParser::parse_array(std::string_view in) {
  if (expected_ < 0) {
    long long count = 0;
    size_t end = 0;
    switch (read_number(in, 1, count, end)) {
      case Number::kNeedMore:
        return {};
      case Number::kBad:
        return fail("invalid multibulk length");
      case Number::kOk:
        break;
    }
    if (count <= 0) {  // `*0`, `*-1`: Redis skips them without an answer
      reset();
      return {Kind::kEmpty, end, {}};
    }
    if (count > static_cast<long long>(kRespMaxArgs)) return fail("invalid multibulk length");
    expected_ = count;
    pos_ = end;
    spans_.clear();
    spans_.reserve(static_cast<size_t>(count));
  }
  while (spans_.size() < static_cast<size_t>(expected_)) {
    if (bulk_len_ < 0) {
      if (pos_ >= in.size()) return {};
      if (in[pos_] != '$') {
        return fail("expected '$', got " + quote_text(in.substr(pos_, 1)));
      }
      long long len = 0;
      size_t end = 0;
      switch (read_number(in, pos_ + 1, len, end)) {
        case Number::kNeedMore:
          return {};
        case Number::kBad:
          return fail("invalid bulk length");
        case Number::kOk:
          break;
      }
      if (len < 0 || len > static_cast<long long>(kRespMaxBulkBytes)) {
        return fail("invalid bulk length");
      }
      bulk_len_ = len;
      pos_ = end;
    }
    const auto len = static_cast<size_t>(bulk_len_);
    const size_t have = in.size() - pos_;
    // Check the CRLF's bytes as soon as they arrive, so a bad one fails at once.
    if (have > len && in[pos_ + len] != '\r') return fail("expected CRLF after bulk string");
    if (have < len + 2) return {};
    if (in[pos_ + len + 1] != '\n') return fail("expected CRLF after bulk string");
    spans_.emplace_back(pos_, len);
    pos_ += len + 2;
    bulk_len_ = -1;
  }
  for (const auto& [offset, len] : spans_) args_.push_back(in.substr(offset, len));
  const size_t consumed = pos_;
  reset();
  return {Kind::kCommand, consumed, {}};
}

RespParser::Outcome RespParser::parse_inline(std::string_view in) {
  // A line may be kRespMaxInlineBytes long plus its CRLF; look no further than that.
  const size_t window = std::min(in.size(), kRespMaxInlineBytes + 2);
  const void* newline = nullptr;
  if (scanned_ < window) {
    newline = std::memchr(in.data() + scanned_, '\n', window - scanned_);
  }
  if (newline == nullptr) {
    if (window == kRespMaxInlineBytes + 2) return fail("too big inline request");
    scanned_ = window;
    return {};
  }
  const auto end = static_cast<size_t>(static_cast<const char*>(newline) - in.data());
  std::string_view line = in.substr(0, end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kRespMaxInlineBytes) return fail("too big inline request");
  if (!split_inline(line)) return fail(error_);
  reset();
  return {args_.empty() ? Kind::kEmpty : Kind::kCommand, end + 1, {}};
}

bool RespParser::split_inline(std::string_view line) {
  // A big line leaves a big buffer behind; do not keep it for the small ones after.
  if (inline_buf_.capacity() > 16 * 1024 && line.size() < 1024) std::string().swap(inline_buf_);
  inline_buf_.clear();
  inline_buf_.reserve(line.size());
  spans_.clear();

  const size_t n = line.size();
  size_t p = 0;
  while (true) {
    while (p < n && is_separator(line[p])) ++p;
    if (p == n) break;
    if (spans_.size() == kRespMaxArgs) {
      error_ = "too many arguments in inline request";
      return false;
    }
    const size_t start = inline_buf_.size();
    // As Redis does: a quote anywhere opens a quoted part, which ends the argument.
    while (p < n && !is_separator(line[p])) {
      const char c = line[p++];
      if (c == '"' || c == '\'') {
        if (!read_quoted(line, p, c)) return false;
        break;
      }
      inline_buf_ += c;
    }
    spans_.emplace_back(start, inline_buf_.size() - start);
  }
  const std::string_view buf = inline_buf_;
  for (const auto& [offset, len] : spans_) args_.push_back(buf.substr(offset, len));
  return true;
}

bool RespParser::read_quoted(std::string_view line, size_t& p, char quote) {
  const size_t n = line.size();
  while (p < n) {
    const char c = line[p];
    if (c == quote) {
      // The closing quote must be followed by a separator or the end of the line.
      if (p + 1 < n && !is_separator(line[p + 1])) break;
      ++p;
      return true;
    }
    if (c == '\\' && p + 1 < n) {
      const char next = line[p + 1];
      if (quote == '\'') {
        if (next == '\'') {  // the only escape inside single quotes
          inline_buf_ += '\'';
          p += 2;
          continue;
        }
      } else if (next == 'x' && p + 3 < n && hex_value(line[p + 2]) >= 0 &&
                 hex_value(line[p + 3]) >= 0) {
        inline_buf_ += static_cast<char>(hex_value(line[p + 2]) * 16 + hex_value(line[p + 3]));
        p += 4;
        continue;
      } else {
        inline_buf_ += unescape(next);
        p += 2;
        continue;
      }
    }
    inline_buf_ += c;
    ++p;
  }
  error_ = "unbalanced quotes in request";
  return false;
}

}  // namespace idforge::server
