// The HTTP request parser alone: whole requests, any split of the bytes, pipelining,
// every limit and error status, percent-decoding and query strings, and junk.
#include "server/http/http_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace idforge::server {
namespace {

using Kind = ParseResult::Kind;

// What a runtime would do with a connection's bytes: parse, drop what was consumed,
// repeat. Copies each request's views into owned strings so the buffer may change.
struct Parsed {
  std::string method;
  std::string path;
  std::string query;
  std::string host;
  std::string authorization;
  std::string body;
  int version_minor = -1;
  bool keep_alive = false;
};

Parsed own(const HttpRequest& r) {
  return {
      std::string(r.method_text),   std::string(r.path), std::string(r.query), std::string(r.host),
      std::string(r.authorization), std::string(r.body), r.version_minor,      r.keep_alive};
}

struct Fed {
  std::vector<Parsed> requests;
  int error = 0;        // status of the error that ended the run, if any
  std::string pending;  // bytes left unconsumed
};

// Feeds `bytes` in pieces of `chunk` bytes (0: all at once).
Fed feed(std::string_view bytes, size_t chunk = 0, HttpLimits limits = {}) {
  HttpRequestParser parser(limits);
  Fed run;
  std::string buffer;
  size_t sent = 0;
  while (sent < bytes.size() || !buffer.empty()) {
    if (sent < bytes.size()) {
      size_t n = chunk == 0 ? bytes.size() : std::min(chunk, bytes.size() - sent);
      buffer.append(bytes.substr(sent, n));
      sent += n;
    }
    while (true) {
      HttpRequest request;
      ParseResult r = parser.parse(buffer, &request);
      EXPECT_LE(r.consumed, buffer.size());
      if (r.kind == Kind::kError) {
        EXPECT_EQ(r.consumed, 0u);
        EXPECT_FALSE(r.reason.empty());
        run.error = r.status;
        return run;
      }
      if (r.kind == Kind::kComplete) run.requests.push_back(own(request));
      buffer.erase(0, r.consumed);
      if (r.kind == Kind::kNeedMore) break;
    }
    if (sent == bytes.size()) break;
  }
  run.pending = buffer;
  return run;
}

int error_of(std::string_view bytes, HttpLimits limits = {}) {
  return feed(bytes, 0, limits).error;
}

constexpr std::string_view kGet = "GET /v1/snowflake?count=3 HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(HttpParserTest, ParsesAWholeRequest) {
  HttpRequestParser parser;
  HttpRequest r;
  std::string in =
      "GET /v1/snowflake?count=3&format=text HTTP/1.1\r\nHost: example.com\r\n"
      "User-Agent: t\r\nAuthorization:  Bearer abc  \r\n\r\n";
  ParseResult result = parser.parse(in, &r);
  ASSERT_EQ(result.kind, Kind::kComplete);
  EXPECT_EQ(result.consumed, in.size());
  EXPECT_EQ(r.method, HttpMethod::kGet);
  EXPECT_EQ(r.method_text, "GET");
  EXPECT_EQ(r.target, "/v1/snowflake?count=3&format=text");
  EXPECT_EQ(r.path, "/v1/snowflake");
  EXPECT_EQ(r.query, "count=3&format=text");
  EXPECT_EQ(r.version_minor, 1);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(r.host, "example.com");
  EXPECT_EQ(r.authorization, "Bearer abc");
  EXPECT_EQ(r.content_length, 0u);
  EXPECT_TRUE(r.body.empty());
}

