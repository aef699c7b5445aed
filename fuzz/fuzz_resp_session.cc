// The RESP front end: a Redis client's bytes fed to the RESP session over a real
// IdService (fuzz_service.h), arriving at once or in pieces. Checked, against an
// independent RespParser over the same bytes:
// - the Session contract (fuzz_service.h: drive);
// - exactly one well-formed RESP2/RESP3 reply per command, none for empty lines, in
//   order, and nothing else in the output;
// - QUIT answers +OK and closes; a protocol error answers "-ERR Protocol error" and
//   closes; otherwise the connection stays open.
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_service.h"
#include "fuzz_support.h"
#include "server/resp/resp_parser.h"
#include "server/resp/resp_session.h"

namespace idforge::fuzz {
namespace {

using server::RespParser;

enum class Ends { kOpen, kQuit, kProtocolError };

struct Expected {
  size_t replies = 0;
  Ends ends = Ends::kOpen;
};

bool is_quit(std::string_view name) {
  if (name.size() != 4) return false;
  for (size_t i = 0; i < 4; ++i) {
    if ((name[i] | 0x20) != "quit"[i]) return false;
  }
  return true;
}

Expected expected_replies(std::string_view input) {
  RespParser parser;
  Expected e;
  size_t pos = 0;
  while (true) {
    const RespParser::Outcome r = parser.parse(input.substr(pos));
    if (r.kind == RespParser::Kind::kNeedMore) return e;
    if (r.kind == RespParser::Kind::kError) {
      ++e.replies;
      e.ends = Ends::kProtocolError;
      return e;
    }
    pos += r.consumed;
    if (r.kind == RespParser::Kind::kEmpty) continue;
    ++e.replies;
    if (is_quit(parser.args()[0])) {
      e.ends = Ends::kQuit;
      return e;
    }
  }
}

// Reads the CRLF-terminated line after a type byte; false if there is none or it holds
// a bare CR or LF.
bool read_line(std::string_view& in, std::string_view* line) {
  const size_t end = in.find("\r\n");
  if (end == std::string_view::npos) return false;
  *line = in.substr(0, end);
  in.remove_prefix(end + 2);
  return line->find_first_of("\r\n") == std::string_view::npos;
}

bool read_count(std::string_view& in, bool allow_null, int64_t* count) {
  std::string_view line;
  if (!read_line(in, &line)) return false;
  const std::optional<int64_t> n = to_int64(line);
  if (!n || *n < (allow_null ? -1 : 0)) return false;
  *count = *n;
  return true;
}

// One RESP2 or RESP3 value off the front of `in`; false if malformed. `first` gets the
// value when it is a simple string or error (for the QUIT and protocol error checks).
bool read_reply(std::string_view& in, int depth, std::string_view* first = nullptr) {
  if (in.empty() || depth > 16) return false;
  const char type = in.front();
  in.remove_prefix(1);
  std::string_view line;
  int64_t count = 0;
  switch (type) {
    case '+':
    case '-':
      if (!read_line(in, &line)) return false;
      if (first != nullptr) *first = line;
      return true;
    case ':':
      return read_line(in, &line) && to_int64(line).has_value();
    case '(':
    case ',':
      return read_line(in, &line) && !line.empty();
    case '#':
      return read_line(in, &line) && (line == "t" || line == "f");
    case '_':
      return read_line(in, &line) && line.empty();
    case '$':
    case '!':
    case '=':
      if (!read_count(in, type == '$', &count)) return false;
      if (count < 0) return true;  // RESP2 nil
      if (in.size() < static_cast<size_t>(count) + 2) return false;
      if (in.substr(static_cast<size_t>(count), 2) != "\r\n") return false;
      in.remove_prefix(static_cast<size_t>(count) + 2);
      return true;
    case '*':
    case '~':
    case '>':
    case '%':
    case '|':
      if (!read_count(in, type == '*', &count)) return false;
      if (type == '%' || type == '|') count *= 2;
      for (int64_t i = 0; i < count; ++i) {
        if (!read_reply(in, depth + 1)) return false;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)idforge::fuzz::fuzz_service();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  static const idforge::server::SessionFactory factory =
      idforge::server::make_resp_session_factory(fuzz_service());
  const std::string_view input = as_text(data, size);
  const Expected expected = expected_replies(input);
  std::unique_ptr<idforge::server::Session> session = factory();
  const Transcript t = drive(*session, input, chunk_for(input));

  std::string_view out = t.out;
  std::string_view last;
  for (size_t i = 0; i < expected.replies; ++i) {
    last = {};
    const std::string_view before = out;
    IDFORGE_FUZZ_CHECK(read_reply(out, 0, &last), "reply " + std::to_string(i) + " of " +
                                                      std::to_string(expected.replies) +
                                                      " is malformed: " + escaped(before));
  }
  IDFORGE_FUZZ_CHECK(out.empty(), "more output than replies: " + escaped(out));
  IDFORGE_FUZZ_CHECK(t.closed == (expected.ends != Ends::kOpen),
                     std::string("the connection ") + (t.closed ? "closed" : "stayed open"));
  if (expected.ends == Ends::kQuit) IDFORGE_FUZZ_CHECK(last == "OK", "QUIT did not answer +OK");
  if (expected.ends == Ends::kProtocolError) {
    IDFORGE_FUZZ_CHECK(last.substr(0, 19) == "ERR Protocol error:",
                       "a protocol error answered " + escaped(last));
  }
  return 0;
}
