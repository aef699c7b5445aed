#include "coord/etcd/http_answer.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/text.h"

namespace idforge::coord {
namespace {

// RFC 9110 tchar: the bytes of a header name.
bool is_token_char(char c) {
  return text::is_alnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A line or value for an error message: short, and printable.
std::string shown(std::string_view text) {
  std::string out(text.substr(0, 80));
  for (char& c : out) {
    if (c < 0x20 || c == 0x7f) c = '?';
  }
  return text.size() > 80 ? out + "..." : out;
}

int hex_value(char c) {
  if (text::is_digit(c)) return c - '0';
  const char lower = text::ascii_lower(c);
  return lower >= 'a' && lower <= 'f' ? lower - 'a' + 10 : -1;
}

// A Content-Length is trusted this far before the bytes arrive.
constexpr uint64_t kMaxReserve = 4 << 20;

// Calls `each` with every element of a comma-separated header value, trimmed.
template <typename Each>
void for_each_element(std::string_view value, Each each) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view element = text::trim(value.substr(0, comma), " \t");
    if (!element.empty()) each(element);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

HttpAnswerParser::Step HttpAnswerParser::feed(std::string_view bytes) {
  if (!bytes.empty() && state_ != State::kDone && state_ != State::kBad) got_some_ = true;
  while (!bytes.empty()) {
    switch (state_) {
      case State::kStatusLine:
        if (!take_line(&bytes)) break;
        on_status_line(line_);
        break;
      case State::kHeaders:
        if (!take_line(&bytes)) break;
        if (line_.empty()) {
          on_head_end();
        } else {
          on_header(line_);
        }
        break;
      case State::kBody:
        body_left_ -= take_body(&bytes, body_left_);
        if (body_left_ == 0) state_ = State::kDone;
        break;
      case State::kBodyToClose:
        take_body(&bytes, bytes.size());
        break;
      case State::kChunkSize:
        if (!take_line(&bytes)) break;
        on_chunk_size(line_);
        break;
      case State::kChunkData:
        body_left_ -= take_body(&bytes, body_left_);
        if (body_left_ == 0) state_ = State::kChunkEnd;
        break;
      case State::kChunkEnd:
        if (!take_line(&bytes)) break;
        if (line_.empty()) {
          state_ = State::kChunkSize;
        } else {
          bad(fmt::format("chunk data runs on: '{}'", shown(line_)));
        }
        break;
      case State::kTrailers:
        // Trailer fields say nothing etcd's client needs: read up to the empty line.
        if (!take_line(&bytes)) break;
        if (line_.empty()) state_ = State::kDone;
        break;
      case State::kDone:
        extra_ += bytes.size();
        return Step::kDone;
      case State::kBad:
        return Step::kBad;
    }
  }
  if (state_ == State::kBad) return Step::kBad;
  return state_ == State::kDone ? Step::kDone : Step::kMore;
}

HttpAnswerParser::Step HttpAnswerParser::close() {
  switch (state_) {
    case State::kDone:
      return Step::kDone;
    case State::kBad:
      return Step::kBad;
    case State::kBodyToClose:
      state_ = State::kDone;
      return Step::kDone;
    default:
      bad(got_some_ ? "the connection closed in the middle of the answer"
                    : "the connection closed before any answer");
      return Step::kBad;
  }
}

bool HttpAnswerParser::take_line(std::string_view* in) {
  if (line_whole_) line_.clear();  // the last line, read by the caller
  line_whole_ = false;
  const size_t end = in->find('\n');
  const size_t n = end == std::string_view::npos ? in->size() : end + 1;
  const bool in_head =
      state_ == State::kStatusLine || state_ == State::kHeaders || state_ == State::kTrailers;
  if (in_head) head_bytes_ += n;
  if ((in_head && head_bytes_ > kMaxHeadBytes) || line_.size() + n > kMaxHeadBytes) {
    return bad(fmt::format("a head or line over {} bytes", kMaxHeadBytes));
  }
  line_.append(in->substr(0, n));
  in->remove_prefix(n);
  if (end == std::string_view::npos) return false;
  line_.pop_back();
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  line_whole_ = true;
  return true;
}

bool HttpAnswerParser::on_status_line(std::string_view line) {
  // "HTTP/1.1 200 OK", the reason phrase optional.
  const bool ok = line.size() >= 12 && line.starts_with("HTTP/1.") &&
                  (line[7] == '0' || line[7] == '1') && line[8] == ' ' &&
                  std::all_of(line.begin() + 9, line.begin() + 12, text::is_digit) &&
                  (line.size() == 12 || line[12] == ' ');
  if (!ok) return bad(fmt::format("not an HTTP/1.x status line: '{}'", shown(line)));
  http_10_ = line[7] == '0';
  answer_.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (answer_.status < 100) return bad(fmt::format("status {}", answer_.status));
  state_ = State::kHeaders;
  return true;
}

bool HttpAnswerParser::on_header(std::string_view line) {
  const size_t colon = line.find(':');
  const std::string_view name = line.substr(0, colon);
  if (colon == std::string_view::npos || name.empty() ||
      !std::all_of(name.begin(), name.end(), is_token_char)) {
    return bad(fmt::format("a malformed header line: '{}'", shown(line)));
  }
  const std::string_view value = text::trim(line.substr(colon + 1), " \t");
  if (text::equals_ignore_case(name, "content-length")) {
    uint64_t n = 0;
    if (!text::parse_int(value, &n) || (has_length_ && n != length_)) {
      return bad(fmt::format("Content-Length '{}'", shown(value)));
    }
    has_length_ = true;
    length_ = n;
  } else if (text::equals_ignore_case(name, "transfer-encoding")) {
    bool good = true;
    for_each_element(value, [&](std::string_view coding) {
      good = good && text::equals_ignore_case(coding, "chunked") && !chunked_;
      chunked_ = true;
    });
    if (!good) {
      return bad(fmt::format("Transfer-Encoding '{}' (chunked alone is read)", shown(value)));
    }
  } else if (text::equals_ignore_case(name, "connection")) {
    for_each_element(value, [&](std::string_view option) {
      if (text::equals_ignore_case(option, "close")) close_said_ = true;
      if (text::equals_ignore_case(option, "keep-alive")) keep_alive_said_ = true;
    });
  }
  return true;
}

bool HttpAnswerParser::on_head_end() {
  const int status = answer_.status;
  if (status < 200) {
    // 100 Continue and the like: the answer proper follows, with headers of its own.
    http_10_ = chunked_ = has_length_ = close_said_ = keep_alive_said_ = false;
    length_ = 0;
    state_ = State::kStatusLine;
    return true;
  }
  answer_.keep_alive = !close_said_ && (!http_10_ || keep_alive_said_);
  if (status == 204 || status == 304) {
    state_ = State::kDone;
  } else if (chunked_) {
    // With Content-Length as well, someone in between may have mixed the two up: the
    // connection is not used again (RFC 9112, 6.3).
    if (has_length_) answer_.keep_alive = false;
    state_ = State::kChunkSize;
  } else if (has_length_) {
    if (length_ > body_limit_) {
      return bad(fmt::format("a body of {} bytes, over the limit of {}", length_, body_limit_));
    }
    answer_.body.reserve(std::min<uint64_t>(length_, kMaxReserve));
    body_left_ = length_;
    state_ = length_ == 0 ? State::kDone : State::kBody;
  } else {
    answer_.keep_alive = false;
    state_ = State::kBodyToClose;
  }
  return true;
}

bool HttpAnswerParser::on_chunk_size(std::string_view line) {
  // "1a2b", then maybe ";name=value" extensions, which say nothing to us.
  uint64_t size = 0;
  size_t digits = 0;
  for (; digits < line.size() && hex_value(line[digits]) >= 0; ++digits) {
    if (size > (body_limit_ >> 4)) break;  // over the limit long before it overflows
    size = size << 4 | static_cast<uint64_t>(hex_value(line[digits]));
  }
  const std::string_view rest = text::trim(line.substr(digits), " \t");
  if (digits < line.size() && hex_value(line[digits]) >= 0) {
    return bad(fmt::format("a chunk over the body limit of {} bytes", body_limit_));
  }
  if (digits == 0 || (!rest.empty() && rest.front() != ';')) {
    return bad(fmt::format("a malformed chunk size line: '{}'", shown(line)));
  }
  if (size > body_limit_ - answer_.body.size()) {
    return bad(fmt::format("a chunked body over the limit of {} bytes", body_limit_));
  }
  body_left_ = size;
  state_ = size == 0 ? State::kTrailers : State::kChunkData;
  return true;
}

size_t HttpAnswerParser::take_body(std::string_view* in, uint64_t n) {
  const size_t take = static_cast<size_t>(std::min<uint64_t>(n, in->size()));
  if (answer_.body.size() + take > body_limit_) {
    bad(fmt::format("a body over the limit of {} bytes", body_limit_));
    return 0;
  }
  answer_.body.append(in->substr(0, take));
  in->remove_prefix(take);
  return take;
}

bool HttpAnswerParser::bad(std::string why) {
  state_ = State::kBad;
  error_ = std::move(why);
  return false;
}

}  // namespace idforge::coord
