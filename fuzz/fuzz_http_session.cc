// The whole HTTP request path: a connection's bytes fed to the HTTP session over a real
// IdService (fuzz_service.h), arriving at once or in pieces. Checked, against an
// independent HttpRequestParser over the same bytes:
// - the Session contract (fuzz_service.h: drive);
// - exactly one well-framed answer per complete request, in order: status line,
//   "Name: value" headers, one Content-Length, that many body bytes (none for HEAD);
// - a protocol error is answered with the parser's status and closes the connection; a
//   request cut off by the end of input gets 408; `Connection: close` closes, and the
//   last answer of a closed connection says `Connection: close`;
// - every JSON body parses, and an error body is {"error":{"code":..,"message":..}}.
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_service.h"
#include "fuzz_support.h"
#include "server/http/http_parser.h"
#include "server/http/http_session.h"

namespace idforge::fuzz {
namespace {

using server::HttpRequest;
using server::HttpRequestParser;
using server::ParseResult;

// Limits small enough for the fuzzer to reach them (no tokens, no connection rate).
const server::HttpOptions kOptions = [] {
  server::HttpOptions options;
  options.max_request_line = 256;
  options.max_header_bytes = 1024;
  options.max_headers = 16;
  options.max_body = 512;
  return options;
}();

// What the session must answer, from the parser's reading of the input.
struct Expected {
  bool head = false;  // HEAD: no body
  int status = 0;     // 0: any (routes decide)
  bool closes = false;
};

std::vector<Expected> expected_answers(std::string_view input) {
  HttpRequestParser parser(server::HttpLimits{kOptions.max_request_line, kOptions.max_header_bytes,
                                              kOptions.max_headers, kOptions.max_body});
  std::vector<Expected> answers;
  size_t pos = 0;
  while (true) {
    HttpRequest request;
    const ParseResult p = parser.parse(input.substr(pos), &request);
    if (p.kind == ParseResult::Kind::kError) {
      answers.push_back({false, p.status, true});
      return answers;
    }
    pos += p.consumed;
    if (p.kind == ParseResult::Kind::kNeedMore) {
      // A request that started and never finished times out.
      if (pos < input.size()) answers.push_back({false, 408, true});
      return answers;
    }
    answers.push_back({request.method == server::HttpMethod::kHead, 0, !request.keep_alive});
    if (!request.keep_alive) return answers;
  }
}

struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads one answer off the front of `out`; the reason of a framing error otherwise.
std::string read_answer(std::string_view& out, bool head, Answer* answer) {
  const size_t head_end = out.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return "no end of head";
  std::string_view lines = out.substr(0, head_end + 2);
  if (lines.substr(0, 9) != "HTTP/1.1 " || lines.size() < 14 || lines[12] != ' ') {
    return "bad status line";
  }
  for (size_t i = 9; i < 12; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(lines[i]))) return "bad status code";
  }
  answer->status = (lines[9] - '0') * 100 + (lines[10] - '0') * 10 + (lines[11] - '0');
  size_t pos = lines.find("\r\n") + 2;
  while (pos < lines.size()) {
    const size_t end = lines.find("\r\n", pos);
    const std::string_view line = lines.substr(pos, end - pos);
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos || colon == 0) return "bad header line";
    if (line.find_first_of("\r\n") != std::string_view::npos) return "CR or LF in a header";
    const std::string name = lower(line.substr(0, colon));
    if (!answer->headers.emplace(name, std::string(line.substr(colon + 2))).second) {
      return "repeated header " + name;
    }
    pos = end + 2;
  }
  auto length = answer->headers.find("content-length");
  if (length == answer->headers.end()) return "no Content-Length";
  const std::optional<uint64_t> size = to_uint64(length->second);
  if (!size) return "bad Content-Length";
  out.remove_prefix(head_end + 4);
  if (!head) {
    if (out.size() < *size) return "body shorter than Content-Length";
    answer->body = std::string(out.substr(0, *size));
    out.remove_prefix(*size);
  }
  return {};
}

bool is_protocol_error(int status) {
  return status == 400 || status == 413 || status == 414 || status == 431 || status == 501 ||
         status == 505;
}

void check_body(const Answer& a) {
  auto type = a.headers.find("content-type");
  if (type == a.headers.end() || type->second.rfind("application/json", 0) != 0) return;
  if (a.body.empty()) return;  // HEAD
  const nlohmann::json body = nlohmann::json::parse(a.body, nullptr, false);
  IDFORGE_FUZZ_CHECK(!body.is_discarded(), "invalid JSON body: " + escaped(a.body));
  if (a.status >= 400) {
    IDFORGE_FUZZ_CHECK(body.is_object() && body.contains("error") && body["error"].is_object() &&
                           body["error"].contains("code") && body["error"]["code"].is_string() &&
                           body["error"].contains("message") &&
                           body["error"]["message"].is_string(),
                       "error body without code and message: " + escaped(a.body));
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
      idforge::server::make_http_session_factory(fuzz_service(), kOptions);
  const std::string_view input = as_text(data, size);
  const std::vector<Expected> expected = expected_answers(input);
  std::unique_ptr<idforge::server::Session> session = factory();
  const size_t chunk = chunk_for(input);
  const Transcript t = drive(*session, input, chunk);

  std::string_view out = t.out;
  for (size_t i = 0; i < expected.size(); ++i) {
    Answer answer;
    const std::string why = read_answer(out, expected[i].head, &answer);
    IDFORGE_FUZZ_CHECK(why.empty(), "answer " + std::to_string(i) + " of " +
                                        std::to_string(expected.size()) + ": " + why +
                                        "; output: " + escaped(t.out));
    IDFORGE_FUZZ_CHECK(answer.status >= 200 && answer.status <= 599,
                       "status " + std::to_string(answer.status));
    if (expected[i].status == 408 || (expected[i].status != 0 && chunk == 0)) {
      IDFORGE_FUZZ_CHECK(answer.status == expected[i].status,
                         "answered " + std::to_string(answer.status) + " where the parser says " +
                             std::to_string(expected[i].status));
    } else if (expected[i].status != 0) {
      // Arriving in pieces, a malformed request line can be refused (400) before the
      // header limit it would break (431) is seen: any protocol error status will do.
      IDFORGE_FUZZ_CHECK(is_protocol_error(answer.status),
                         "answered " + std::to_string(answer.status) + " to a protocol error");
    }
    if (expected[i].closes) {
      auto connection = answer.headers.find("connection");
      IDFORGE_FUZZ_CHECK(connection != answer.headers.end() && lower(connection->second) == "close",
                         "the last answer does not say Connection: close");
    }
    check_body(answer);
  }
  IDFORGE_FUZZ_CHECK(out.empty(), "more output than answers: " + escaped(out));
  const bool closes = !expected.empty() && expected.back().closes && expected.back().status != 408;
  IDFORGE_FUZZ_CHECK(t.closed == closes, std::string("the connection ") +
                                             (t.closed ? "closed" : "stayed open") + " after " +
                                             std::to_string(expected.size()) + " answers");
  return 0;
}