TEST(HttpParserTest, ParsesABodyByContentLength) {
  std::string in =
      "POST /v1/admin/tags HTTP/1.1\r\nHost: x\r\ncontent-length: 11\r\n\r\n{\"tag\":\"a\"}";
  Fed run = feed(in + "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_EQ(run.requests[0].method, "POST");
  EXPECT_EQ(run.requests[0].body, "{\"tag\":\"a\"}");
  EXPECT_EQ(run.requests[1].path, "/");
  EXPECT_TRUE(run.pending.empty());
}

TEST(HttpParserTest, EveryPrefixNeedsMoreAndTheWholeCompletes) {
  std::string in = "PUT /v1/admin/tags/a/step HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd";
  for (size_t n = 0; n < in.size(); ++n) {
    HttpRequestParser parser;
    HttpRequest r;
    ParseResult result = parser.parse(std::string_view(in).substr(0, n), &r);
    EXPECT_EQ(result.kind, Kind::kNeedMore) << n;
    EXPECT_EQ(result.consumed, 0u) << n;
  }
  for (size_t chunk : {1, 2, 3, 7, 1000}) {
    Fed run = feed(in, chunk);
    ASSERT_EQ(run.requests.size(), 1u) << chunk;
    EXPECT_EQ(run.requests[0].body, "abcd");
    EXPECT_EQ(run.requests[0].path, "/v1/admin/tags/a/step");
    EXPECT_EQ(run.error, 0);
  }
}

TEST(HttpParserTest, PipelinedRequestsComeOutInOrderWhateverTheSplit) {
  std::string in;
  for (int i = 0; i < 3; ++i) {
    in += "GET /r" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
    if (i == 1) in += "\r\n\r\n\n";  // blank lines between requests are tolerated
  }
  for (size_t chunk : {0, 1, 5, 13}) {
    Fed run = feed(in, chunk);
    ASSERT_EQ(run.requests.size(), 3u) << chunk;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run.requests[i].path, "/r" + std::to_string(i));
    EXPECT_TRUE(run.pending.empty());
  }
}

TEST(HttpParserTest, LeadingBlankLinesAreConsumedEvenBeforeARequestArrives) {
  HttpRequestParser parser;
  HttpRequest r;
  ParseResult result = parser.parse("\r\n\n\r\n", &r);
  EXPECT_EQ(result.kind, Kind::kNeedMore);
  EXPECT_EQ(result.consumed, 5u);
  result = parser.parse("\r", &r);  // may be the start of a CRLF
  EXPECT_EQ(result.kind, Kind::kNeedMore);
  EXPECT_EQ(result.consumed, 0u);
  std::string in = "\r\n" + std::string(kGet);
  result = parser.parse(in, &r);
  ASSERT_EQ(result.kind, Kind::kComplete);
  EXPECT_EQ(result.consumed, in.size());
}

TEST(HttpParserTest, KeepAliveFollowsVersionAndConnection) {
  auto keep = [](std::string_view version, std::string_view connection) {
    std::string in = "GET / " + std::string(version) + "\r\nHost: x\r\n";
    if (!connection.empty()) in += "Connection: " + std::string(connection) + "\r\n";
    Fed run = feed(in + "\r\n");
    EXPECT_EQ(run.requests.size(), 1u);
    return !run.requests.empty() && run.requests[0].keep_alive;
  };
  EXPECT_TRUE(keep("HTTP/1.1", ""));
  EXPECT_FALSE(keep("HTTP/1.1", "close"));
  EXPECT_FALSE(keep("HTTP/1.1", "Upgrade, CLOSE"));
  EXPECT_TRUE(keep("HTTP/1.1", "keep-alive"));
  EXPECT_FALSE(keep("HTTP/1.0", ""));
  EXPECT_TRUE(keep("HTTP/1.0", "Keep-Alive"));
  EXPECT_FALSE(keep("HTTP/1.0", "keep-alive, close"));
  EXPECT_EQ(feed("GET / HTTP/1.0\r\n\r\n").requests.at(0).version_minor, 0);  // no Host needed
}

