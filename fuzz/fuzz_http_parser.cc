// HttpRequestParser, percent-decoding, PathSegments, QueryParams and the JSON string
// writer on arbitrary bytes. The input is a connection's bytes. Checked:
// - a result never claims more bytes than it was given; kComplete consumes at least one
//   byte, kNeedMore drops only blank lines, kError consumes nothing and names a status;
// - every view of a complete request points into its own bytes, the body is the last
//   content_length bytes of them and within max_body, HTTP/1.1 had a Host;
// - the same bytes give the same requests whether they arrive at once or in pieces (the
//   parser's remembered progress changes nothing but speed);
// - garbage progress (bytes that break the "same bytes again" rule) is safe;
// - path segments and query parameters are the percent-decoded pieces of the text;
// - append_json_string always writes valid JSON, and valid UTF-8 comes back unchanged.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_support.h"
#include "server/http/http_parser.h"
#include "server/http/http_reply.h"

namespace idforge::fuzz {
namespace {

using server::HttpLimits;
using server::HttpMethod;
using server::HttpRequest;
using server::HttpRequestParser;
using server::ParseResult;

// Small limits reach the 413/414/431 paths with small inputs; the defaults are the
// server's.
constexpr HttpLimits kSmallLimits{64, 256, 8, 128};

// What a parse of a whole connection produced, for comparing deliveries.
struct Event {
  ParseResult::Kind kind = ParseResult::Kind::kNeedMore;
  size_t end = 0;  // kComplete: offset in the connection where the request ends
  std::string method, target, host, authorization, body;
  int version_minor = 0;
  bool keep_alive = false;

