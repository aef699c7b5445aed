// RespParser on arbitrary bytes: a Redis client's side of a connection. Checked:
// - a result never claims more bytes than it was given; kCommand and kEmpty consume at
//   least one byte, kError consumes nothing and says why; a command has 1..kRespMaxArgs
//   arguments, none longer than the limits;
// - the same bytes give the same commands whether they arrive at once or in pieces;
// - every command, written back as a RESP array and as a quoted inline command, parses
//   to the same arguments;
// - bytes that break the "same pending bytes again" rule are safe.
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "server/resp/resp_parser.h"

namespace idforge::fuzz {
namespace {

using server::RespParser;

struct Event {
  RespParser::Kind kind = RespParser::Kind::kNeedMore;
  size_t end = 0;  // offset in the connection where the command ends
  std::vector<std::string> args;
  std::string error;

  bool operator==(const Event&) const = default;
};

std::string as_array(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// Every argument in double quotes, anything but plain printable bytes as \xNN.
std::string as_inline(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    if (!out.empty()) out += ' ';
    out += '"';
    for (char c : a) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
        out += c;
      } else {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 15];
      }
    }
    out += '"';
  }
  return out + "\r\n";
}

void check_reparse(const std::string& text, const std::vector<std::string>& args,
                   const char* form) {
  RespParser parser;
  const RespParser::Outcome r = parser.parse(text);
  IDFORGE_FUZZ_CHECK(
      r.kind == RespParser::Kind::kCommand && r.consumed == text.size(),
      std::string("a command written back as ") + form + " does not parse whole: " + escaped(text));
  std::vector<std::string> again(parser.args().begin(), parser.args().end());
  IDFORGE_FUZZ_CHECK(again == args, std::string("a command written back as ") + form +
                                        " parses to other arguments: " + escaped(text));
}

std::vector<Event> run(std::string_view all, size_t chunk, bool garble) {
  RespParser parser;
  std::vector<Event> events;
  std::string buffer;
  size_t base = 0;
  size_t sent = 0;
  do {
    const size_t n = chunk == 0 ? all.size() : std::min(chunk, all.size() - sent);
    buffer.append(all.substr(sent, n));
    sent += n;
    if (garble && buffer.size() > 2) {
      const std::string other = buffer.substr(1);
      const RespParser::Outcome r = parser.parse(other);
      IDFORGE_FUZZ_CHECK(r.consumed <= other.size(), "consumed more than given");
      if (r.kind != RespParser::Kind::kNeedMore) parser.reset();
    }
    while (true) {
      const RespParser::Outcome r = parser.parse(buffer);
      IDFORGE_FUZZ_CHECK(r.consumed <= buffer.size(), "consumed " + std::to_string(r.consumed) +
                                                          " of " + std::to_string(buffer.size()));
      if (r.kind == RespParser::Kind::kNeedMore) break;
      if (r.kind == RespParser::Kind::kError) {
        IDFORGE_FUZZ_CHECK(r.consumed == 0 && !r.error.empty(), "kError consumed or no reason");
        events.push_back({r.kind, base, {}, std::string(r.error)});
        return events;
      }
      IDFORGE_FUZZ_CHECK(r.consumed > 0, "a command or empty line of no bytes");
      Event e{r.kind, base + r.consumed, {}, {}};
      if (r.kind == RespParser::Kind::kCommand) {
        IDFORGE_FUZZ_CHECK(!parser.args().empty(), "kCommand without arguments");
        IDFORGE_FUZZ_CHECK(parser.args().size() <= server::kRespMaxArgs, "too many arguments");
        for (std::string_view a : parser.args()) {
          IDFORGE_FUZZ_CHECK(a.size() <= server::kRespMaxBulkBytes, "argument above the limit");
          e.args.emplace_back(a);
        }
      } else {
        IDFORGE_FUZZ_CHECK(parser.args().empty(), "kEmpty with arguments");
      }
      events.push_back(std::move(e));
      buffer.erase(0, r.consumed);
      base += r.consumed;
    }
  } while (sent < all.size());
  return events;
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  const std::string_view all = as_text(data, size);
  const std::vector<Event> whole = run(all, 0, false);
  const size_t chunk = piece_size(hash64(all));
  const std::vector<Event> pieces = run(all, chunk, false);
  IDFORGE_FUZZ_CHECK(whole == pieces, "delivery in pieces of " + std::to_string(chunk) +
                                          " gave other commands than delivery at once");
  for (const Event& e : whole) {
    if (e.kind != idforge::server::RespParser::Kind::kCommand) continue;
    check_reparse(as_array(e.args), e.args, "an array");
    const std::string line = as_inline(e.args);
    if (line.size() <= idforge::server::kRespMaxInlineBytes) {
      check_reparse(line, e.args, "an inline command");
    }
  }
  (void)run(all, chunk, true);
  return 0;
}