TEST(HttpParserTest, TargetForms) {
  Fed run = feed(
      "GET http://example.com:8080/v1/ulid?count=2 HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET HTTPS://example.com HTTP/1.1\r\nHost: x\r\n\r\n"
      "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /a?b?c HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(run.requests.size(), 4u);
  EXPECT_EQ(run.requests[0].path, "/v1/ulid");
  EXPECT_EQ(run.requests[0].query, "count=2");
  EXPECT_EQ(run.requests[1].path, "/");
  EXPECT_EQ(run.requests[2].path, "*");
  EXPECT_EQ(run.requests[3].path, "/a");
  EXPECT_EQ(run.requests[3].query, "b?c");
  EXPECT_EQ(error_of("GET v1/ulid HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(error_of("CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
}

TEST(HttpParserTest, MethodsAreRecognisedCaseSensitively) {
  auto method = [](std::string_view text) {
    HttpRequestParser parser;
    HttpRequest r;
    std::string in = std::string(text) + " / HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(parser.parse(in, &r).kind, Kind::kComplete);
    return r.method;
  };
  EXPECT_EQ(method("GET"), HttpMethod::kGet);
  EXPECT_EQ(method("HEAD"), HttpMethod::kHead);
  EXPECT_EQ(method("POST"), HttpMethod::kPost);
  EXPECT_EQ(method("PUT"), HttpMethod::kPut);
  EXPECT_EQ(method("DELETE"), HttpMethod::kDelete);
  EXPECT_EQ(method("get"), HttpMethod::kOther);
  EXPECT_EQ(method("BREW"), HttpMethod::kOther);
}

TEST(HttpParserTest, RequestLineLimitIs414) {
  std::string at_limit = "GET /" + std::string(8192 - 14, 'a') + " HTTP/1.1";
  ASSERT_EQ(at_limit.size(), 8192u);
  EXPECT_EQ(feed(at_limit + "\r\nHost: x\r\n\r\n").requests.size(), 1u);
  std::string over = "GET /" + std::string(8193 - 14, 'a') + " HTTP/1.1";
  EXPECT_EQ(error_of(over + "\r\nHost: x\r\n\r\n"), 414);
  // Known before the line ends: no need to buffer more.
  EXPECT_EQ(error_of("GET /" + std::string(9000, 'a')), 414);
  EXPECT_EQ(feed("GET /" + std::string(8000, 'a')).error, 0);
  EXPECT_EQ(error_of("GET /" + std::string(20, 'a') + " HTTP/1.1\r\n", {.max_request_line = 16}),
            414);
}

TEST(HttpParserTest, HeaderCountAndSizeLimitsAre431) {
  auto with_headers = [](size_t n, size_t value_size) {
    std::string in = "GET / HTTP/1.1\r\nHost: x\r\n";
    for (size_t i = 1; i < n; ++i)
      in += "X-" + std::to_string(i) + ": " + std::string(value_size, 'v') + "\r\n";
    return in + "\r\n";
  };
  EXPECT_EQ(feed(with_headers(100, 1)).requests.size(), 1u);
  EXPECT_EQ(error_of(with_headers(101, 1)), 431);
  EXPECT_EQ(feed(with_headers(30, 1000)).requests.size(), 1u);
  EXPECT_EQ(error_of(with_headers(40, 1000)), 431);
  // An endless header line is refused once it passes the limit, not at its end.
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nX: " + std::string(40000, 'v')), 431);
  EXPECT_EQ(feed("GET / HTTP/1.1\r\nX: " + std::string(30000, 'v')).error, 0);
  EXPECT_EQ(error_of(with_headers(5, 1), {.max_headers = 4}), 431);
}

TEST(HttpParserTest, BodyOverTheLimitIs413BeforeItArrives) {
  std::string head = "POST /v1/admin/tags HTTP/1.1\r\nHost: x\r\nContent-Length: ";
  EXPECT_EQ(error_of(head + "65537\r\n\r\n"), 413);
  EXPECT_EQ(error_of(head + "99999999999999999999999999\r\n\r\n"), 413);
  Fed run = feed(head + "65536\r\n\r\n" + std::string(65536, 'b'), 4096);
  ASSERT_EQ(run.requests.size(), 1u);
  EXPECT_EQ(run.requests[0].body.size(), 65536u);
  // Waiting for a body is not an error.
  Fed waiting = feed(head + "10\r\n\r\nabc");
  EXPECT_EQ(waiting.error, 0);
  EXPECT_TRUE(waiting.requests.empty());
}

TEST(HttpParserTest, VersionsOtherThan10And11Are505) {
  EXPECT_EQ(error_of("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), 505);
  EXPECT_EQ(error_of("GET / HTTP/1.2\r\nHost: x\r\n\r\n"), 505);
  EXPECT_EQ(error_of("GET / HTTP/0.9\r\n\r\n"), 505);
  EXPECT_EQ(error_of("GET / HTTP/10.01\r\n\r\n"), 505);
  // Not versions at all.
  EXPECT_EQ(error_of("GET / http/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1x\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /\r\n\r\n"), 400);
}

TEST(HttpParserTest, MalformedRequestLinesAre400) {
  for (std::string_view line :
       {"GET  / HTTP/1.1", "GET / HTTP/1.1 ", " GET / HTTP/1.1", "GET", "GET /", "G(T / HTTP/1.1",
        "GET /a\x01 HTTP/1.1", "GET /\xff HTTP/1.1", "GET /a b HTTP/1.1", "GET /\rx HTTP/1.1"}) {
    EXPECT_EQ(error_of(std::string(line) + "\r\nHost: x\r\n\r\n"), 400) << line;
  }
  // Refused as soon as the line is complete, without waiting for the headers.
  EXPECT_EQ(error_of("GET  / HTTP/1.1\r\n"), 400);
  // A first byte that cannot start a method (here a TLS ClientHello) is refused at once.
  EXPECT_EQ(error_of(std::string("\x16\x03\x01\x02\x00", 5)), 400);
}

TEST(HttpParserTest, MalformedHeadersAre400) {
  for (std::string_view header :
       {"NoColon", "Space : x", ": empty-name", " folded: x", "\tfolded: x",
        "X: a\x01"
        "b",
        "X: a\x7f", "X: a\rb", "Bad{Name}: x", "Content-Length: abc", "Content-Length: -1",
        "Content-Length: 1, 1", "Content-Length:", "Host: second"}) {
    EXPECT_EQ(error_of("GET / HTTP/1.1\r\nHost: x\r\n" + std::string(header) + "\r\n\r\n"), 400)
        << header;
  }
  static constexpr char kNul[] = "GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n";
  EXPECT_EQ(error_of(std::string(kNul, sizeof(kNul) - 1)), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\n\r\n"), 400);  // HTTP/1.1 without Host
  EXPECT_EQ(
      error_of("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
      400);
  // The same length twice is harmless; obs-text in values is allowed.
  Fed run = feed(
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\ncontent-length: 2\r\n"
      "X-Text: caf\xc3\xa9\r\n\r\nab");
  ASSERT_EQ(run.requests.size(), 1u);
  EXPECT_EQ(run.requests[0].body, "ab");
}

TEST(HttpParserTest, TransferEncodingIs501) {
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            501);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: gzip\r\n\r\n"), 501);
}

TEST(HttpParserTest, BareLfLineEndsAreAcceptedButALoneCrIsNot) {
  Fed run = feed("GET /lf HTTP/1.1\nHost: x\n\nGET /crlf HTTP/1.1\r\nHost: y\r\n\r\n");
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_EQ(run.requests[0].path, "/lf");
  EXPECT_EQ(run.requests[1].host, "y");
  EXPECT_EQ(error_of("GET / HTTP/1.1\rHost: x\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nHost: x\r\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nHost: x\r\n\r\r\n\r\n"), 400);
  EXPECT_EQ(error_of("\rGET / HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
}

TEST(HttpParserTest, AHeadArrivingAByteAtATimeIsParsedInLinearTime) {
  // 100 headers of 300 bytes and a 20 KB body: rescanning the head on every byte would
  // read it some 10^9 times over.
  std::string in = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 98; ++i)
    in += "X-" + std::to_string(i) + ": " + std::string(300, 'v') + "\r\n";
  in += "Content-Length: 20000\r\n\r\n" + std::string(20000, 'b');
  Fed run = feed(in, 1);
  ASSERT_EQ(run.requests.size(), 1u);
  EXPECT_EQ(run.requests[0].body.size(), 20000u);
}

TEST(HttpParserTest, GarbageNeverCrashesAndNeverBuffersPastTheLimits) {
  const HttpLimits limits;
  const size_t most = limits.max_request_line + limits.max_header_bytes + limits.max_body + 4096;
  std::mt19937 rng(12345);
  static constexpr char kAlphabet[] = "GET /?=&%+HTP1.0\r\n :Hostcnl-Lgh0123456789\x00\xff";
  const std::string alphabet(kAlphabet, sizeof(kAlphabet) - 1);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes;
    size_t size = rng() % 400;
    bool printable = round % 2 == 0;
    for (size_t i = 0; i < size; ++i) {
      bytes.push_back(printable ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng()));
    }
    if (round % 3 == 0) bytes = std::string(kGet) + bytes;
    Fed run = feed(bytes, 1 + rng() % 17);
    EXPECT_LE(run.pending.size(), most);
    if (round % 3 == 0) {
      EXPECT_GE(run.requests.size(), 1u);
    }
  }
  // Endless bytes without a line end stop at the request line limit.
  Fed endless = feed(std::string(100000, 'A'), 1000);
  EXPECT_EQ(endless.error, 414);
}

TEST(HttpParserTest, ChangedBytesUnderTheParserAreSafe) {
  HttpRequestParser parser;
  HttpRequest r;
  std::string long_head = "GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(100, 'v');
  EXPECT_EQ(parser.parse(long_head, &r).kind, Kind::kNeedMore);
  // A shorter, different input than promised: progress is dropped, not trusted.
  ParseResult result = parser.parse(kGet, &r);
  ASSERT_EQ(result.kind, Kind::kComplete);
  EXPECT_EQ(r.query, "count=3");
  EXPECT_EQ(parser.parse("", &r).kind, Kind::kNeedMore);
}

TEST(PercentDecodeTest, DecodesEscapesAndOptionallyPlus) {
  std::string out;
  EXPECT_TRUE(percent_decode("a%41%62%2fc+d", false, &out));
  EXPECT_EQ(out, "aAb/c+d");
  out.clear();
  EXPECT_TRUE(percent_decode("a+b%2B", true, &out));
  EXPECT_EQ(out, "a b+");
  out.clear();
  EXPECT_TRUE(percent_decode("%00%ff", false, &out));
  EXPECT_EQ(out, std::string("\0\xff", 2));
  for (std::string_view bad : {"%", "%4", "%zz", "a%g1", "%%41", "abc%"}) {
    out.clear();
    EXPECT_FALSE(percent_decode(bad, false, &out)) << bad;
  }
}

TEST(PathSegmentsTest, SplitsAndDecodesEachSegment) {
  PathSegments segments;
  ASSERT_TRUE(segments.parse("/v1/segment/or%64er"));
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0], "v1");
  EXPECT_EQ(segments[1], "segment");
  EXPECT_EQ(segments[2], "order");
  ASSERT_TRUE(segments.parse("/a%2Fb/c+d/"));
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_EQ(segments[0], "a/b");
  EXPECT_EQ(segments[1], "c+d");
  EXPECT_EQ(segments[2], "");
  ASSERT_TRUE(segments.parse("/"));
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0], "");
  ASSERT_TRUE(segments.parse("/1/2/3/4/5/6/7/8"));
  EXPECT_FALSE(segments.too_many());
  ASSERT_TRUE(segments.parse("/1/2/3/4/5/6/7/8/9"));
  EXPECT_TRUE(segments.too_many());
  EXPECT_FALSE(segments.parse("/v1/%zz"));
  // Views stay valid however many segments need decoding.
  ASSERT_TRUE(segments.parse("/%61%61/%62%62/%63%63/%64%64/%65%65"));
  EXPECT_EQ(segments[0], "aa");
  EXPECT_EQ(segments[4], "ee");
}

TEST(QueryParamsTest, ParsesEdgeCases) {
  QueryParams q;
  ASSERT_TRUE(q.parse("count=5&format=text&empty=&flag&&a=b=c&sp=a+b%20c&count=7&%63ount=8"));
  ASSERT_EQ(q.items().size(), 8u);
  EXPECT_EQ(q.get("count"), "5");   // the first of repeated keys
  EXPECT_EQ(q.count("count"), 3u);  // "%63ount" decodes to "count" too
  EXPECT_EQ(q.get("format"), "text");
  EXPECT_EQ(q.get("empty"), "");
  EXPECT_EQ(q.get("flag"), "");
  EXPECT_EQ(q.get("a"), "b=c");
  EXPECT_EQ(q.get("sp"), "a b c");
  EXPECT_FALSE(q.get("missing").has_value());
  EXPECT_EQ(q.count("missing"), 0u);
  ASSERT_TRUE(q.parse(""));
  EXPECT_TRUE(q.items().empty());
  ASSERT_TRUE(q.parse("&&&"));
  EXPECT_TRUE(q.items().empty());
  EXPECT_FALSE(q.parse("count=%"));
  EXPECT_FALSE(q.parse("%x=1"));
  // Many decoded values: the views must not dangle.
  std::string many;
  for (int i = 0; i < 200; ++i) many += "k" + std::to_string(i) + "=%41%42&";
  ASSERT_TRUE(q.parse(many));
  ASSERT_EQ(q.items().size(), 200u);
  for (const auto& [key, value] : q.items()) EXPECT_EQ(value, "AB") << key;
}

}  // namespace
}  // namespace idforge::server