  bool operator==(const Event&) const = default;
};

bool inside(std::string_view part, std::string_view whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

void check_json_string(std::string_view text) {
  std::string out;
  server::append_json_string(out, text);
  const nlohmann::json parsed = nlohmann::json::parse(out, nullptr, false);
  IDFORGE_FUZZ_CHECK(!parsed.is_discarded() && parsed.is_string(),
                     "append_json_string wrote invalid JSON: " + escaped(out));
  if (valid_utf8(text)) {
    IDFORGE_FUZZ_CHECK(parsed.get<std::string>() == text,
                       "valid UTF-8 changed by append_json_string: " + escaped(text));
  }
}

// Each piece of `text` between separators, decoded as the parser promises.
void check_path(std::string_view path) {
  server::PathSegments segments;
  std::string whole;
  const bool ok = segments.parse(path);
  // A '%' not followed by two hex digits anywhere makes the whole path malformed.
  IDFORGE_FUZZ_CHECK(ok == server::percent_decode(path, false, &whole),
                     "PathSegments and percent_decode disagree on " + escaped(path));
  if (!ok) return;
  std::string_view rest = path;
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  size_t index = 0;
  while (true) {
    const size_t slash = rest.find('/');
    std::string decoded;
    IDFORGE_FUZZ_CHECK(server::percent_decode(rest.substr(0, slash), false, &decoded), path);
    if (index < server::PathSegments::kMaxSegments) {
      IDFORGE_FUZZ_CHECK(index < segments.size() && segments[index] == decoded,
                         "segment " + std::to_string(index) + " of " + escaped(path));
    }
    ++index;
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  IDFORGE_FUZZ_CHECK(segments.too_many() == (index > server::PathSegments::kMaxSegments),
                     "too_many() wrong for " + escaped(path));
  IDFORGE_FUZZ_CHECK(segments.size() == std::min(index, server::PathSegments::kMaxSegments),
                     "segment count of " + escaped(path));
}

void check_query(std::string_view query) {
  server::QueryParams params;
  if (!params.parse(query)) {
    std::string ignored;
    IDFORGE_FUZZ_CHECK(!server::percent_decode(query, true, &ignored),
                       "QueryParams refused a query without a bad escape: " + escaped(query));
    return;
  }
  std::vector<std::pair<std::string, std::string>> expected;
  std::string_view rest = query;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    std::string key, value;
    IDFORGE_FUZZ_CHECK(server::percent_decode(item.substr(0, eq), true, &key), query);
    if (eq != std::string_view::npos) {
      IDFORGE_FUZZ_CHECK(server::percent_decode(item.substr(eq + 1), true, &value), query);
    }
    expected.emplace_back(std::move(key), std::move(value));
  }
  IDFORGE_FUZZ_CHECK(params.items().size() == expected.size(), "item count of " + escaped(query));
  for (size_t i = 0; i < expected.size(); ++i) {
    IDFORGE_FUZZ_CHECK(params.items()[i].first == expected[i].first &&
                           params.items()[i].second == expected[i].second,
                       "item " + std::to_string(i) + " of " + escaped(query));
    const auto first = params.get(expected[i].first);
    IDFORGE_FUZZ_CHECK(first.has_value(), "get() misses a key of " + escaped(query));
    size_t count = 0;
    bool seen_first = false;
    for (const auto& [k, v] : expected) {
      if (k != expected[i].first) continue;
      if (!seen_first) IDFORGE_FUZZ_CHECK(*first == v, "get() is not the first value");
      seen_first = true;
      ++count;
    }
    IDFORGE_FUZZ_CHECK(params.count(expected[i].first) == count, "count() of a key");
  }
}

// The checks every complete request must pass; `in` is what the parser was given.
void check_request(const HttpRequest& r, const ParseResult& p, std::string_view in,
                   const HttpLimits& limits) {
  IDFORGE_FUZZ_CHECK(p.consumed > 0, "a complete request of no bytes");
  const std::string_view mine = in.substr(0, p.consumed);
  for (std::string_view part :
       {r.method_text, r.target, r.path, r.query, r.host, r.authorization, r.body}) {
    // "*" and the "/" of an empty absolute-form path may be the parser's own constants.
    if (part == "*" || part == "/") continue;
    IDFORGE_FUZZ_CHECK(inside(part, mine), "a request view points outside its bytes");
  }
  IDFORGE_FUZZ_CHECK(r.body.size() == r.content_length, "body size is not Content-Length");
  IDFORGE_FUZZ_CHECK(r.content_length <= limits.max_body, "body above max_body accepted");
  IDFORGE_FUZZ_CHECK(r.body.empty() || r.body.data() + r.body.size() == mine.data() + mine.size(),
                     "the body does not end the request");
  IDFORGE_FUZZ_CHECK(r.version_minor == 0 || r.version_minor == 1, "HTTP/1.x minor");
  IDFORGE_FUZZ_CHECK(r.target.size() <= limits.max_request_line, "request line above the limit");
  IDFORGE_FUZZ_CHECK((r.method == HttpMethod::kGet) == (r.method_text == "GET"), "method enum");
  IDFORGE_FUZZ_CHECK((r.method == HttpMethod::kHead) == (r.method_text == "HEAD"), "method enum");
}

// Parses a connection's bytes arriving in pieces of `chunk` (0: at once). With `garble`,
// the parser is also shown a shorter copy of its input between pieces, which breaks its
// "same bytes again" rule: then only safety is checked.
std::vector<Event> run(std::string_view all, const HttpLimits& limits, size_t chunk, bool garble) {
  HttpRequestParser parser(limits);
  std::vector<Event> events;
  std::string buffer;
  size_t base = 0;  // offset of buffer[0] in the connection
  size_t sent = 0;
  do {
    const size_t n = chunk == 0 ? all.size() : std::min(chunk, all.size() - sent);
    buffer.append(all.substr(sent, n));
    sent += n;
    if (garble && buffer.size() > 1) {
      const std::string shorter = buffer.substr(buffer.size() / 2);
      HttpRequest ignored;
      ParseResult p = parser.parse(shorter, &ignored);
      IDFORGE_FUZZ_CHECK(p.consumed <= shorter.size(), "consumed more than given");
      if (p.kind != ParseResult::Kind::kNeedMore) parser.reset();
    }
    while (true) {
      HttpRequest request;
      const ParseResult p = parser.parse(buffer, &request);
      IDFORGE_FUZZ_CHECK(p.consumed <= buffer.size(), "consumed " + std::to_string(p.consumed) +
                                                          " of " + std::to_string(buffer.size()));
      if (p.kind == ParseResult::Kind::kError) {
        IDFORGE_FUZZ_CHECK(p.consumed == 0 && !p.reason.empty(), "kError consumed or no reason");
        IDFORGE_FUZZ_CHECK(p.status == 400 || p.status == 413 || p.status == 414 ||
                               p.status == 431 || p.status == 501 || p.status == 505,
                           "unexpected error status " + std::to_string(p.status));
        Event error;
        error.kind = p.kind;
        events.push_back(std::move(error));
        return events;
      }
      if (p.kind == ParseResult::Kind::kNeedMore) {
        for (size_t i = 0; i < p.consumed; ++i) {
          IDFORGE_FUZZ_CHECK(buffer[i] == '\r' || buffer[i] == '\n',
                             "kNeedMore dropped bytes that are not blank lines");
        }
        buffer.erase(0, p.consumed);
        base += p.consumed;
        break;
      }
      check_request(request, p, buffer, limits);
      if (!garble) {
        check_path(request.path);
        check_query(request.query);
      }
      events.push_back(Event{p.kind, base + p.consumed, std::string(request.method_text),
                             std::string(request.target), std::string(request.host),
                             std::string(request.authorization), std::string(request.body),
                             request.version_minor, request.keep_alive});
      buffer.erase(0, p.consumed);
      base += p.consumed;
    }
  } while (sent < all.size());
  return events;
}

}  // namespace
}  // namespace idforge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace idforge::fuzz;
  const std::string_view all = as_text(data, size);
  // Small limits for some inputs, the server's for the others; decided by the bytes so a
  // crash replays.
  const uint64_t h = hash64(all);
  const HttpLimits limits = (h & 1) != 0 ? kSmallLimits : HttpLimits{};
  const std::vector<Event> whole = run(all, limits, 0, false);
  const size_t chunk = piece_size(h >> 1);
  const std::vector<Event> pieces = run(all, limits, chunk, false);
  // Errors may be found at a different byte (a limit seen before a malformed line), so
  // only their position among the requests must agree.
  IDFORGE_FUZZ_CHECK(whole == pieces, "delivery in pieces of " + std::to_string(chunk) +
                                          " gave other requests than delivery at once: " +
                                          std::to_string(whole.size()) + " vs " +
                                          std::to_string(pieces.size()) + " events");
  (void)run(all, limits, chunk, true);
  check_json_string(all);
  return 0;
}
